"""A note's memories as a set (memory_mcp/notes/): finding the memories that mirror a note
file, and removing or expiring them together, each change asked of the one rule
(permissions.check, Change.NOTE) before anything is written. A mixin of MemoryService
(service.py), which writes a note's chunks itself (store_note_chunk: the write path every
memory takes)."""

from __future__ import annotations

from collections.abc import Sequence

from memory_mcp import permissions
from memory_mcp.models import Caller, MemoryRecord, Scope, Source
from memory_mcp.permissions import Change, Origin, Target
from memory_mcp.store.repository import MemoryStore


class NoteRecords:
    store: MemoryStore

    def _note_owner(self, caller: Caller, scope: Scope) -> str | None:
        return caller.agent_id if scope is not Scope.SWARM else None

    async def note_records(
        self, caller: Caller, scope: Scope, file_path: str
    ) -> list[MemoryRecord]:
        """The memories mirroring `file_path` in `caller`'s folder of `scope`."""
        return await self.store.records_for_file(
            file_path, scope, self._note_owner(caller, scope), Source.FILE_INDEX
        )

    async def note_paths(self, caller: Caller, scope: Scope, prefix: str) -> set[str]:
        """The note files under `prefix` that have memories in `caller`'s folder of `scope`."""
        return await self.store.file_paths(
            prefix, scope, self._note_owner(caller, scope), Source.FILE_INDEX
        )

    def check_note_change(
        self, caller: Caller, records: Sequence[MemoryRecord], origin: Origin
    ) -> None:
        """Refuse, naming the owner, unless `caller` may change or remove every one of a
        note's memories (`records`, from note_records) with content of `origin`: a note is
        replaced as a set, so it is checked whole before anything is written."""
        for record in records:
            permissions.check(caller, Target.of(record), Change.NOTE, origin)

    async def forget_note_records(
        self, caller: Caller, records: list[MemoryRecord], origin: Origin
    ) -> int:
        """Delete memories that note_records returned (their file or chunk is gone)."""
        notes = [r for r in records if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, notes, origin)
        return await self.store.delete([r.id for r in notes])

    async def set_note_expiry(
        self,
        caller: Caller,
        records: list[MemoryRecord],
        expires_at: float | None,
        origin: Origin,
    ) -> None:
        notes = [r for r in records if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, notes, origin)
        await self.store.set_expiry([r.id for r in notes], expires_at)
