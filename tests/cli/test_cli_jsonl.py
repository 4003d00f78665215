"""`memory-mcp import` and `export`, called in-process with the FAKE embedder (these tests
are about what is stored and written, not about meaning; tests/cli/test_cli.py runs both as
real processes with the real model)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli.main import main
from memory_mcp.semantic.passages import vector_model
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened

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


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    for name in list(os.environ):
        if name.startswith("MEMORY_MCP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> object:
    def run(*args: str) -> Ran:
        code = main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def test_import_then_export_round_trips_and_is_searchable(tmp_path: Path, run: Any) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    db = str(tmp_path / "a.db")
    imported = run("import", str(source), "--db", db, "--agent-id", "me", "--keep-owners")
    assert imported.returncode == 0, imported.stderr
    assert "imported 3 memories" in imported.stderr
    assert "owners lead 1, me 2" in imported.stderr
    assert imported.stdout == ""

    async def read() -> tuple[dict[str, Any], list[tuple[str, str]]]:
        async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
            records = {r.key: r async for r in app.service.store.iter_records()}
            fake = vector_model(FakeEmbedder.model_name)
            return records, await app.service.store.vectors.missing(fake, 10)

    records, unembedded = anyio.run(read)
    assert unembedded == [], "finished when it returns: every text has its vector"
    assert records["deploy"].agent_id == "me"
    assert records["deploy"].tags == ["ops"]
    assert records["team-rule"].agent_id == "lead"
    assert records["team-rule"].updated_at == 1767323045.0, "the exported time is kept"
    assert records["scratch"].session_id == "sess-9"
    assert records["scratch"].pinned

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
    assert run("import", str(again), "--db", copy, "--keep-owners").returncode == 0
    assert run("export", "--db", copy, "--all").stdout == exported.stdout


def test_an_import_is_the_importing_agents_or_keeps_owners_when_asked(
    tmp_path: Path, run: Any
) -> None:
    """Issue 35: `import --agent-id w9` printed "imported 2" and w9 could see one of them
    (the other stayed agent w1's private memory). Now another agent's line is a bad line,
    named with its owner, unless --keep-owners; the summary names the owners."""
    source = tmp_path / "mixed.jsonl"
    lines = [
        {"key": "mine", "value": "the deploy checklist", "agent_id": "w9"},
        {"key": "theirs", "value": "w1's private scratch", "agent_id": "w1"},
        {"key": "unowned", "value": "a hand-written line"},
    ]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))

    async def owners(db: str) -> dict[str, str]:
        async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
            return {r.key: r.agent_id async for r in app.service.store.iter_records()}

    db = str(tmp_path / "a.db")
    refused = run("import", str(source), "--db", db, "--agent-id", "w9")
    assert refused.returncode == 1
    assert "line 2: a memory of agent 'w1'" in refused.stderr and "--keep-owners" in refused.stderr
    assert "nothing imported" in refused.stderr

    skipped = run("import", str(source), "--db", db, "--agent-id", "w9", "--skip-invalid")
    assert skipped.returncode == 0, skipped.stderr
    assert "imported 2 memories" in skipped.stderr and "owner w9" in skipped.stderr
    assert anyio.run(owners, db) == {"mine": "w9", "unowned": "w9"}

    kept_db = str(tmp_path / "b.db")
    kept = run("import", str(source), "--db", kept_db, "--agent-id", "w9", "--keep-owners")
    assert kept.returncode == 0, kept.stderr
    assert "imported 3 memories" in kept.stderr and "owners w1 1, w9 2" in kept.stderr
    assert anyio.run(owners, kept_db) == {"mine": "w9", "theirs": "w1", "unowned": "w9"}


def test_a_malformed_file_imports_nothing_and_names_the_line(tmp_path: Path, run: Any) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps(LINES[0]) + "\n{not json\n" + json.dumps({"key": "k"}) + "\n")
    db = str(tmp_path / "a.db")
    result = run("import", str(source), "--db", db)
    assert result.returncode == 1
    assert "line 2" in result.stderr
    assert "line 3" in result.stderr
    assert "value" in result.stderr
    assert "nothing imported" in result.stderr
    # Issue 35: a refused import still created an empty store.
    assert not Path(db).exists() and list(tmp_path.glob("a.db*")) == []

    seeded = tmp_path / "seed.jsonl"
    seeded.write_text(json.dumps(LINES[0]) + "\n")
    assert run("import", str(seeded), "--db", db).returncode == 0
    assert run("import", str(source), "--db", db).returncode == 1

    async def count() -> int:
        async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
            return await app.service.store.count()

    assert anyio.run(count) == 1, "an existing store: nothing more stored"


def test_a_missing_file_is_one_clear_line(tmp_path: Path) -> None:
    # SystemExit with a message: the interpreter prints it on stderr and exits 1.
    with pytest.raises(SystemExit) as exited:
        main(["import", str(tmp_path / "nope.jsonl"), "--db", str(tmp_path / "a.db")])
    assert "cannot read" in str(exited.value.code)
    assert "nope.jsonl" in str(exited.value.code)
