"""A note's memories, the rules (the notes feature, memory_mcp/notes/, reads the files and
calls these): a note's chunk is written by the one write every memory takes (the gate,
rules/gate.py: `store_note_chunk`); a note's memories are found, removed or expired as a
set, each change asked of the one rule (permissions.check, Change.NOTE) before anything
is written."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_mcp.checks.new_memory import checked_memory
from memory_mcp.errors import InvalidInputError, PermissionDeniedError
from memory_mcp.models import (
    NOTE_KEY_PREFIX,
    Caller,
    MemoryRecord,
    NoteChunk,
    Scope,
    Source,
    UpsertOutcome,
)
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Origin, Target

if TYPE_CHECKING:
    from memory_mcp.rules.gate import Gate


class NoteMemoryService:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def store_note_chunk(
        self, caller: Caller, chunk: NoteChunk, origin: Origin
    ) -> UpsertOutcome:
        """Mirror one chunk of a note. The vector is left to the background worker, so a
        big note's chunks never hold up the notes saved after it. A shared note's chunk
        another agent indexed may be updated by a lead, or when this server read the note
        from the shared folder itself (`origin` FOLDER: see rules/permissions.py)."""
        new = checked_memory(
            caller,
            self.gate.policy.max_value_chars,
            key=chunk.key,
            value=chunk.value,
            scope=chunk.scope,
            source=Source.FILE_INDEX,
            tags=[],
            metadata=chunk.metadata,
            expires_at=chunk.expires_at,
            file_path=chunk.file_path,
            project=chunk.project,
        )
        # The file gives the text, its place (metadata), expiry and tags (none); what it
        # does not hold, a re-index keeps (StoreRequest's rule).
        new.kept = frozenset({"pinned", "confidence", "about_agent"})
        return await self.gate.write(caller, new, self.gate.clock(), embed_now=False, origin=origin)

    def _note_owner(self, caller: Caller, scope: Scope) -> str | None:
        return caller.agent_id if scope is not Scope.SWARM else None

    async def note_records(
        self, caller: Caller, scope: Scope, file_path: str
    ) -> list[MemoryRecord]:
        """The memories mirroring `file_path` in `caller`'s folder of `scope`."""
        return await self.gate.store.records_for_file(
            file_path, scope, self._note_owner(caller, scope), Source.FILE_INDEX
        )

    async def note_paths(self, caller: Caller, scope: Scope, prefix: str) -> set[str]:
        """The note files under `prefix` that have memories in `caller`'s folder of `scope`."""
        return await self.gate.store.file_paths(
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
        return await self.gate.store.delete([r.id for r in notes])

    async def rename_note_keys(
        self,
        caller: Caller,
        renames: Sequence[tuple[MemoryRecord, str]],
        origin: Origin,
    ) -> int:
        """Give a note's memories (from note_records) the keys the indexer makes now, in
        place (store/note_keys.py): the same ids, history, links and vectors."""
        notes = [(r, key) for r, key in renames if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, [r for r, _ in notes], origin)
        return await self.gate.store.rename_keys([(r.id, key) for r, key in notes])

    async def set_note_expiry(
        self,
        caller: Caller,
        records: list[MemoryRecord],
        expires_at: float | None,
        origin: Origin,
    ) -> None:
        notes = [r for r in records if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, notes, origin)
        await self.gate.store.set_expiry([r.id for r in notes], expires_at)


def refuse_note_key(key: str, source: Source) -> None:
    """A memory stored by hand may not take a note's key (the indexer would take it over)."""
    if source is not Source.FILE_INDEX and key.strip().startswith(NOTE_KEY_PREFIX):
        raise InvalidInputError(
            "key",
            f"keys starting with {NOTE_KEY_PREFIX!r} are reserved for notes indexed from "
            "the memory folders; choose another key",
        )


def refuse_deleting_a_live_note(record: MemoryRecord) -> None:
    """A note's memory mirrors its file: deleted alone, it would come back at the next
    edit or start-up. Once the file is gone, the memory may go too."""
    path = record.file_path
    if record.source is not Source.FILE_INDEX or not path or not os.path.lexists(path):
        return
    start, end = record.metadata.get("start_line"), record.metadata.get("end_line")
    lines = f" lines {start}-{end}" if start and end else ""
    raise PermissionDeniedError(
        f"memory {record.id} mirrors note {path}{lines}; edit or delete the file instead "
        "(its memories follow it)"
    )


__all__ = ["NoteMemoryService", "refuse_deleting_a_live_note", "refuse_note_key"]
