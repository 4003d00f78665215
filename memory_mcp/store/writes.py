"""Statements that run inside a write transaction opened by MemoryStore."""

from __future__ import annotations

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement

from memory_mcp.errors import InvalidInputError
from memory_mcp.models import MemoryRecord, Source
from memory_mcp.store.rows import MEMORIES, M, record_from_row
from memory_mcp.store.schema import MemoryHistoryRow, MemoryTagRow, StoreMetaRow, TombstoneRow


async def next_revision(conn: AsyncConnection) -> int:
    result = await conn.execute(
        update(StoreMetaRow)
        .where(StoreMetaRow.name == "revision")
        .values(value=StoreMetaRow.value + 1)
        .returning(StoreMetaRow.value)
    )
    return int(result.scalar_one())


async def fetch(conn: AsyncConnection, memory_id: int) -> MemoryRecord:
    row = (await conn.execute(select(MEMORIES).where(M.id == memory_id))).one()
    return record_from_row(row)


async def write_tags(conn: AsyncConnection, memory_id: int, tags: list[str]) -> None:
    if tags:
        await conn.execute(
            insert(MemoryTagRow), [{"memory_id": memory_id, "tag": t} for t in set(tags)]
        )


async def delete_ids(conn: AsyncConnection, ids: list[int], revision: int) -> int:
    """Delete from every index at once: rows, tags, history (FTS by trigger), and tombstone
    them so every process's vector index drops them too."""
    await conn.execute(delete(MemoryTagRow).where(MemoryTagRow.memory_id.in_(ids)))
    await conn.execute(delete(MemoryHistoryRow).where(MemoryHistoryRow.memory_id.in_(ids)))
    result = await conn.execute(delete(MEMORIES).where(M.id.in_(ids)))
    await conn.execute(insert(TombstoneRow), [{"memory_id": i, "revision": revision} for i in ids])
    return int(result.rowcount or 0)


def counted_toward_cap(agent_id: str) -> tuple[ColumnElement[bool], ...]:
    """The memories an agent's cap counts. Notes indexed from memory folders do not count:
    they mirror files the user keeps (bounded by the folder), and an evicted note would be
    re-indexed by the next reconcile anyway."""
    return (M.agent_id == agent_id, M.source != Source.FILE_INDEX.value)


async def evict_over_cap(
    conn: AsyncConnection, agent_id: str, cap: int, keep_id: int, revision: int
) -> list[int]:
    """Evict the owner's least recently used unpinned memories beyond the cap (only those
    counted_toward_cap: notes neither count nor get evicted)."""
    if cap <= 0:
        return []
    counted = counted_toward_cap(agent_id)
    count = int(await conn.scalar(select(func.count()).where(*counted)) or 0)
    excess = count - cap
    if excess <= 0:
        return []
    victims = list(
        (
            await conn.scalars(
                select(M.id)
                .where(*counted, M.pinned.is_(False), M.id != keep_id)
                .order_by(M.last_used_at, M.id)
                .limit(excess)
            )
        ).all()
    )
    if len(victims) < excess:
        raise InvalidInputError(
            "pinned",
            f"agent {agent_id!r} is at its cap of {cap} memories and the rest are pinned; "
            "unpin or delete some first",
        )
    await delete_ids(conn, victims, revision)
    return victims
