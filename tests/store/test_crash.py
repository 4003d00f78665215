"""kill -9, the way a crash or an impatient user ends a process: of an import, and of a
serving process in the middle of writes. Afterwards the file is sound (SQLite's and FTS5's
integrity checks), every acknowledged write is there, a re-run import finishes the job, and
a restarted server embeds everything. Real processes, the real model."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_mcp.transfer.batches import BATCH_LINES
from tests.mcp.test_stdio_e2e import EXE, server_env

DEADLINE_SECONDS = 300


def env(tmp_path: Path) -> dict[str, str]:
    return {**server_env(tmp_path), "MEMORY_MCP_WATCH": "false"}


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db, timeout=60)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def wait_for(condition: Callable[[], bool], what: str, every: float = 0.2) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


def count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return int(query(db, "SELECT count(*) FROM memories")[0][0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


def tags(db: Path) -> int:
    return int(query(db, "SELECT count(*) FROM memory_tags")[0][0])


def assert_sound(db: Path) -> None:
    assert query(db, "PRAGMA integrity_check") == [("ok",)]
    conn = sqlite3.connect(db)
    try:  # FTS5 raises if its index does not match the memories table
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    finally:
        conn.close()


def unembedded(db: Path) -> int:
    return int(
        query(
            db,
            """
        SELECT count(*) FROM memories m
        WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash)
    """,
        )[0][0]
    )


def kill_9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
    assert proc.returncode == -signal.SIGKILL


def test_a_killed_import_keeps_whole_batches_and_a_rerun_finishes_exactly(
    tmp_path: Path,
) -> None:
    """One transaction per batch (transfer/batches.py): a kill at any moment leaves whole
    batches, a prefix of the file, each memory with its tags and full-text entry; the
    re-run skips what is stored, writes the rest once and embeds every text."""
    db = tmp_path / "import.db"
    source = tmp_path / "memories.jsonl"
    # Eight batches: the kill lands right after the first commit, with seven to go (one
    # batch is ~0.1 s of writes when quiet). The rerun's embedding is paid per distinct
    # text (vectors are keyed by the text's hash), the writes per line: the first batch's
    # ten texts are found nowhere else, so the rerun must embed what the killed run
    # stored; the lines after it share ten more. 4,000 rows written, 20 texts embedded.
    total = 8 * BATCH_LINES
    with source.open("w") as out:
        for i in range(total):
            kind = "Imported" if i < BATCH_LINES else "Shared"
            line = {
                "key": f"imported-{i}",
                "value": f"{kind} fact number {i % 10} about kestrels",
                "tags": ["bulk", f"team-{i % 5}"],
            }
            out.write(json.dumps(line) + "\n")

    args = [EXE, "import", str(source), "--db", str(db), "--agent-id", "importer"]
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, env=env(tmp_path)
    )
    try:  # the first batch is committed: kill it mid-import
        wait_for(lambda: count(db) > 0 or proc.poll() is not None, "the import to store", 0.02)
    finally:
        if proc.poll() is None:
            kill_9(proc)
    assert proc.returncode == -signal.SIGKILL, "killed in the middle of the import"

    assert_sound(db)
    kept = {key for (key,) in query(db, "SELECT key FROM memories")}
    assert 0 < len(kept) < total, "killed mid-import, not before or after"
    assert len(kept) % BATCH_LINES == 0, "committed batches are whole"
    assert kept == {f"imported-{i}" for i in range(len(kept))}, "a prefix of the file"
    assert tags(db) == 2 * len(kept), "no memory without its tags"
    assert query(db, "SELECT count(*) FROM memories_fts") == [(len(kept),)]

    rerun = subprocess.run(
        args, capture_output=True, text=True, timeout=DEADLINE_SECONDS * 2, env=env(tmp_path)
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"imported {total - len(kept)} memories ({len(kept)} unchanged" in rerun.stderr
    assert_sound(db)
    assert query(db, "SELECT count(*), count(DISTINCT key) FROM memories") == [(total, total)]
    assert query(db, "SELECT max(version) FROM memories") == [(1,)], "nothing stored twice"
    assert tags(db) == 2 * total
    assert unembedded(db) == 0, "import returns when everything is searchable"


class RawServer:
    """`memory-mcp serve` over plain pipes, so the test can kill it mid-request."""

    def __init__(self, tmp_path: Path, db: Path) -> None:
        self.proc = subprocess.Popen(
            [EXE, "serve", "--db", str(db), "--agent-id", "writer"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env(tmp_path),
        )
        self.next_id = 0
        self.request(
            {
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "crash-test", "version": "0"},
                },
            }
        )
        self.read()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, message: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, **message})
        return self.next_id

    def store(self, key: str, value: str) -> int:
        return self.request(
            {
                "method": "tools/call",
                "params": {"name": "store_memory", "arguments": {"key": key, "value": value}},
            }
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message


def test_a_killed_server_loses_no_acknowledged_write_and_a_restart_embeds_all(
    tmp_path: Path,
) -> None:
    db = tmp_path / "served.db"
    server = RawServer(tmp_path, db)
    acknowledged: dict[str, str] = {}
    pending: dict[int, tuple[str, str]] = {}
    try:
        # Eight writes in flight at all times; kill while some are still unanswered.
        for i in range(8):
            pending[server.store(f"k{i}", f"fact {i} about herons")] = (f"k{i}", f"fact {i}")
        sent = 8
        while len(acknowledged) < 50:
            reply = server.read()
            key, value = pending.pop(reply["id"])
            assert not reply["result"].get("isError"), reply
            acknowledged[key] = f"{value} about herons"
            pending[server.store(f"k{sent}", f"fact {sent} about herons")] = (
                f"k{sent}",
                f"fact {sent}",
            )
            sent += 1
    finally:
        kill_9(server.proc)
    assert pending, "writes were in flight when it died"

    assert_sound(db)
    stored = dict(query(db, "SELECT key, value FROM memories"))
    missing = {k for k, v in acknowledged.items() if stored.get(k) != v}
    assert not missing, f"acknowledged writes lost: {sorted(missing)[:5]}"

    restarted = RawServer(tmp_path, db)
    try:
        wait_for(lambda: unembedded(db) == 0, "the restarted server to embed everything")
    finally:
        kill_9(restarted.proc)
    assert_sound(db)
