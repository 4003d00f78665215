"""Counted reads written to the store (store/access_counts.py, record_columns.ACCESS_SQL):
one statement for both databases, and for the standard library's sqlite3 (`memory-mcp
get`), whose times only ever move forward: a read counted late, with an older time, adds
its count and leaves the later time in place."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Connection, select

from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.store.memories_table import M
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


def _times(conn: Connection, memory_id: int) -> tuple[int, float | None, float]:
    row = conn.execute(
        select(M.access_count, M.last_accessed_at, M.last_used_at).where(M.id == memory_id)
    ).one()
    return int(row[0]), row[1], float(row[2])


async def test_counted_reads_add_up_and_their_times_only_move_forward(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        store = app.service.store
        stored = await app.service.store_memory(app.caller, StoreRequest("deploy", "blue-green"))
        memory_id = stored.record.id
        count, accessed, used = await store._engines.read(_times, memory_id)
        assert (count, accessed) == (0, None)
        later = used + 100.0

        store.touch(memory_id, later)
        store.touch(memory_id, later)
        assert await store.flush_accesses() == 1
        assert await store._engines.read(_times, memory_id) == (2, later, later)

        store.touch(memory_id, later - 50.0)  # counted late: an older time
        assert await store.flush_accesses() == 1
        assert await store._engines.read(_times, memory_id) == (3, later, later)
