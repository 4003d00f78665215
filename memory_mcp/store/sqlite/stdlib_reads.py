"""A SQLite store's reads on the standard library's sqlite3, for the ways in that only read a
row or two and must answer in a blink: the SessionStart hook and `memory-mcp context` (the
`<memories>` block's pool), `memory-mcp get` (one record, and its read counted). Importing
SQLAlchemy, its ORM and the async drivers costs more than a hook's whole work (~0.4 s of
CPU, where a hook with nothing to do must answer at once), so these run the store's own SQL
text (store/record_columns.py, with the visibility condition of store/visibility.py) on a
connection set up as the engines set theirs up (store/sqlite/file.py). MemoryStore runs the
same text through SQLAlchemy: one statement each, two drivers.

`open_reads` answers None when this path cannot serve: a store that is not a plain file
(PostgreSQL, in memory), or a file an older memory-mcp made whose tables lack a column
the reads need: the full open (app/root.py) migrates it, so the caller opens the app."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from memory_mcp.errors import store_error
from memory_mcp.models import MemoryRecord, Visibility
from memory_mcp.store.record_columns import (
    ACCESS_SQL,
    RECORD_BY_ID_SQL,
    RECORD_COLUMNS,
    RecordColumns,
    readable_from_columns,
    recent_sql,
    record_from_columns,
)
from memory_mcp.store.sqlite.file import (
    BUSY_TIMEOUT_MS,
    FileWriteLock,
    Synchronous,
    connection_pragmas,
    write_lock_path,
)

# The tables the reads touch, and the columns they need of each.
_NEEDS = {"memories": set(RECORD_COLUMNS) | {"last_used_at"}, "memory_tags": {"memory_id", "tag"}}


class SqliteReads:
    """One connection to one store file; every method is one transaction."""

    def __init__(self, path: Path, synchronous: Synchronous) -> None:
        self.path = path
        self._conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        for pragma in connection_pragmas(synchronous):
            self._conn.execute(pragma)
        lock = write_lock_path(str(path))
        self._lock = FileWriteLock(lock) if lock is not None else None

    def close(self) -> None:
        self._conn.close()
        if self._lock is not None:
            self._lock.close()

    def __enter__(self) -> SqliteReads:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _execute(self, sql: str, params: dict[str, Any], records: bool = False) -> list[Any]:
        """The rows of `sql`; with `records`, as RecordColumns (their columns by name)."""
        try:
            cursor = self._conn.execute(sql, params)
            rows = cursor.fetchall()
        except sqlite3.OperationalError as exc:
            raise store_error(exc) from exc
        return [RecordColumns._make(row) for row in rows] if records else rows

    def up_to_date(self) -> bool:
        """Whether the tables hold every column the reads need (an older store may not)."""
        for table, needed in _NEEDS.items():
            columns = {row[1] for row in self._execute(f"PRAGMA table_info({table})", {})}
            if not needed <= columns:
                return False
        return True

    def get(self, memory_id: int) -> MemoryRecord | None:
        """The memory, or None; DamagedMemoryError if its row cannot be read."""
        rows = self._execute(RECORD_BY_ID_SQL, {"id": memory_id}, records=True)
        return record_from_columns(rows[0]) if rows else None

    def recent(self, vis: Visibility, limit: int) -> list[MemoryRecord]:
        """Visible memories, pinned first, then most recently used (MemoryStore.recent)."""
        sql, params = recent_sql(vis, limit)
        return readable_from_columns(self._execute(sql, params, records=True))

    def keyword_hits(
        self,
        terms: Sequence[str],
        vis: Visibility,
        limit: int,
        column_weights: tuple[float, float, float, float],
    ) -> tuple[list[tuple[int, float]], dict[int, float]]:
        """The search's keyword arm (store/sqlite/fts5.py: BM25 over what `vis` may see,
        best first) and how much of the query each hit holds (fts5.coverage), in one read
        transaction."""
        from memory_mcp.store.sqlite import fts5

        try:
            self._conn.execute("BEGIN")
            hits, _ = fts5.keyword_hits(self._conn, terms, vis, limit, column_weights)
            shares = fts5.coverage(self._conn, terms, vis, [i for i, _ in hits])
        except sqlite3.OperationalError as exc:
            raise store_error(exc) from exc
        finally:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")  # read only; temp tables are the connection's
        return hits, shares

    def count_read(self, memory_id: int, now: float) -> None:
        """Write one read of a memory (MemoryStore.flush_accesses' statement), under the
        write lock every process on the file takes."""
        if self._lock is not None:
            self._lock.wait()
        try:
            self._execute("BEGIN IMMEDIATE", {})
            try:
                self._execute(ACCESS_SQL, {"id": memory_id, "count": 1, "last": now})
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._execute("COMMIT", {})
        finally:
            if self._lock is not None:
                self._lock.release()


def open_reads(database: Path, synchronous: Synchronous) -> SqliteReads | None:
    """The reads of an existing store file, or None when they cannot serve it (see the
    module's docstring)."""
    if str(database).startswith("file:"):
        return None
    reads = SqliteReads(database, synchronous)
    try:
        if reads.up_to_date():
            return reads
    except BaseException:
        reads.close()
        raise
    reads.close()
    return None


__all__ = ["SqliteReads", "open_reads"]
