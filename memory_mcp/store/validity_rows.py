"""The statements behind validity windows (rules/validity.py): closing a memory's window
when a correction supersedes it, the version of each memory that was current at a time,
and the replaced versions that hold a query's words (they have no keyword index of their
own: only `include_superseded` and `as_of` reads look at them). Run inside MemoryStore's
connections, SQLite and PostgreSQL alike."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, or_, select, update

from memory_mcp.models import PastVersion, Source, Visibility
from memory_mcp.store import write_context
from memory_mcp.store.memories_table import MEMORIES, M, visible_to
from memory_mcp.store.schema import MemoryHistoryRow

H = MemoryHistoryRow.__table__.c
# Identities per IN (...) list: under SQLite's bound-variable limit.
_IN_CHUNK = 500


def close_window(conn: Connection, old_id: int, new_id: int, at: float, revision: int) -> None:
    """Memory `old_id` stopped holding at `at`, corrected by `new_id`: its window closes,
    it leaves default reads (the vector index reads the change at `revision`), and its
    words leave its neighbours' contexts now (store/write_context.py)."""
    conn.execute(
        update(MEMORIES)
        .where(M.id == old_id)
        .values(valid_to=at, superseded_by=new_id, revision=revision)
    )
    write_context.refresh(conn, write_context.neighbours(conn, [old_id]))


def open_window(conn: Connection, memory_id: int, revision: int) -> None:
    """Memory `memory_id` holds again (the link that closed it was removed): back in
    default reads, its words lent again."""
    conn.execute(
        update(MEMORIES)
        .where(M.id == memory_id)
        .values(valid_to=None, superseded_by=None, revision=revision)
    )
    write_context.refresh(conn, write_context.neighbours(conn, [memory_id]))


def _versions(conn: Connection, memory_ids: list[int]) -> dict[int, list[Any]]:
    """Each memory's history rows, oldest first, with its creation time."""
    found: dict[int, list[Any]] = {}
    for start in range(0, len(memory_ids), _IN_CHUNK):
        chunk = memory_ids[start : start + _IN_CHUNK]
        rows = conn.execute(
            select(H.memory_id, H.version, H.value, H.tags, H.metadata, H.source)
            .add_columns(H.updated_by, H.replaced_at, M.created_at)
            .join(MEMORIES, M.id == H.memory_id)
            .where(H.memory_id.in_(chunk))
            .order_by(H.memory_id, H.version)
        )
        for row in rows:
            found.setdefault(row.memory_id, []).append(row)
    return found


def _windows(rows: list[Any]) -> list[PastVersion]:
    """A memory's history rows (oldest first) as versions with their windows."""
    versions = []
    written_at = rows[0].created_at if rows else 0.0
    for row in rows:
        versions.append(
            PastVersion(
                row.memory_id,
                row.version,
                row.value,
                row.tags,
                row.metadata,
                row.source,
                row.updated_by,
                written_at,
                row.replaced_at,
            )
        )
        written_at = row.replaced_at
    return versions


def versions_at(conn: Connection, memory_ids: list[int], at: float) -> dict[int, PastVersion]:
    """For each of `memory_ids` replaced since `at`, its version that was current then
    (the oldest one replaced after `at`; a memory stated with an earlier `valid_from`
    than its creation shows its first version). Memories not replaced since are left out:
    their current version was current then."""
    shown: dict[int, PastVersion] = {}
    for memory_id, rows in _versions(conn, memory_ids).items():
        for version in _windows(rows):
            if version.replaced_at > at:
                shown[memory_id] = version
                break
    return shown


def past_versions_holding(
    conn: Connection, terms: list[str], vis: Visibility, limit: int
) -> list[PastVersion]:
    """Replaced versions of the memories `vis` shows whose value holds one of `terms`
    (a plain substring test, lower-cased: history has no keyword index), at most `limit`
    memories' worth, newest first; with `vis.as_of`, only the version current then."""
    if not terms:
        return []
    holds = or_(*(func.lower(H.value).like(f"%{_escaped(term)}%", escape="\\") for term in terms))
    ids = list(
        conn.scalars(
            select(H.memory_id)
            .join(MEMORIES, M.id == H.memory_id)
            .where(visible_to(vis), M.source != Source.FILE_INDEX.value, holds)
            .group_by(H.memory_id)
            .order_by(func.max(H.replaced_at).desc())
            .limit(limit)
        )
    )
    found: list[PastVersion] = []
    for rows in _versions(conn, ids).values():
        for version in _windows(rows):
            if vis.as_of is not None and not version.written_at <= vis.as_of < version.replaced_at:
                continue
            text = version.value.lower()
            if any(term in text for term in terms):
                found.append(version)
    return found


def _escaped(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


__all__ = ["close_window", "open_window", "past_versions_holding", "versions_at"]
