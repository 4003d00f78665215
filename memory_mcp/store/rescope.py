"""Moving a memory to another scope, in place (MemoryStore.rescope): the same id, its
history, links and vector; a new version written by the mover, whose history row keeps the
version before; the identity it would have been stored with in the new scope. A memory of
that key there already stops the move: two memories are never merged."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from memory_mcp.errors import InvalidInputError, MemoryNotFoundError
from memory_mcp.models import MemoryRecord, Scope, memory_identity
from memory_mcp.store.memories_table import MEMORIES, M, next_revision
from memory_mcp.store.schema import MemoryLinkRow
from memory_mcp.store.writes import fetch, keep_version

LINKS = MemoryLinkRow.__table__.c


def rescope(
    conn: Connection,
    memory_id: int,
    version: int,
    scope: Scope,
    session_id: str,
    writer: str,
    now: float,
) -> MemoryRecord:
    """Move memory `memory_id`, read at `version` (a change since stops the move), to
    `scope` (with `session_id` for a session memory, else "")."""
    row = conn.execute(select(MEMORIES).where(M.id == memory_id).with_for_update()).first()
    if row is None:
        raise MemoryNotFoundError(memory_id)
    if row.version != version:
        raise InvalidInputError(
            "key", f"memory {memory_id} changed while it was being moved; read it again"
        )
    identity = memory_identity(row.key, scope, row.agent_id, session_id, row.project, row.task)
    held = conn.scalar(select(M.id).where(M.identity == identity))
    if held is not None:
        raise InvalidInputError(
            "scope",
            f"a {scope.value} memory with key {row.key!r} is stored already (memory {held}): "
            "delete it, or store this one under another key",
        )
    revision = next_revision(conn)
    keep_version(conn, row, now)
    conn.execute(
        update(MEMORIES)
        .where(M.id == row.id)
        .values(
            identity=identity,
            scope=scope.value,
            session_id=session_id,
            version=row.version + 1,
            updated_by=writer,
            updated_at=now,
            last_used_at=now,
            revision=revision,
        )
    )
    # A link keeps its target's scope and session: who may see it follows the move.
    conn.execute(
        update(MemoryLinkRow)
        .where(LINKS.target_id == row.id)
        .values(target_scope=scope.value, target_session=session_id)
    )
    return fetch(conn, row.id)


__all__ = ["rescope"]
