"""Memories arriving in another project: which move as they are, which are a stale copy of
a note chunk held there already (merged into it), and which clash.

A note's memories belong in the project of the folder that holds the note: a work tree's
`.memory/` notes are its project's. When the work tree is renamed (it gains an `origin`
remote: `folder-3fa2c1` becomes `acme/x`; or its remote's host is now in the name) the
indexer carries them to the new name the next time it reads the note (notes/
file_memories.py), and `projects move` carries whatever is left. Either way a chunk may
be held in the new project already (indexed there by a version that left the old copy
behind): the one there is the file's current text, kept; the arriving one is dropped into
it, its links carried over (store/note_copies.py), so a note is never found twice and never
refuses a move. Any other memory holding an arriving one's key there is a clash: two
memories are never merged but these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_mcp.models import MemoryRecord, Source, memory_identity
from memory_mcp.store.repository import MemoryStore


@dataclass
class Arrival:
    """Where each memory arriving in a project lands."""

    moves: list[MemoryRecord] = field(default_factory=list)
    # (the arriving copy, the note memory there that it is dropped into)
    merges: list[tuple[MemoryRecord, MemoryRecord]] = field(default_factory=list)
    clashes: list[str] = field(default_factory=list)


def is_note(record: MemoryRecord) -> bool:
    return record.source is Source.FILE_INDEX


async def arrival(store: MemoryStore, records: Sequence[MemoryRecord], project: str) -> Arrival:
    """Sort `records` moving to `project` (those there already are left out): a note
    memory whose identity there a note memory holds (one not moving, or one moving that
    lands first: the most recently changed) is merged into it; any other holder is a
    clash (its key listed)."""
    arriving = [r for r in records if r.project != project]
    # The most recently changed copy of a chunk lands; older ones merge into it.
    arriving.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
    identity = {
        r.id: memory_identity(r.key, r.scope, r.agent_id, r.session_id, project, r.task)
        for r in arriving
    }
    moving = {r.id for r in arriving}
    held = await store.owners(identity.values())
    holders = await store.fetch_many(
        [memory_id for memory_id, _ in held.values() if memory_id not in moving]
    )
    landed: dict[str, MemoryRecord] = {}
    result = Arrival()
    for record in arriving:
        there = landed.get(identity[record.id])
        if there is None and identity[record.id] in held:
            there = holders.get(held[identity[record.id]][0])
        if there is None:
            landed[identity[record.id]] = record
            result.moves.append(record)
        elif is_note(record) and is_note(there):
            result.merges.append((record, there))
        else:
            result.clashes.append(record.key)
    return result


__all__ = ["Arrival", "arrival", "is_note"]
