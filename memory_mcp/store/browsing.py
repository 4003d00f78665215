"""Statements for reading memories without a query (a page at a time, newest first) and
for choosing the memories of a bulk delete. Like the rest of the store they apply
decisions, not rules: the service says whose memories may be listed or deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, false, func, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import MemoryRecord, Order, Position, Scope, Source, Visibility
from memory_mcp.store.memories_table import MEMORIES, M, visible_to


@dataclass(frozen=True)
class Selection:
    """Which visible memories a listing covers, beyond what `Visibility` filters."""

    vis: Visibility
    order: Order = "updated"
    agent_id: str | None = None  # the owner
    since: float | None = None  # on the order's timestamp, both ends included
    until: float | None = None


def order_column(order: Order) -> Any:
    return M.updated_at if order == "updated" else M.created_at


def page_statement(
    selection: Selection, after: Position | None, limit: int, walk_order_index: bool
) -> Select[Any]:
    """Newest first, ties by id (newest first too): a total order, so a position is exact.

    `walk_order_index` (SQLite): the filters are wrapped so that SQLite's planner cannot
    use them to pick an index (it would take ix_memories_scope for the visibility OR,
    gather every visible row and sort them: 230 ms at 50,000 memories) and walks the
    order's index (updated_at, id) from the newest instead, stopping after `limit`
    matches (0.1 ms). The time bounds and the cursor stay outside: they bound that walk."""
    column = order_column(selection.order)
    filters = [visible_to(selection.vis)]
    if selection.agent_id is not None:
        filters.append(M.agent_id == selection.agent_id)
    condition: ColumnElement[bool] = and_(*filters)
    if walk_order_index:
        condition = func.coalesce(condition, false())
    stmt = select(MEMORIES).where(condition)
    if selection.since is not None:
        stmt = stmt.where(column >= selection.since)
    if selection.until is not None:
        stmt = stmt.where(column <= selection.until)
    if after is not None:
        stmt = stmt.where(or_(column < after.at, and_(column == after.at, M.id < after.id)))
    return stmt.order_by(column.desc(), M.id.desc()).limit(limit)


def changeable_by(
    agent_id: str, swarm_too: bool, spared_swarm_prefix: str | None = None
) -> ColumnElement[bool]:
    """The memories an agent may delete (its own; and every swarm memory if `swarm_too`),
    notes excepted: a note's memories follow its file; and swarm memories whose key starts
    with `spared_swarm_prefix` (any case) excepted too, its own included."""
    mine = M.agent_id == agent_id
    owned = or_(mine, M.scope == Scope.SWARM.value) if swarm_too else mine
    condition = and_(owned, M.source != Source.FILE_INDEX.value)
    if spared_swarm_prefix is not None:
        spared = and_(
            M.scope == Scope.SWARM.value,
            func.lower(M.key).startswith(spared_swarm_prefix.lower(), autoescape=True),
        )
        condition = and_(condition, not_(spared))
    return condition


def bulk_condition(vis: Visibility, updated_before: float | None) -> ColumnElement[bool]:
    conditions = [visible_to(vis)]
    if updated_before is not None:
        conditions.append(M.updated_at <= updated_before)
    return and_(*conditions)


async def count(conn: AsyncConnection, condition: ColumnElement[bool]) -> int:
    return int(await conn.scalar(select(func.count()).select_from(MEMORIES).where(condition)) or 0)


def oldest_first(condition: ColumnElement[bool], limit: int) -> Select[Any]:
    return select(MEMORIES).where(condition).order_by(M.updated_at, M.id).limit(limit)


@dataclass
class BulkDeletion:
    """What a bulk delete chose (oldest first, at most its limit) out of `matched` memories
    the caller may delete; `refused` more matched that it may not (others' memories)."""

    ids: list[int]
    records: list[MemoryRecord]
    matched: int
    refused: int
