"""The links between memories (schema.MemoryLinkRow): every statement about them. The
service decides who may make, remove or see a link and hands the store that decision
(`may_change_others`, a `Visibility` for the far end); the store applies it to the rows it
reads under its write lock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal, cast

from sqlalchemy import Connection, Table, and_, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.errors import InvalidInputError, MemoryNotFoundError, PermissionDeniedError
from memory_mcp.models import Link, LinkOutcome, Scope, Visibility
from memory_mcp.store.engine import Engines
from memory_mcp.store.memories_table import MEMORIES, M, visible_to
from memory_mcp.store.schema import MemoryLinkRow

LINKS = cast(Table, MemoryLinkRow.__table__)
L = LINKS.c
Direction = Literal["out", "in"]
_SCOPES = {scope.value: scope for scope in Scope}


def link_from_row(row: Any) -> Link:
    return Link(
        id=row.id,
        source_id=row.source_id,
        target_id=row.target_id,
        relation=row.relation,
        created_by=row.created_by,
        created_at=float(row.created_at),
        target_scope=_SCOPES.get(row.target_scope, Scope.AGENT),  # unknown: the narrower
        target_owner=row.target_owner,
        target_session=row.target_session or "",
        removed_by=row.removed_by,
        removed_at=None if row.removed_at is None else float(row.removed_at),
        target_project=row.target_project or "*",
    )


class LinkStore:
    def __init__(self, engines: Engines) -> None:
        self._engines = engines

    async def change(
        self,
        source_id: int,
        adds: Sequence[tuple[int, str]],
        removes: Sequence[tuple[int, str]],
        *,
        writer: str,
        now: float,
        may_change_others: bool,
        max_links: int,
    ) -> LinkOutcome:
        """Add and remove links of memory `source_id` in one write transaction: all of it
        or nothing. The source is read under the lock: if another agent holds it now the
        change is refused unless `may_change_others` (the service's decision). A target
        gone meanwhile is "not found"; more than `max_links` current links is refused."""
        async with self._engines.write() as conn:
            source = (await conn.execute(select(M.id, M.agent_id).where(M.id == source_id))).first()
            if source is None:
                raise MemoryNotFoundError(source_id)
            if source.agent_id != writer and not may_change_others:
                raise PermissionDeniedError(
                    f"memory {source_id} is now a memory of agent {source.agent_id!r}; "
                    "only its owner or the lead may link or unlink it"
                )
            outcome = LinkOutcome()
            for target_id, relation in removes:
                outcome.removed += await _remove(conn, source_id, target_id, relation, writer, now)
            outcome.unchanged += len(removes) - len(outcome.removed)
            targets = await _targets(conn, [target for target, _ in adds])
            for target_id, relation in adds:
                if target_id not in targets:
                    raise MemoryNotFoundError(target_id)
                made = await _add(conn, source_id, targets[target_id], relation, writer, now)
                if made is None:
                    outcome.unchanged += 1
                else:
                    outcome.added.append(made)
            if outcome.added:
                count = await conn.scalar(
                    select(func.count()).where(L.source_id == source_id, L.removed_at.is_(None))
                )
                if int(count or 0) > max_links:
                    raise InvalidInputError(
                        "to",
                        f"memory {source_id} would have {count} links; a memory has at most "
                        f"{max_links} (remove some first)",
                    )
            return outcome

    async def current(
        self,
        memory_ids: Sequence[int],
        direction: Direction,
        vis: Visibility,
        per_memory: int,
        relation: str | None = None,
    ) -> list[Link]:
        """The current links out of (or into) each of `memory_ids` whose far end `vis`
        shows, newest first, at most `per_memory` of each memory's: a hub's thousand
        links never flood an answer. The caller has checked that it may see `memory_ids`."""
        if not memory_ids:
            return []
        return await self._engines.read(
            current_links, list(memory_ids), direction, vis, per_memory, relation
        )

    async def history(self, memory_id: int, limit: int) -> list[Link]:
        """Every link out of or into `memory_id`, current and removed, newest first (the
        service shows those whose far end its caller may see)."""
        return await self._engines.read(link_history, memory_id, limit)


async def _targets(conn: AsyncConnection, ids: Sequence[int]) -> dict[int, Any]:
    if not ids:
        return {}
    rows = await conn.execute(
        select(M.id, M.scope, M.agent_id, M.session_id, M.project).where(M.id.in_(list(set(ids))))
    )
    return {row.id: row for row in rows}


async def _add(
    conn: AsyncConnection, source_id: int, target: Any, relation: str, writer: str, now: float
) -> Link | None:
    exists = await conn.scalar(
        select(L.id).where(
            L.source_id == source_id,
            L.target_id == target.id,
            L.relation == relation,
            L.removed_at.is_(None),
        )
    )
    if exists is not None:
        return None
    values = {
        "source_id": source_id,
        "target_id": target.id,
        "relation": relation,
        "created_by": writer,
        "created_at": now,
        "target_scope": target.scope,
        "target_owner": target.agent_id,
        "target_session": target.session_id,
        "target_project": target.project,
    }
    link_id = (await conn.execute(insert(LINKS).values(**values).returning(L.id))).scalar_one()
    return Link(
        id=link_id,
        source_id=source_id,
        target_id=target.id,
        relation=relation,
        created_by=writer,
        created_at=now,
        target_scope=_SCOPES.get(target.scope, Scope.AGENT),
        target_owner=target.agent_id,
        target_session=target.session_id,
        target_project=target.project,
    )


async def _remove(
    conn: AsyncConnection, source_id: int, target_id: int, relation: str, writer: str, now: float
) -> list[Link]:
    current = and_(
        L.source_id == source_id,
        L.target_id == target_id,
        L.relation == relation,
        L.removed_at.is_(None),
    )
    rows = (await conn.execute(select(LINKS).where(current))).all()
    if rows:
        await conn.execute(update(LINKS).where(current).values(removed_at=now, removed_by=writer))
    return [replace(link_from_row(row), removed_at=now, removed_by=writer) for row in rows]


def current_links(
    conn: Connection,
    memory_ids: list[int],
    direction: Direction,
    vis: Visibility,
    per_memory: int,
    relation: str | None,
) -> list[Link]:
    near, far = (L.source_id, L.target_id) if direction == "out" else (L.target_id, L.source_id)
    conditions = [near.in_(memory_ids), L.removed_at.is_(None), visible_to(vis)]
    if relation is not None:
        conditions.append(L.relation == relation)
    rank = func.row_number().over(partition_by=near, order_by=L.id.desc()).label("rank")
    ranked = select(*LINKS.columns, rank).join(MEMORIES, M.id == far).where(*conditions)
    inner = ranked.subquery()
    rows = conn.execute(
        select(*(inner.c[column.name] for column in LINKS.columns))
        .where(inner.c.rank <= per_memory)
        .order_by(inner.c.id.desc())
    )
    return [link_from_row(row) for row in rows]


def link_history(conn: Connection, memory_id: int, limit: int) -> list[Link]:
    rows = conn.execute(
        select(LINKS)
        .where((L.source_id == memory_id) | (L.target_id == memory_id))
        .order_by(L.id.desc())
        .limit(limit)
    )
    return [link_from_row(row) for row in rows]


__all__ = ["LINKS", "Direction", "LinkStore", "link_from_row"]
