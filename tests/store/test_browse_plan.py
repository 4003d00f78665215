"""A listing page walks the order's index on SQLite instead of sorting every visible row
(store/browsing.py), and a page of history the memory's versions: checked on the query plan,
not on a clock."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from sqlalchemy.dialects import sqlite

from memory_mcp.models import Caller, Position, Role, Visibility
from memory_mcp.settings import Settings
from memory_mcp.store.browsing import Selection, page_statement
from memory_mcp.store.read_statements import history_page
from tests.conftest import opened

pytestmark = pytest.mark.anyio

CALLER = Caller("w1", Role.WORKER, "s1")


def plan(db: str, selection: Selection, after: Position | None) -> str:
    statement = page_statement(selection, after, 21, walk_order_index=True)
    sql = str(statement.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
    with sqlite3.connect(db) as conn:
        return " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))


@pytest.mark.parametrize("order", ["updated", "created"])
async def test_a_page_walks_the_order_index(
    make_settings: Callable[..., Settings], order: str
) -> None:
    settings = make_settings()
    async with opened(settings):
        pass  # creates the store, indexes included
    selection = Selection(Visibility(CALLER, now=1.0), order)  # type: ignore[arg-type]
    steps = plan(str(settings.db), selection, Position(1_790_000_000.0, 50))
    assert f"USING INDEX ix_memories_{order}" in steps
    assert "TEMP B-TREE FOR ORDER BY" not in steps


async def test_a_history_page_walks_the_memorys_versions_newest_first(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    async with opened(settings):
        pass
    statement = history_page(7, 900, 51)
    sql = str(statement.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
    with sqlite3.connect(str(settings.db)) as conn:
        steps = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
    assert "USING INDEX ix_memory_history_versions" in steps
    assert "TEMP B-TREE FOR ORDER BY" not in steps
