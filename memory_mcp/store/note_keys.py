"""A note's memories renamed in place (MemoryStore.rename_keys): the same id, version,
history, links and vector under the key the indexer gives the chunk now. Notes were keyed
by their file's absolute path before keys held the path inside the memory folder
(notes/indexer.py); the indexer finds such memories by their file and renames them before
it compares, so re-indexing an older store neither duplicates a note nor drops its links.
The keyword index follows the key by itself (SQLite's triggers, PostgreSQL's generated
column)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select, update

from memory_mcp.models import Scope, memory_identity
from memory_mcp.store.memories_table import MEMORIES, M


def rename_keys(conn: Connection, renames: Sequence[tuple[int, str]]) -> int:
    """Give each memory id its new key (and the identity that key makes); a key another
    memory holds already is left alone (the old one then goes as a stale chunk). How many
    were renamed."""
    renamed = 0
    for memory_id, key in renames:
        row = conn.execute(select(MEMORIES).where(M.id == memory_id).with_for_update()).first()
        if row is None or row.key == key:
            continue
        scope = Scope(row.scope)
        identity = memory_identity(key, scope, row.agent_id, row.session_id, row.project, row.task)
        if conn.scalar(select(M.id).where(M.identity == identity)) is not None:
            continue
        conn.execute(update(MEMORIES).where(M.id == memory_id).values(key=key, identity=identity))
        renamed += 1
    return renamed
