"""A SQLite store file as every connection to it is set up, and the write lock every
process on it shares (store/engine.py tells why writes queue on a file lock). Standard
library only: the engines (store/engine.py) and the reads on the standard library's sqlite3
(store/sqlite/stdlib_reads.py) set a connection up the same way and write under the same lock."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Literal

BUSY_TIMEOUT_MS = 30_000
LARGEST_ID = 2**63 - 1  # SQLite's INTEGER is 64-bit
Synchronous = Literal["full", "normal"]


def connection_pragmas(
    synchronous: Synchronous, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> list[str]:
    """What every connection runs first (its driver left in autocommit: BEGIN is ours)."""
    return [
        f"PRAGMA busy_timeout = {busy_timeout_ms}",
        "PRAGMA journal_mode = WAL",
        # FULL: a commit is on disk before the write is acknowledged, power loss included.
        # NORMAL (MEMORY_MCP_SYNCHRONOUS=normal) survives a killed process, not a power cut.
        f"PRAGMA synchronous = {synchronous.upper()}",
        "PRAGMA foreign_keys = ON",
    ]


def write_lock_path(database: str) -> Path | None:
    """The lock file beside a database file; None for an in-memory database or a URI."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(f"{database}-writelock")


class FileWriteLock:
    """An exclusive flock on a file beside the database, shared by every process on it.
    Only one task per process may use it at a time (flock locks belong to the open file,
    so two tasks of one process would not exclude each other); `Engines` ensures that."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def _open(self) -> int:
        if self._fd is None:  # opened on the first write: read-only commands create nothing
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        return self._fd

    def wait(self) -> None:
        """Take the lock, blocking this thread until it is free."""
        fcntl.flock(self._open(), fcntl.LOCK_EX)

    async def acquire(self) -> None:
        try:  # free: take it here, without a trip to a thread and back
            fcntl.flock(self._open(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        import anyio.to_thread  # here: the standard-library reads never come this way

        # Not abandoned on cancel: a thread left blocked in flock would take the lock later
        # and never give it back. Cancellation waits for the lock, then releases it.
        await anyio.to_thread.run_sync(self.wait)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = [
    "BUSY_TIMEOUT_MS",
    "LARGEST_ID",
    "FileWriteLock",
    "Synchronous",
    "connection_pragmas",
    "write_lock_path",
]
