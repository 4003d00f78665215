"""Reads by id (store/rows_by_id.py) and SQL text on SQLite (store/sqlite/cursor.py): on the
SQLite file's reader through the DB-API cursor (the ids as JSON), elsewhere through
SQLAlchemy; the same rows either way, and the same errors as every other read."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from memory_mcp.errors import StoreBusyError, StoreUnavailableError, store_error
from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.store.engine import create_engines
from memory_mcp.store.memories_table import MEMORIES, RANK_COLUMNS
from memory_mcp.store.rows_by_id import ReadById
from memory_mcp.store.sqlite.cursor import cursor_rows
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, FakeEmbedder, opened

pytestmark = pytest.mark.anyio

WHOLE = ReadById(list(MEMORIES.columns))
FACTS = ReadById(RANK_COLUMNS)


Rows = list[tuple[Any, ...]]


def _both_ways(read: ReadById, ids: list[int]) -> Callable[[Connection], tuple[Rows, Rows]]:
    def run(conn: Connection) -> tuple[Rows, Rows]:
        fast = sorted(tuple(row) for row in read.rows(conn, ids))
        statement = sorted(tuple(row) for row in conn.execute(read.statement, {"ids": ids}))
        return fast, statement

    return run


@BOTH_BACKENDS
@pytest.mark.parametrize("read", [WHOLE, FACTS], ids=["whole", "facts"])
async def test_a_read_by_id_gives_the_rows_of_the_ids_that_exist(
    make_settings: Callable[..., Settings], read: ReadById
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        ids = []
        for i in range(3):
            request = StoreRequest(f"k{i}", f"value {i}", tags=[f"t{i}"], pinned=i == 1)
            ids.append((await service.store_memory(caller, request)).record.id)
        asked = [ids[0], ids[2], ids[2], 987_654]  # a repeat and an id that does not exist
        fast, statement = await service.store._engines.read(_both_ways(read, asked))
        assert [row[0] for row in fast] == [ids[0], ids[2]]
        assert fast == statement  # every column's value, pinned included (1 == True)


@SQLITE_ONLY
def test_a_failing_sqlite_read_is_the_stores_error_not_the_drivers(tmp_path: Path) -> None:
    """The cursor bypasses SQLAlchemy's error hook: its failure is translated the same way."""
    engines = create_engines(f"sqlite+aiosqlite:///{tmp_path / 'no-tables.db'}")
    assert engines.sync_reader is not None
    with engines.sync_reader.begin() as conn, pytest.raises(StoreUnavailableError):
        WHOLE.rows(conn, [1])  # no memories table: "no such table"


def test_a_busy_database_asks_for_a_retry_any_other_failure_says_it_failed() -> None:
    assert isinstance(store_error(sqlite3.OperationalError("database is locked")), StoreBusyError)
    failed = store_error(sqlite3.OperationalError("disk I/O error"))
    assert isinstance(failed, StoreUnavailableError)
    assert "disk I/O" not in str(failed)  # the driver's text stays in the log


async def test_sql_text_runs_through_aiosqlite_too(tmp_path: Path) -> None:
    """A SQLite store read without the pysqlite reader (`Engines.read` on the async engine,
    `run_sync`) sends the same SQL text through `exec_driver_sql`: same rows, plain tuples."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}")
    try:
        async with engine.connect() as conn:
            rows = await conn.run_sync(
                cursor_rows, "SELECT :a + 1, :b UNION ALL SELECT 0, 'x'", {"a": 41, "b": "y"}
            )
    finally:
        await engine.dispose()
    assert sorted(rows) == [(0, "x"), (42, "y")]
    assert all(type(row) is tuple for row in rows)
