"""`memory-mcp import` at scale: identical lines are skipped without a write; ownership is
checked with the whole file; a progress bar only on a terminal; and an import beside a
running server shares its write lock. One transaction per batch, so that a process killed
at any moment leaves whole batches and a re-run finishes exactly: tests/store/test_crash.py
(one real import killed with kill -9, and its re-run, prove both)."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli import imports as cli_import
from memory_mcp.cli.main import main
from memory_mcp.settings import Settings
from memory_mcp.transfer.batches import BATCH_LINES
from tests.conftest import FakeEmbedder, call, opened
from tests.mcp.test_stdio_e2e import spawned

EXE = str(Path(sys.executable).with_name("memory-mcp"))


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process imports get the FAKE embedder: these tests are about what is stored and
    when, not about meaning (spawned processes run the real model)."""
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())


def short_memories(count: int, agent_id: str | None = None) -> list[dict[str, object]]:
    lines: list[dict[str, object]] = [
        {
            "key": f"fact-{i}",
            "value": f"Fact {i}: service s{i % 97} deploys on weekday {i % 7}",
            "tags": ["bulk", f"team-{i % 5}"],
        }
        for i in range(count)
    ]
    if agent_id:
        for line in lines:
            line["agent_id"] = agent_id
    return lines


def write_jsonl(path: Path, lines: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def db_facts(db: Path) -> dict[str, object]:
    with sqlite3.connect(db) as conn:
        return {
            "rows": conn.execute("SELECT count(*) FROM memories").fetchone()[0],
            "keys": conn.execute("SELECT count(DISTINCT key) FROM memories").fetchone()[0],
            "max_version": conn.execute("SELECT max(version) FROM memories").fetchone()[0],
            "history": conn.execute("SELECT count(*) FROM memory_history").fetchone()[0],
            "tags": conn.execute("SELECT count(*) FROM memory_tags").fetchone()[0],
            "fts": conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0],
            "revision": conn.execute(
                "SELECT value FROM store_meta WHERE name = 'revision'"
            ).fetchone()[0],
            "integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
        }


def count_rows(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_a_rerun_of_the_same_file_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", short_memories(1200))
    db = tmp_path / "m.db"
    assert main(["import", str(source), "--db", str(db)]) == 0
    first = db_facts(db)
    capsys.readouterr()

    assert main(["import", str(source), "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "imported 0 memories (1200 unchanged" in err
    assert "embedded 0 texts" in err
    again = db_facts(db)
    assert again["revision"] == first["revision"], "not one write"
    assert again["history"] == 0


def test_a_changed_line_is_updated_and_the_rest_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = short_memories(600)
    db = tmp_path / "m.db"
    assert main(["import", str(write_jsonl(tmp_path / "a.jsonl", lines)), "--db", str(db)]) == 0
    capsys.readouterr()
    lines[550]["value"] = "Fact 550 was corrected: service s65 deploys on Fridays"
    assert main(["import", str(write_jsonl(tmp_path / "b.jsonl", lines)), "--db", str(db)]) == 0
    err = capsys.readouterr().err
    assert "imported 1 memories (599 unchanged" in err
    assert "embedded 1 texts" in err
    facts = db_facts(db)
    assert facts["history"] == 1, "the old value is kept in history"
    assert facts["max_version"] == 2


def test_another_agents_swarm_key_is_reported_up_front_and_nothing_is_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    mine = [{"key": "reviews", "value": "Two reviewers per change", "scope": "swarm"}]
    owned = write_jsonl(tmp_path / "alice.jsonl", mine)
    assert main(["import", str(owned), "--db", str(db), "--agent-id", "alice"]) == 0
    capsys.readouterr()

    theirs = [
        {"key": "deploy", "value": "Deploys are blue-green"},
        {"key": "reviews", "value": "One reviewer is enough", "scope": "swarm"},
        {"key": "oncall", "value": "Rotation is weekly", "scope": "swarm"},
        {"key": "oncall", "value": "Rotation is daily", "scope": "swarm", "agent_id": "carol"},
    ]
    source = write_jsonl(tmp_path / "bob.jsonl", theirs)
    keep = "--keep-owners"  # carol's line stays carol's (else a bad line of its own)
    assert main(["import", str(source), "--db", str(db), "--agent-id", "bob", keep]) == 1
    err = capsys.readouterr().err
    line_2 = next(x for x in err.splitlines() if ": line 2:" in x)
    assert "swarm memory of agent 'alice'" in line_2
    line_4 = next(x for x in err.splitlines() if ": line 4:" in x)
    assert "created earlier in this file" in line_4
    assert "nothing imported: 2 bad lines" in err
    assert db_facts(db)["rows"] == 1, "nothing of bob's file was stored"


def test_skip_invalid_leaves_out_the_lines_another_agent_owns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "m.db"
    mine = [{"key": "reviews", "value": "Two reviewers per change", "scope": "swarm"}]
    owned = write_jsonl(tmp_path / "alice.jsonl", mine)
    assert main(["import", str(owned), "--db", str(db), "--agent-id", "alice"]) == 0
    theirs = [
        {"key": "deploy", "value": "Deploys are blue-green"},
        {"key": "reviews", "value": "One reviewer is enough", "scope": "swarm"},
    ]
    source = write_jsonl(tmp_path / "bob.jsonl", theirs)
    capsys.readouterr()
    code = main(["import", str(source), "--db", str(db), "--agent-id", "bob", "--skip-invalid"])
    assert code == 0
    err = capsys.readouterr().err
    assert "imported 1 memories (0 unchanged, 1 bad lines skipped, 0 refused" in err

    async def values() -> list[str]:
        async with opened(Settings(db=str(db), watch=False)) as app:
            return sorted([r.value async for r in app.service.store.iter_records()])

    assert anyio.run(values) == ["Deploys are blue-green", "Two reviewers per change"]


def read_all_available(fd: int) -> str:
    """Everything written to the pty so far: one os.read may return only the first draw."""
    chunks = []
    while select.select([fd], [], [], 1.0)[0]:
        chunks.append(os.read(fd, 65536))
    return b"".join(chunks).decode()


def test_the_progress_bar_draws_on_a_terminal() -> None:
    master, replica = pty.openpty()
    try:
        with os.fdopen(replica, "w", closefd=False) as terminal:
            with cli_import._progress(3, "storing", "line", stream=terminal) as advance:
                advance(3)
            terminal.flush()
        drawn = read_all_available(master)
    finally:
        os.close(master)
        os.close(replica)
    assert "storing" in drawn
    assert "3/3" in drawn


def test_no_progress_bar_when_stderr_is_not_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stream = io.StringIO()
    with cli_import._progress(3, "storing", "line", stream=stream) as advance:
        advance(3)
    assert stream.getvalue() == ""
    source = write_jsonl(tmp_path / "in.jsonl", short_memories(10))
    assert main(["import", str(source), "--db", str(tmp_path / "m.db")]) == 0
    err = capsys.readouterr().err
    assert "storing" not in err
    assert "%|" not in err


@pytest.mark.anyio
async def test_an_import_beside_a_running_server_shares_its_write_lock(tmp_path: Path) -> None:
    """A real server over stdio keeps storing while the import writes its batches into the
    same file, and its searches find the imported memories."""
    # Ten distinct texts: the server embeds what the import stored (the FAKE model's
    # vectors are not its model's) in the background while the test runs, and 3,000
    # distinct ones cost it seconds of CPU.
    total = 6 * BATCH_LINES
    lines = short_memories(total, agent_id="importer")
    for i, line in enumerate(lines):
        line["value"] = f"Fact {i % 10}: service s{i % 10} deploys on weekday {i % 5}"
    lines[1234]["value"] = "The quokka migration runbook lives in the ops wiki"
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    db = tmp_path / "shared.db"
    argv = ["import", str(source), "--db", str(db), "--agent-id", "importer"]
    async with spawned(tmp_path, "--agent-id", "importer") as client:
        await call(client, "memory-store", key="before", value="written before the import")
        codes: list[int] = []

        async def run_import() -> None:
            codes.append(await anyio.to_thread.run_sync(main, argv))

        stored_meanwhile = 0
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_import)
            while not codes:  # the server's writes go on while the import runs
                await call(client, "memory-store", key=f"live-{stored_meanwhile}", value="x y")
                stored_meanwhile += 1
        assert codes == [0]
        assert count_rows(db) == total + 1 + stored_meanwhile, "no write lost on either side"
        # By its key: a memory the server has not embedded yet ranks below meaning-only
        # matches.
        found = await call(client, "memory-search", query="fact-1234")
        assert found["results"][0]["value"] == "The quokka migration runbook lives in the ops wiki"
