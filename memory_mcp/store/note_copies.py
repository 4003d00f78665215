"""Two memories of one note chunk made one (MemoryStore.merge_note_copies): the copy that
goes hands its current links to the one kept, then is deleted like any memory.

Two copies arise when a note's memories are under another project than its folder's
(the work tree was renamed: it gained an `origin` remote, or its remote's host is now in
the name) and the chunk was indexed again under the new name. The kept copy is the one
the indexer keeps in step with the file; the other is stale text of the same chunk. Its
history goes with it (a note's history is its file's); its links do not: a link into it
now leads to the kept copy (it meant that chunk), a link from it now starts there. A link
the kept copy has already (same other end, same relation) is not made twice."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, select, update

from memory_mcp.models import Source
from memory_mcp.store.memories_table import MEMORIES, M
from memory_mcp.store.schema import MemoryLinkRow
from memory_mcp.store.writes import delete_ids

LINKS = MemoryLinkRow.__table__.c


def merge_note_copies(
    conn: Connection, pairs: Sequence[tuple[int, int]], revision: int, now: float | None = None
) -> list[int]:
    """For each (gone, kept) pair of note memories: `gone`'s current links moved to `kept`,
    then `gone` deleted. A pair whose either memory is no longer a note's (deleted
    meanwhile) is left alone. The ids deleted."""
    at = time.time() if now is None else now
    gone: list[int] = []
    for stale, kept in pairs:
        rows: dict[int, Row[Any]] = {
            row.id: row for row in conn.execute(select(MEMORIES).where(M.id.in_([stale, kept])))
        }
        if stale == kept or len(rows) != 2:
            continue
        if any(row.source != Source.FILE_INDEX.value for row in rows.values()):
            continue
        _carry_links(conn, stale, rows[kept])
        gone.append(stale)
    if gone:
        delete_ids(conn, gone, revision, at)
    return gone


def _carry_links(conn: Connection, stale: int, kept: Row[Any]) -> None:
    kept_id: int = kept.id
    current = LINKS.removed_at.is_(None)
    table = MemoryLinkRow.__table__
    for link in conn.execute(select(table).where(LINKS.source_id == stale, current)).all():
        if link.target_id != kept_id and not _linked(conn, kept_id, link.target_id, link.relation):
            conn.execute(update(MemoryLinkRow).where(LINKS.id == link.id).values(source_id=kept_id))
    for link in conn.execute(select(table).where(LINKS.target_id == stale, current)).all():
        if link.source_id == kept_id or _linked(conn, link.source_id, kept_id, link.relation):
            continue
        conn.execute(
            update(MemoryLinkRow)
            .where(LINKS.id == link.id)
            .values(
                target_id=kept_id,
                target_scope=kept.scope,
                target_owner=kept.agent_id,
                target_session=kept.session_id,
                target_project=kept.project,
            )
        )


def _linked(conn: Connection, source: int, target: int, relation: str) -> bool:
    found = conn.scalar(
        select(LINKS.id).where(
            LINKS.source_id == source,
            LINKS.target_id == target,
            LINKS.relation == relation,
            LINKS.removed_at.is_(None),
        )
    )
    return found is not None


__all__ = ["merge_note_copies"]
