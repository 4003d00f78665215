"""The in-process nearest search: every vector of the current model in memory, exact below
QUANTISE_FROM vectors, quantised and persisted beside the store from there on
(semantic/quantised_index.py, semantic/index_file.py), with a coarse index built in the
background (semantic/coarse_index.py): the vector backend (search/ports.py's VectorSearch)
on SQLite, which `Vectors` (semantic/vectors.py) holds. The sync and lock rules are in
vectors.py's docstring.

Neither background job holds the index (`_lock`) for its long part, so searches and
catch-ups go on meanwhile: the coarse build works on a snapshot and brings the slots changed
meanwhile up to date when it is attached; the persist (`persist_if_due`) writes a snapshot's
arrays (0.65-2.3 s at a million), then holds the index only to rewrite the rows changed
meanwhile and write the coarse index and the meta (index_file.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import numpy as np

from memory_mcp.models import Visibility
from memory_mcp.semantic import index_file
from memory_mcp.semantic.coarse_index import CoarseIndex
from memory_mcp.semantic.quantised_index import QuantisedIndex, Shortlist, rescored
from memory_mcp.semantic.vector_index import Scan, VectorIndex
from memory_mcp.store.index_rows import IndexDelta
from memory_mcp.store.stored_vectors import StoredVectors

log = logging.getLogger(__name__)

# From this many vectors on, the in-process index is quantised (int8 and sign bits, the
# store's float32 re-scoring the best) and persisted beside the store: 200k float32
# vectors are 300 MB, and reading them back at every start takes seconds.
QUANTISE_FROM = 200_000
# A full build reads the store this many rows at a time (never every vector at once).
BUILD_PAGE = 20_000
# The persisted index is rewritten by the background worker when `changes_before_save`
# deltas were applied since it was written (at least this many), or any after this many
# seconds.
SAVE_AFTER_CHANGES = 200
SAVE_AFTER_SECONDS = 600.0
# From this many vectors on, a search scans them in a worker thread as soon as its query is
# embedded, while its keyword arm still reads the store (100k x 384: ~6-15 ms here). Below
# it the scan is shorter than the hand-over to a thread.
SCAN_IN_THREAD_FROM = 20_000


def changes_before_save(size: int) -> int:
    """How many deltas the persisted index of an index of `size` memories may be behind
    before it is rewritten: SAVE_AFTER_CHANGES, or 1 % of the index when that is more. A
    start reads what the file lacks from the store (1 % of a million: a few seconds,
    once), while each rewrite at a million writes ~0.8 GB: every 200 deltas, a busy
    server would spend its disk on rewriting it."""
    return max(SAVE_AFTER_CHANGES, size // 100)


class InProcessIndex:
    """Nearest-neighbour search over an in-process copy of the store's vectors, kept in
    step through the store's revision counter (see the module docstring): float32 and
    exact below QUANTISE_FROM vectors, quantised and persisted beside the store from there
    on (semantic/quantised_index.py, semantic/index_file.py)."""

    def __init__(self, rows: StoredVectors, model: str) -> None:
        self.rows = rows
        self.model = model
        self.index: VectorIndex = VectorIndex()
        self._lock = anyio.Lock()
        self._commits_seen: int | None = None
        self._opened = False
        self._saved_revision: int | None = None
        self._saved_generation = 0
        self._saved_at = 0.0
        self._saved_coarse: CoarseIndex | None = None  # the coarse index last written
        self._saving = False  # one save at a time: each writes into the same new folder

    async def catch_up(self) -> None:
        async with self._lock:
            if not self._opened:
                await self._open()
            # Nothing committed since the last catch-up (a microsecond to know on SQLite):
            # nothing to read. Taken before the read, so a commit during it moves it again.
            commits = self.rows.commit_count()
            if commits is not None and commits == self._commits_seen:
                return
            delta = await self.rows.changes_since(self.index.revision, self.model)
            if delta.revision != self.index.revision:
                self.index.apply(delta)
                self._quantise_if_big()
            self._commits_seen = commits

    async def _open(self) -> None:
        """The persisted index when it is valid for this store (then only the changes
        since it was written are read), else every row, a page at a time."""
        store_file = self.rows.index_file_base()
        if store_file is not None:
            revision = await self.rows.revision()
            loaded = await anyio.to_thread.run_sync(
                index_file.load, store_file, self.model, revision
            )
            if loaded is not None:
                self.index, self._saved_revision = loaded, loaded.revision
                self._saved_coarse = loaded.coarse
                self._opened = True
                return
        revision = await self.rows.revision()  # changes from here on are caught up after
        last = 0
        while True:
            page, last = await self.rows.rows_page(self.model, last, BUILD_PAGE)
            if not page:
                break
            self.index.apply(IndexDelta(self.index.revision, upserted=page))
            self._quantise_if_big()
        self.index.revision = revision
        self._opened = True

    def _quantise_if_big(self) -> None:
        if len(self.index) >= QUANTISE_FROM and not isinstance(self.index, QuantisedIndex):
            self.index = QuantisedIndex.from_exact(self.index)

    async def persist_if_due(self, now: float) -> bool:
        """Write a quantised index beside the store when it is behind the store by enough
        (`changes_before_save`, or any change after SAVE_AFTER_SECONDS): the background
        worker asks after each catch-up. Whether it wrote."""
        index, store_file = self.index, self.rows.index_file_base()
        if not isinstance(index, QuantisedIndex) or store_file is None:
            return False
        # A coarse index took a minute or more to build: written at once.
        new_coarse = index.coarse is not None and index.coarse is not self._saved_coarse
        if index.revision == self._saved_revision and not new_coarse:
            return False
        behind = index.generation - self._saved_generation
        if (
            self._saved_revision is not None
            and not new_coarse
            and behind < changes_before_save(len(index))
            and (now - self._saved_at < SAVE_AFTER_SECONDS)
        ):
            return False
        async with self._lock:
            if self._saving:
                return False
            self._saving = True
            snapshot = index_file.snapshot_of(index)
            index.save_started()
        try:
            fresh = await anyio.to_thread.run_sync(index_file.fresh_folder, store_file)
            # The big write, without the lock: searches and deltas go on meanwhile.
            await anyio.to_thread.run_sync(index_file.write_arrays, snapshot, fresh)
            replaced = await self._finish_save(index, snapshot, fresh, store_file, now)
            # Removed without the lock either way: the old folder, or the unfinished one.
            await anyio.to_thread.run_sync(index_file.remove, replaced or fresh)
        finally:
            index.save_ended()
            self._saving = False
        return replaced is not None

    async def _finish_save(
        self,
        index: QuantisedIndex,
        snapshot: index_file.Snapshot,
        fresh: Path,
        store_file: Path,
        now: float,
    ) -> Path | None:
        """index_file.finish with the index held (no delta while the rows changed since the
        snapshot are rewritten), unless `index` is no longer this search's: the folder it
        replaced, None when it did not finish."""
        async with self._lock:
            if self.index is not index:
                return None
            replaced = await anyio.to_thread.run_sync(
                index_file.finish,
                index,
                snapshot,
                fresh,
                store_file,
                self.model,
                index.changed_while_saving(),
            )
            # The file is labelled with the snapshot's revision: the deltas applied since
            # count towards the next save, as a start catches up on them.
            self._saved_revision = snapshot.revision
            self._saved_generation = snapshot.generation
            self._saved_at = now
            self._saved_coarse = index.coarse
        return replaced

    async def build_coarse_if_due(self) -> bool:
        """Give a quantised index its coarse index (semantic/coarse_index.py) when it has
        none or has outgrown it: built in a worker thread from a snapshot, without
        holding the index, so searches and deltas go on meanwhile (the Hamming pass, or
        the outgrown coarse index, answers until it is attached); the slots changed
        meanwhile are brought up to date when it is. Whether it built one."""
        index = self.index
        if not isinstance(index, QuantisedIndex) or not index.coarse_is_due():
            return False
        async with self._lock:
            build = index.coarse_build_started()
        try:
            # abandon_on_cancel: a shutdown does not wait for the build.
            coarse = await anyio.to_thread.run_sync(build, abandon_on_cancel=True)
            async with self._lock:
                if self.index is not index:
                    return False
                index.attach_coarse(coarse)
        finally:
            index.stop_recording_changes()
        log.info("coarse vector index built over %d memories", len(coarse))
        return True

    async def scan(self, query: np.ndarray, vis: Visibility) -> Scan | None:
        index = self.index
        if len(index) < SCAN_IN_THREAD_FROM:
            return None
        if isinstance(index, QuantisedIndex) and index.coarse is not None:
            return None  # the coarse index searches instead (a scan only if it cannot)
        return await anyio.to_thread.run_sync(index.scan, query, vis)

    async def prepare(
        self, query: np.ndarray, vis: Visibility, k: int, scan: Scan | None
    ) -> Prepared | None:
        """The part of `nearest` that needs no keyword candidates, run beside a search's
        keyword arm: on a quantised index its shortlist and their exact vectors (the
        mask, the cut and the store read: ~12 ms at 1M memories that otherwise came after
        both arms). None on an exact index (its `nearest` is one masked top-k)."""
        index = self.index
        if not isinstance(index, QuantisedIndex):
            return None
        async with self._lock:  # a delta applied meanwhile could reuse a slot
            listed = await anyio.to_thread.run_sync(index.ranked, query, vis, k, scan)
        exact = await self.rows.vectors_of(self.model, listed.ids)
        return Prepared(index, k, listed, exact)

    async def exact_vectors(
        self, memory_ids: Sequence[int], vis: Visibility
    ) -> dict[int, np.ndarray]:
        """The stored vectors of `memory_ids` when a search re-scores with them (a
        quantised index), read by a search's keyword arm for its own candidates; {} on
        an exact index, which has them. `nearest` applies `vis` to them itself."""
        if not isinstance(self.index, QuantisedIndex) or not memory_ids:
            return {}
        return await self.rows.vectors_of(self.model, memory_ids)

    async def nearest(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: Scan | None = None,
        prepared: Prepared | None = None,
        known: Mapping[int, np.ndarray] | None = None,
    ) -> list[tuple[int, float]]:
        """`prepared`: this search's `prepare`, used while the index is the same and at
        the same generation; `known`: exact vectors read already (`exact_vectors`)."""
        index = self.index
        if not isinstance(index, QuantisedIndex):
            return index.search(query, vis, k, also, scan)
        async with self._lock:  # a delta applied meanwhile could reuse a slot
            if (
                prepared is not None
                and prepared.index is index
                and prepared.k == k
                and prepared.listed.generation == index.generation
            ):
                ranked, exact = prepared.listed.ids, dict(prepared.exact)
                visible_also = index.visible_of(prepared.listed, also)
            else:
                ranked, visible_also = await anyio.to_thread.run_sync(
                    index.shortlist, query, vis, k, also, scan
                )
                exact = {}
        exact.update(known or {})
        unread = [i for i in dict.fromkeys(ranked + visible_also) if i not in exact]
        exact.update(await self.rows.vectors_of(self.model, unread))
        return rescored(query, ranked, visible_also, exact, k)


@dataclass(frozen=True)
class Prepared:
    """`InProcessIndex.prepare`'s answer: the shortlist of one search, cut on `index`,
    and the exact vectors of its ids."""

    index: QuantisedIndex
    k: int
    listed: Shortlist
    exact: dict[int, np.ndarray]
