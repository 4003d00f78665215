"""The caps (models.Caps: `max_memories_per_agent`, `max_entries_per_project`): past one,
the least recently used memories are archived, inside the write that went over it.

Least recently used: `last_used_at`, the later of a memory's last write and its last read
(a memory-get, and every read the access counts write: store/access_counts.py, flushed
before each write so eviction sees them). Never evicted: pinned memories, the lead's
learnings (`learning:` keys) and the memory being written; notes (memories mirrored from
the memory folders) neither count nor get evicted. An evicted memory is archived, not
deleted: history, export and memory-get by id keep it, search and listing show it only
with include_archived, and storing it again (or memory-revert to its current version)
brings it back. Archived memories do not count toward a cap."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, Select, String, bindparam, func, select, update
from sqlalchemy.sql import ColumnElement

from memory_mcp.errors import CapExceededError
from memory_mcp.models import Caps, Source
from memory_mcp.store.memories_table import MEMORIES, M

LEARNING_KEY_PREFIX = "learning:"  # rules/permissions.LEARNING_KEY_PREFIX


def _live() -> tuple[ColumnElement[bool], ...]:
    return (M.source != Source.FILE_INDEX.value, M.archived_at.is_(None))


def counted_toward_cap(agent_id: str | ColumnElement[str]) -> tuple[ColumnElement[bool], ...]:
    """The memories an agent's cap counts: its live ones. Notes indexed from memory folders
    do not count: they mirror files the user keeps (bounded by the folder), and an evicted
    note would be re-indexed by the next reconcile anyway."""
    return (M.agent_id == agent_id, *_live())


# What a write counts toward its caps, built once (every store_memory counts both; see
# store/writes.py for why a statement built once costs less).
_COUNT_AGENT = select(func.count()).where(*counted_toward_cap(bindparam("owner", type_=String)))
_COUNT_PROJECT = select(func.count()).where(M.project == bindparam("owner"), *_live())


def evict_over_caps(
    conn: Connection,
    agent_id: str,
    project: str,
    cap: Caps,
    keep_id: int,
    revision: int,
    now: float,
) -> list[int]:
    """Archive the least recently used evictable memories over the owner's cap, then over
    the project's: the ids archived (CapExceededError when what is over a cap cannot be
    evicted; the write is rolled back with it)."""
    archived = _evict(
        conn,
        (_COUNT_AGENT, agent_id),
        lambda: counted_toward_cap(agent_id),
        cap.per_agent,
        keep_id,
        revision,
        now,
        f"agent {agent_id!r} is at its cap of {cap.per_agent:,} memories",
    )
    archived += _evict(
        conn,
        (_COUNT_PROJECT, project),
        lambda: (M.project == project, *_live()),
        cap.per_project,
        keep_id,
        revision,
        now,
        f"project {project!r} is at its cap of {cap.per_project:,} memories",
    )
    return archived


def _evict(
    conn: Connection,
    count: tuple[Select[int], str],
    counted: Callable[[], tuple[ColumnElement[bool], ...]],
    cap: int,
    keep_id: int,
    revision: int,
    now: float,
    full: str,
) -> list[int]:
    if cap <= 0:
        return []
    # `count` counts what `counted` selects, built once; `counted` is built only when a
    # write goes over the cap.
    statement, owner = count
    excess = int(conn.scalar(statement, {"owner": owner}) or 0) - cap
    if excess <= 0:
        return []
    victims = list(
        conn.scalars(
            select(M.id)
            .where(
                *counted(),
                M.pinned.is_(False),
                ~M.key.startswith(LEARNING_KEY_PREFIX, autoescape=True),
                M.id != keep_id,
            )
            .order_by(M.last_used_at, M.id)
            .limit(excess)
        )
    )
    if len(victims) < excess:
        raise CapExceededError(
            f"{full} and the rest are pinned or the lead's learnings; nothing was stored: "
            "unpin or delete some first"
        )
    conn.execute(
        update(MEMORIES).where(M.id.in_(victims)).values(archived_at=now, revision=revision)
    )
    return victims


__all__ = ["counted_toward_cap", "evict_over_caps"]
