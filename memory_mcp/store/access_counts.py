"""Counting reads without writing on the read path.

`memory-get` counts each access (access_count, last_accessed_at and the LRU clock). Writing
that inline made every read a write transaction: reads queued behind writers and failed
when the store was busy. Instead, accesses are tallied here and written in one batch in the
background (MemoryStore.flush_accesses). Counting is best effort: a batch that cannot be
written is kept for the next try, and what is still pending when a process is killed is
lost (a read count, never a memory)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PendingAccess:
    count: int
    last: float


class AccessTally:
    def __init__(self) -> None:
        self._pending: dict[int, PendingAccess] = {}

    def add(self, memory_id: int, now: float) -> int:
        """Count one access; returns how many of this memory's accesses are not written yet
        (this one included), for the caller to add to what it read from the store."""
        entry = self._pending.get(memory_id)
        if entry is None:
            entry = self._pending[memory_id] = PendingAccess(0, now)
        entry.count += 1
        entry.last = max(entry.last, now)
        return entry.count

    def take(self) -> dict[int, PendingAccess]:
        """Everything pending, for one write; the tally starts again from zero."""
        taken, self._pending = self._pending, {}
        return taken

    def put_back(self, taken: dict[int, PendingAccess]) -> None:
        """A batch that could not be written joins what was counted meanwhile."""
        for memory_id, entry in taken.items():
            current = self._pending.get(memory_id)
            if current is None:
                self._pending[memory_id] = entry
            else:
                current.count += entry.count
                current.last = max(current.last, entry.last)

    def __len__(self) -> int:
        return len(self._pending)
