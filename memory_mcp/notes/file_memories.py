"""The rules for memories that mirror a file (source `file_index`).

A file's memories are replaced as a set: chunks whose text and metadata are unchanged keep
their id, version and vector; changed ones are updated in place (a new version, history
kept); chunks that disappeared are deleted. They all expire together, `ttl_file_index_days`
after the file's last modification, so a change anywhere in the file refreshes all of them
and an untouched, unchanged file is left alone. Writes go through
MemoryService.store_note_chunk, so validation, the secret check and instruction flags
apply to notes as to any memory; the vectors are left to the background worker, so a big
note is keyword-searchable as soon as it is written and never holds up the notes saved
after it.

Who may change what (memory_mcp/rules/permissions.py decides): the personal folder's memories
belong to the agent that indexes them; the shared folder's are swarm memories, and so are a
work tree's `.memory/` folder's, in its project. A note this
server read itself from the shared folder (Origin.FOLDER: the watcher, `memory-mcp index`,
the local hook) is the folder's: any agent watching that folder keeps it in step with the
file. A note whose text the caller sent (Origin.CALLER: the team server's index-note) is
changed or removed only by the agent that indexed it or a lead, checked for the whole
note before anything is written."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_mcp.checks.safety import redact_text
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import EVERY_PROJECT, Caller, MemoryRecord, NoteChunk, Scope, Source
from memory_mcp.notes.reports import FileIndexReport, FileMemory
from memory_mcp.rules.permissions import Origin

if TYPE_CHECKING:
    from memory_mcp.rules.note_memories import NoteMemoryService

log = logging.getLogger(__name__)


def _same_text(old: MemoryRecord, memory: FileMemory) -> bool:
    """The stored chunk says what the file's section says (once its secrets are
    redacted, as storing it would)."""
    return old.value == memory.value or old.value == redact_text(memory.value)[0]


class FileIndexService:
    def __init__(self, memories: NoteMemoryService) -> None:
        self.memories = memories  # the rules of a note's memories

    def expiry_for(self, modified_at: float) -> float | None:
        """Whole seconds, as a file's expiry is shown (ISO 8601, seconds)."""
        ttl = self.memories.gate.policy.default_ttl_seconds(Source.FILE_INDEX)
        if ttl is None:
            return None
        return float(math.floor(min(modified_at, self.memories.gate.clock())) + math.ceil(ttl))

    async def sync_file(
        self,
        caller: Caller,
        scope: Scope,
        file_path: str,
        memories: Sequence[FileMemory],
        modified_at: float,
        *,
        origin: Origin,
        project: str = EVERY_PROJECT,
    ) -> FileIndexReport:
        """Make the file's memories exactly `memories`. `origin`: FOLDER when this server
        read the file itself, CALLER when the text was sent (see the module's docstring);
        a note `caller` may not change is refused whole (PermissionDeniedError naming
        its owner), nothing written."""
        report = FileIndexReport(file_path)
        existing = {r.key: r for r in await self.memories.note_records(caller, scope, file_path)}
        self.memories.check_note_change(caller, list(existing.values()), origin)
        # Indexed when keys held the absolute path: renamed in place, then compared.
        renames = [
            (existing[earlier], m.key)
            for m in memories
            if (earlier := m.earlier_key) is not None
            and earlier in existing
            and m.key not in existing
        ]
        if renames and await self.memories.rename_note_keys(caller, renames, origin):
            records = await self.memories.note_records(caller, scope, file_path)
            existing = {r.key: r for r in records}
        # Lifetime counts from the last change we know of: the file's mtime, or when we
        # first indexed it if that is later. A note copied in with an old mtime (cp -p, a
        # restore) is therefore indexed, not born expired; restarts stay repeatable because
        # first-indexed is the stored created_at.
        first_indexed = min((r.created_at for r in existing.values()), default=None)
        if first_indexed is None:
            first_indexed = self.memories.gate.clock()
        expires_at = self.expiry_for(max(modified_at, first_indexed))
        if expires_at is not None and expires_at <= self.memories.gate.clock():
            report.expired = True
            report.removed = await self.memories.forget_note_records(
                caller, list(existing.values()), origin
            )
            return report

        kept: set[str] = set()
        refresh: list[MemoryRecord] = []
        for memory in memories:
            old = existing.get(memory.key)
            if old is not None and old.metadata == memory.metadata and _same_text(old, memory):
                kept.add(memory.key)
                report.unchanged += 1
                if old.expires_at != expires_at:
                    refresh.append(old)
                continue
            chunk = NoteChunk(
                file_path=file_path,
                scope=scope,
                key=memory.key,
                value=memory.value,
                metadata=memory.metadata,
                expires_at=expires_at,
                project=project,
            )
            try:
                result = await self.memories.store_note_chunk(caller, chunk, origin)
            except InvalidInputError as exc:  # e.g. a secret in a name: skip this chunk only
                log.warning("%s: chunk %s not indexed: %s", file_path, memory.key, exc)
                report.refused.append(f"{memory.key}: {exc}")
                continue
            kept.add(memory.key)
            for r in result.redactions:  # the section is kept, the secret is not
                spot = f"{memory.key}: {r.field} {r.kind} at characters {r.start + 1}-{r.end}"
                log.warning("%s: secret redacted in %s", file_path, spot)
                report.redacted.append(spot)
            if result.created:
                report.created += 1
            elif result.changed:
                report.updated += 1
            else:  # the same once its secrets are redacted
                report.unchanged += 1
        stale = [r for key, r in existing.items() if key not in kept]
        report.removed = await self.memories.forget_note_records(caller, stale, origin)
        await self.memories.set_note_expiry(caller, refresh, expires_at, origin)
        return report

    async def remove_file(
        self, caller: Caller, scope: Scope, file_path: str, *, origin: Origin
    ) -> int:
        records = await self.memories.note_records(caller, scope, file_path)
        return await self.memories.forget_note_records(caller, records, origin)
