"""Notes → memories: index one file, remove one file, reconcile a folder with the store.

The mapping from a note to its memories lives here (keys, values, metadata); the rules
(replace as a set, expiry, who owns what) live in FileIndexService. A chunk's key is
`file:<path>#<heading anchor>[~n][:part]`, so it stays the same while its section keeps
its heading: an edit elsewhere in the file leaves it alone. `<path>` is the note's path
inside its memory folder (`deploy/checklist.md`), never where the folder is: no home
folder in keys or exports, and the same note keyed alike on every machine. (A note sent
by the team server's index-note comes with only the sender's absolute path: that one.)
Keys held the absolute path before; such memories are renamed when their file is next
indexed (FileMemory.earlier_key)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Awaitable, Iterable
from pathlib import Path
from typing import TypeVar

import anyio

from memory_mcp.checks.validation import MAX_KEY_CHARS
from memory_mcp.models import NOTE_KEY_PREFIX, Caller
from memory_mcp.notes.chunking import Chunk, chunk_note
from memory_mcp.notes.file_memories import FileIndexService
from memory_mcp.notes.paths import (
    NoteFolder,
    NotePath,
    NoteSkipped,
    canonical,
    folder_of,
    locate,
    read_note,
    walk_notes,
)
from memory_mcp.notes.reports import FileMemory, NoteOutcome, ReconcileReport
from memory_mcp.rules.permissions import Origin

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_NOTE_BYTES = 1_000_000
# A note that cuts into more chunks than this is refused whole, like one over the size limit:
# a note at that limit in ~2,000-character chunks makes about 500-700; only a pathological
# structure (thousands of one-line sections) goes past, and it would cost minutes of work.
MAX_NOTE_CHUNKS = 1_000
MAX_FILES_PER_FOLDER = 20_000
# The indexer reads every note itself, from a folder on this machine's disk: for a shared
# note, the folder owns it (rules/permissions.py), so any agent's server keeps it in step.
READ_HERE = Origin.FOLDER


async def _whole(step: Awaitable[T]) -> T:
    """Run one file's store work to the end even if the caller is being cancelled: a
    file's memories are never left half replaced, and no query is cut off mid-flight
    (SQLAlchemy + aiosqlite 0.22 can hang at shutdown on a cancelled query)."""
    with anyio.CancelScope(shield=True):
        result = await step
    return result


def _slug(heading: str) -> str:
    title = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w]+", "-", title).strip("-") or "_"


def chunk_keys(path: str, chunks: list[Chunk]) -> list[str]:
    """Stable, unique keys of the note at `path`: the heading path as an anchor, numbered
    when a heading path repeats (~2) or a section spans several chunks (:2)."""
    seen: dict[str, int] = {}
    keys: list[str] = []
    for chunk in chunks:
        headings = chunk.heading_path.split(" > ") if chunk.heading_path else []
        anchor = "/".join(_slug(h) for h in headings) or "top"
        if chunk.part == 1:
            seen[anchor] = seen.get(anchor, 0) + 1
        occurrence = seen.get(anchor, 1)
        key = f"{NOTE_KEY_PREFIX}{path}#{anchor}"
        key += f"~{occurrence}" if occurrence > 1 else ""
        key += f":{chunk.part}" if chunk.part > 1 else ""
        if len(key) > MAX_KEY_CHARS:
            digest = hashlib.sha256(key.encode()).hexdigest()[:16]
            key = f"{key[: MAX_KEY_CHARS - 18]}~{digest}"
        keys.append(key)
    return keys


def note_name(note: NotePath) -> str:
    """What a note's keys and metadata name it by: its path inside its memory folder, or
    its absolute path when no folder is known (index-note)."""
    return note.relative.as_posix() if note.relative.parts else str(note.path)


def note_memories(note: NotePath, text: str) -> list[FileMemory]:
    chunks = chunk_note(text, markdown=note.markdown)
    name = note_name(note)
    keys = chunk_keys(name, chunks)
    absolute = str(note.path)
    earlier: list[str | None] = [None] * len(chunks)
    if name != absolute:
        earlier = list(chunk_keys(absolute, chunks))
    return [
        FileMemory(
            key=key,
            value=chunk.text,
            metadata={
                "file_path": name,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "heading_path": chunk.heading_path,
                "folder": note.folder.label,
            },
            earlier_key=earlier_key,
        )
        for key, earlier_key, chunk in zip(keys, earlier, chunks, strict=True)
    ]


class NoteIndexer:
    def __init__(
        self,
        files: FileIndexService,
        caller: Caller,
        folders: list[NoteFolder],
        max_bytes: int = MAX_NOTE_BYTES,
        max_chunks: int = MAX_NOTE_CHUNKS,
        allow_hardlinks: bool = False,
    ) -> None:
        self.files = files
        self.caller = caller
        self.folders = folders
        self.max_bytes = max_bytes
        self.max_chunks = max_chunks
        self.allow_hardlinks = allow_hardlinks
        # One task at a time per file: the watcher indexes small and big notes in two lanes.
        self._busy: dict[Path, anyio.Lock] = {}

    def locate(self, raw: str | os.PathLike[str], cwd: Path | None = None) -> NotePath | None:
        return locate(raw, self.folders, cwd)

    async def index(self, note: NotePath) -> NoteOutcome:
        """Bring the store in line with the file: index it, or remove it when it is gone
        or no longer a note (a link, binary, too big)."""
        lock = self._busy.setdefault(note.path, anyio.Lock())
        try:
            async with lock:
                return await self._index(note)
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._busy.pop(note.path, None)

    async def _index(self, note: NotePath) -> NoteOutcome:
        path = str(note.path)
        try:
            content = read_note(note.path, self.max_bytes, self.allow_hardlinks)
            memories = note_memories(note, content.text)
            if len(memories) > self.max_chunks:
                raise NoteSkipped(
                    f"it cuts into {len(memories):,} chunks, over the {self.max_chunks:,}-chunk "
                    "limit (MEMORY_MCP_NOTE_MAX_CHUNKS); split it into several notes",
                    warn=True,
                )
        except NoteSkipped as skipped:
            log.log(
                logging.WARNING if skipped.warn else logging.DEBUG,
                "note %s skipped: %s",
                path,
                skipped.reason,
            )
            if not skipped.remove:
                return NoteOutcome(path, "skipped", skipped.reason)
            removed = await _whole(
                self.files.remove_file(self.caller, note.folder.scope, path, origin=READ_HERE)
            )
            action = "removed" if removed else "skipped"
            return NoteOutcome(path, action, skipped.reason)
        report = await _whole(
            self.files.sync_file(
                self.caller,
                note.folder.scope,
                path,
                memories,
                content.modified_at,
                origin=READ_HERE,
                project=note.folder.project,
            )
        )
        if report.changed:
            log.info("indexed note %s", report.describe())
        return NoteOutcome(path, "indexed", report=report)

    async def index_path(self, raw: str | os.PathLike[str], cwd: Path | None = None) -> NoteOutcome:
        note = self.locate(raw, cwd)
        if note is None:
            return NoteOutcome(os.fspath(raw), "skipped", "not a note inside a memory folder")
        return await self.index(note)

    async def apply(self, raw_paths: Iterable[str]) -> list[NoteOutcome]:
        """One batch of filesystem changes. Removals go first, so a rename (old path gone,
        new path added) never shows the same note twice. A changed directory (created,
        moved in or out) is reconciled as a whole: moving a directory reports only it."""
        notes: dict[Path, NotePath] = {}
        directories: list[Path] = []
        for raw in raw_paths:
            note = self.locate(raw)
            if note is not None:
                notes[note.path] = note
                continue
            path = canonical(raw)
            if (
                path is not None
                and not path.name.startswith(".")
                and (path.is_dir() or not path.exists())
            ):
                directories.append(path)
        ordered = sorted(notes.values(), key=lambda n: (n.path.exists(), _size(n), str(n.path)))
        outcomes = [await self.index(note) for note in ordered]
        for directory in directories:
            found = folder_of(directory, self.folders)
            if found is not None:
                await self.reconcile(found[0], under=directory)
        return outcomes

    async def reconcile(self, folder: NoteFolder, under: Path | None = None) -> ReconcileReport:
        """Make the store match the folder (or the directory `under` inside it): index new
        and changed notes, remove the memories of notes that are gone. Unchanged notes are
        read and compared, never rewritten."""
        base = under or folder.root
        report = ReconcileReport()
        nested = {f.root for f in self.folders if f.root != folder.root}
        on_disk = walk_notes(base, folder, nested, MAX_FILES_PER_FOLDER)
        if len(on_disk) >= MAX_FILES_PER_FOLDER:
            log.warning("%s holds over %d notes; indexing the first", base, MAX_FILES_PER_FOLDER)
        prefix = str(base) + os.sep
        indexed = await _whole(self.files.memories.note_paths(self.caller, folder.scope, prefix))
        present = {str(n.path) for n in on_disk}
        for path in sorted(indexed - present):
            # Through index(): under the file's lock, and a note created since the walk
            # (by the other lane of the watcher) is indexed rather than removed.
            gone = self.locate(path)
            if gone is None:
                removed = await _whole(
                    self.files.remove_file(self.caller, folder.scope, path, origin=READ_HERE)
                )
            else:
                removed = (await self.index(gone)).action == "removed"
            report.removed += int(bool(removed))
        for note in sorted(on_disk, key=_size):  # small notes first
            outcome = await self.index(note)
            if outcome.report is not None and outcome.report.changed:
                report.indexed += 1
            elif outcome.action == "indexed":
                report.unchanged += 1
            else:
                report.skipped.append(outcome.describe())
        return report


def _size(note: NotePath) -> int:
    try:
        return note.path.lstat().st_size
    except OSError:
        return 0
