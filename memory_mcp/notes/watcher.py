"""Watch the memory folders and keep their notes indexed while the server runs.

Start-up order matters: the OS watch is set up first, then the folders are reconciled
with the store (changes made while the server was down), then queued events are applied.
A change made during the reconcile is therefore seen twice at worst, never missed.
Events are debounced by watchfiles (`QUIET_MS` without a change, at most `MAX_WAIT_MS`),
and a path queued twice is indexed once, so a burst of saves indexes a file once. Two
lanes apply them: notes up to `SMALL_NOTE_BYTES` (and removals) in one, bigger notes
and changed directories in the other, so a small note never waits while a big one is
written. In each lane the newest batch goes first (queue.py), so a note saved after a
burst of a thousand waits for one of them, not all. The indexer lets one task at a time
work on a given file."""

from __future__ import annotations

import logging
import math
import os
import stat
from pathlib import Path

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from watchfiles import Change, awatch

from memory_mcp.notes.indexer import NoteIndexer
from memory_mcp.notes.paths import NoteFolder, is_editor_temp
from memory_mcp.notes.queue import NoteQueue

log = logging.getLogger(__name__)

QUIET_MS = 150
MAX_WAIT_MS = 1_000
# watchfiles' thread returns this often to check the stop event; only shutdown speed.
RUST_TIMEOUT_MS = 1_000
# ~30 chunks: written in well under a second. Bigger files take the other lane.
SMALL_NOTE_BYTES = 64_000


class _ChangeFilter:
    """Cheap pre-filter in watchfiles' thread: drop hidden paths (inside the roots) and
    editor droppings. Other names pass: they may be directories moved in or out."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [str(r) + os.sep for r in roots]

    def __call__(self, change: Change, path: str) -> bool:
        inside = next((path[len(r) :] for r in self.roots if path.startswith(r)), None)
        if inside is None:
            return False
        parts = inside.split(os.sep)
        if any(part.startswith(".") for part in parts):
            return False
        return not is_editor_temp(parts[-1])


class NoteWatcher:
    def __init__(self, indexer: NoteIndexer, create_personal: bool = True) -> None:
        self.indexer = indexer
        self.create_personal = create_personal
        self.ready = anyio.Event()  # set once the start-up reconcile is done
        self._stop = anyio.Event()

    def stop(self) -> None:
        """Let watchfiles' thread return promptly (cancellation cannot reach into it)."""
        self._stop.set()

    def _watchable(self) -> list[NoteFolder]:
        folders: list[NoteFolder] = []
        for folder in self.indexer.folders:
            if not folder.root.is_dir() and folder.label == "personal" and self.create_personal:
                try:
                    folder.root.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    log.error("cannot create the memory folder %s: %s", folder.root, exc)
            if folder.root.is_dir():
                folders.append(folder)
            else:
                log.warning("memory folder %s does not exist; not watching it", folder.root)
        return folders

    async def run(self) -> None:
        folders = self._watchable()
        if not folders:
            log.info("watching no memory folder")
            self.ready.set()
            return
        send, receive = anyio.create_memory_object_stream[set[str]](math.inf)
        small_send, small_receive = anyio.create_memory_object_stream[set[str]](math.inf)
        large_send, large_receive = anyio.create_memory_object_stream[set[str]](math.inf)
        # Closed however run ends: cancelled before the tasks below own them (a server
        # stopped while it was still opening), they would be left open.
        with send, receive, small_send, small_receive, large_send, large_receive:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._listen, [f.root for f in folders], send)
                # One turn of the loop lets the listener set up its OS watches before we scan.
                await anyio.lowlevel.checkpoint()
                for folder in folders:
                    await self._reconcile(folder)
                self.ready.set()
                log.info("watching memory folders: %s", ", ".join(str(f.root) for f in folders))
                tasks.start_soon(self._apply_changes, small_receive)
                tasks.start_soon(self._apply_changes, large_receive)
                await self._route(receive, small_send, large_send)

    async def _route(
        self,
        receive: MemoryObjectReceiveStream[set[str]],
        small: MemoryObjectSendStream[set[str]],
        large: MemoryObjectSendStream[set[str]],
    ) -> None:
        async with receive, small, large:
            async for paths in receive:
                big = {path for path in paths if _is_big(path)}
                if paths - big:
                    await small.send(paths - big)
                if big:
                    await large.send(big)

    async def _reconcile(self, folder: NoteFolder) -> None:
        try:
            report = await self.indexer.reconcile(folder)
        except Exception:  # a top-level loop: log and keep watching
            log.exception("reconciling %s failed", folder.root)
            return
        log.info(
            "memory folder %s: %d notes indexed, %d unchanged, %d removed",
            folder.root,
            report.indexed,
            report.unchanged,
            report.removed,
        )

    async def _listen(self, roots: list[Path], send: MemoryObjectSendStream[set[str]]) -> None:
        """OS notifications, or polling when they fail (e.g. the inotify watch limit).
        If both fail, the server keeps serving; the next start reconciles the folders."""
        async with send:
            for polling in (False, True):
                try:
                    async for changes in awatch(
                        *roots,
                        watch_filter=_ChangeFilter(roots),
                        debounce=MAX_WAIT_MS,
                        step=QUIET_MS,
                        stop_event=self._stop,
                        rust_timeout=RUST_TIMEOUT_MS,
                        force_polling=True if polling else None,
                        ignore_permission_denied=True,
                    ):
                        await send.send({path for _, path in changes})
                    return
                except Exception:  # a top-level loop: log, then degrade instead of dying
                    log.exception(
                        "watching the memory folders failed%s",
                        "; notes are now indexed only at start"
                        if polling
                        else "; falling back to polling",
                    )

    async def _apply_changes(self, receive: MemoryObjectReceiveStream[set[str]]) -> None:
        """One lane: the paths of every batch received, newest batch first, one path at
        a time, taking in new batches between two paths (queue.py)."""
        queue = NoteQueue()
        async with receive:
            while True:
                if not queue:
                    try:
                        queue.add(await receive.receive())
                    except anyio.EndOfStream:
                        return
                while True:  # whatever arrived meanwhile goes before the rest
                    try:
                        queue.add(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                path = queue.take()
                if path is None:
                    continue
                try:
                    await self.indexer.apply([path])
                except Exception:  # a top-level loop: log and keep watching
                    log.exception("indexing a changed note failed: %s", path)


def _is_big(path: str) -> bool:
    """A directory (it is reconciled whole) or a file over SMALL_NOTE_BYTES; a missing path
    is a removal, which is quick."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) or info.st_size > SMALL_NOTE_BYTES
