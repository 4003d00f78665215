"""An agent's own export imported again, as real `memory-mcp` processes on real stores:
`export` writes what the agent may see, other agents' swarm memories included; importing
that file (a restore into a new store, or again into the same one) works by default,
leaves the others' swarm memories out with a count and the reason, and never makes them
the importer's. Issue 47: it failed on every such line, and the message read "agent
'w1''s memory"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_cli import EXE
from tests.mcp.test_stdio_e2e import server_env


def memory_mcp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        cwd=tmp_path,
        timeout=300,
        check=False,
    )


def stored(tmp_path: Path, db: Path, agent: str, key: str, value: str, scope: str) -> None:
    done = memory_mcp(
        tmp_path, "store", key, value, "--scope", scope, "--db", str(db), "--agent-id", agent
    )
    assert done.returncode == 0, done.stderr


def exported(tmp_path: Path, db: Path, agent: str | None) -> list[dict[str, object]]:
    """`agent`'s export; None: every agent's (--all)."""
    who = ["--all"] if agent is None else ["--agent-id", agent]
    done = memory_mcp(tmp_path, "export", "--db", str(db), *who)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_an_agents_own_export_imports_again(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    stored(tmp_path, db, "w2", "on-call", "Pager rotation is weekly", "swarm")
    stored(tmp_path, db, "w1", "deploy", "Deploy with make release", "agent")
    stored(tmp_path, db, "w1", "style", "Black line length 100", "swarm")
    mine = exported(tmp_path, db, "w1")
    assert sorted((line["key"], line["agent_id"]) for line in mine) == [
        ("deploy", "w1"),
        ("on-call", "w2"),
        ("style", "w1"),
    ], "an agent's export holds the swarm memories of others it may read"
    backup = tmp_path / "w1.jsonl"
    backup.write_text("".join(json.dumps(line) + "\n" for line in mine))

    # A restore into a new store: w1's own two, w2's left out and said so.
    restored = tmp_path / "restored.db"
    done = memory_mcp(tmp_path, "import", str(backup), "--db", str(restored), "--agent-id", "w1")
    assert done.returncode == 0, done.stderr
    assert "imported 2 memories" in done.stderr
    assert "left out 1 swarm memories of other agents (w2 1)" in done.stderr
    assert "--keep-owners" in done.stderr
    assert sorted((x["key"], x["agent_id"]) for x in exported(tmp_path, restored, "w1")) == [
        ("deploy", "w1"),
        ("style", "w1"),
    ]

    # Into the store it came from: nothing changes, nobody's memory becomes w1's.
    before = exported(tmp_path, db, None)
    again = memory_mcp(tmp_path, "import", str(backup), "--db", str(db), "--agent-id", "w1")
    assert again.returncode == 0, again.stderr
    assert "2 unchanged" in again.stderr
    assert exported(tmp_path, db, None) == before

    # --keep-owners restores them as theirs.
    whole = tmp_path / "whole.db"
    kept = memory_mcp(
        tmp_path, "import", str(backup), "--db", str(whole), "--agent-id", "w1", "--keep-owners"
    )
    assert kept.returncode == 0, kept.stderr
    assert "left out" not in kept.stderr
    assert ("on-call", "w2") in {(x["key"], x["agent_id"]) for x in exported(tmp_path, whole, "w1")}


def test_another_agents_private_memory_is_still_a_bad_line_said_plainly(tmp_path: Path) -> None:
    source = tmp_path / "theirs.jsonl"
    source.write_text(
        json.dumps({"key": "scratch", "value": "w1's notes", "agent_id": "w1"}) + "\n"
    )
    done = memory_mcp(
        tmp_path, "import", str(source), "--db", str(tmp_path / "a.db"), "--agent-id", "w9"
    )
    assert done.returncode == 1
    assert "line 1: a memory of agent 'w1' (its agent_id)" in done.stderr
    assert "''s" not in done.stderr
    assert "nothing imported" in done.stderr
