"""The transaction of store_memory with `memories` (MemoryStore.upsert_each): memories not
stored yet inserted in a few statements (as an import inserts them, writes.insert_new),
the others upserted one by one as a single store would (writes.upsert_row), each answered
with its outcome; any refusal (another agent's memory, a version) raises and the whole
transaction is rolled back."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select

from memory_mcp.errors import KeyNotFoundError
from memory_mcp.models import Caps, NewMemory, Source, UpsertOutcome
from memory_mcp.store import writes
from memory_mcp.store.access_counts import PendingAccess
from memory_mcp.store.eviction import evict_over_caps
from memory_mcp.store.memories_table import IN_CHUNK, MEMORIES, M, next_revision, record_from_row


def upsert_each(
    conn: Connection,
    reads: dict[int, PendingAccess],
    items: Sequence[tuple[NewMemory, int | None, bool]],
    now: float,
    cap: Caps,
) -> list[UpsertOutcome]:
    """Each item (the memory, its expected version, whether it may update another
    agent's) written at `now`: the outcomes in the items' order."""
    writes.write_accesses(conn, reads)  # counted reads first: eviction sees them
    identities = [new.identity for new, _, _ in items]
    stored: set[str] = set()
    for start in range(0, len(identities), IN_CHUNK):
        chunk = identities[start : start + IN_CHUNK]
        stored.update(conn.scalars(select(M.identity).where(M.identity.in_(chunk))))
    seen: set[str] = set()
    fresh: list[int] = []
    for index, (new, expected, _) in enumerate(items):
        if new.identity not in stored and new.identity not in seen:
            if expected not in (None, 0):
                raise KeyNotFoundError(new.key, expected)
            fresh.append(index)
        seen.add(new.identity)
    outcomes: dict[int, UpsertOutcome] = {}
    if fresh:
        revision = next_revision(conn)
        ids = writes.insert_new(conn, [(items[i][0], now) for i in fresh], revision)
        records = {}
        for start in range(0, len(fresh), IN_CHUNK):
            some = [ids[items[i][0].identity] for i in fresh[start : start + IN_CHUNK]]
            for row in conn.execute(select(MEMORIES).where(M.id.in_(some))):
                records[row.id] = record_from_row(row)
        # Per owner and project, its newest memory: the one a cap never evicts.
        newest: dict[tuple[str, str], int] = {}
        for i in fresh:
            new = items[i][0]
            memory_id = ids[new.identity]
            outcomes[i] = UpsertOutcome(record=records[memory_id], created=True, changed=True)
            if new.source is not Source.FILE_INDEX:
                place = (new.agent_id, new.project)
                newest[place] = max(newest.get(place, 0), memory_id)
        for (agent, project), keep_id in sorted(newest.items()):
            evicted = evict_over_caps(conn, agent, project, cap, keep_id, revision, now)
            outcomes[fresh[0]].evicted_ids += evicted
    for index, (new, expected, may_overwrite) in enumerate(items):
        if index not in outcomes:
            outcomes[index] = writes.upsert_row(conn, new, expected, now, cap, may_overwrite)
    return [outcomes[index] for index in range(len(items))]


__all__ = ["upsert_each"]
