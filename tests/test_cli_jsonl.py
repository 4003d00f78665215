"""`memory-mcp import` and `export` as a user runs them: real processes, the real model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp.embeddings import MODEL_NAME
from memory_mcp.passages import vector_model
from memory_mcp.settings import Settings
from tests.conftest import opened

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))

LINES = [
    {"key": "deploy", "value": "Deploys use blue-green switching", "tags": ["ops"]},
    {
        "key": "team-rule",
        "value": "Two reviewers per change",
        "scope": "swarm",
        "agent_id": "lead",
        "updated_at": "2026-01-02T03:04:05Z",
    },
    {
        "key": "scratch",
        "value": "Trying the flaky test again",
        "scope": "session",
        "session_id": "sess-9",
        "source": "task_completion",
        "pinned": True,
    },
]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        input=stdin,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )


async def test_import_then_export_round_trips_and_is_searchable(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    db = str(tmp_path / "a.db")
    imported = run("import", str(source), "--db", db, "--agent-id", "me")
    assert imported.returncode == 0, imported.stderr
    assert "imported 3 memories" in imported.stderr
    assert imported.stdout == ""

    async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
        records = {r.key: r async for r in app.service.store.iter_records()}
        # Finished when it exits: every text already has its vector from the real model.
        assert await app.service.store.vectors.missing(vector_model(MODEL_NAME), 10) == []
    assert records["deploy"].agent_id == "me" and records["deploy"].tags == ["ops"]
    assert records["team-rule"].agent_id == "lead"
    assert records["team-rule"].updated_at == 1767323045.0, "the exported time is kept"
    assert records["scratch"].session_id == "sess-9" and records["scratch"].pinned

    exported = run("export", "--db", db, "--all")
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(x["key"], x["value"], x["agent_id"]) for x in lines] == [
        ("deploy", "Deploys use blue-green switching", "me"),
        ("team-rule", "Two reviewers per change", "lead"),
        ("scratch", "Trying the flaky test again", "me"),
    ]
    again = tmp_path / "again.jsonl"
    again.write_text(exported.stdout)
    copy = str(tmp_path / "b.db")
    assert run("import", str(again), "--db", copy).returncode == 0
    assert run("export", "--db", copy, "--all").stdout == exported.stdout


async def test_a_malformed_file_imports_nothing_and_names_the_line(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps(LINES[0]) + "\n{not json\n" + json.dumps({"key": "k"}) + "\n")
    db = str(tmp_path / "a.db")
    result = run("import", str(source), "--db", db)
    assert result.returncode == 1
    assert "line 2" in result.stderr and "line 3" in result.stderr and "value" in result.stderr
    assert "nothing imported" in result.stderr
    async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
        assert await app.service.store.count() == 0


def test_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    result = run("import", str(tmp_path / "nope.jsonl"), "--db", str(tmp_path / "a.db"))
    assert result.returncode != 0
    assert "nope.jsonl" in result.stderr and "Traceback" not in result.stderr
