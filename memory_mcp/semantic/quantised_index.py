"""The vector index of a big store: each vector as 48 bytes of sign bits and 384 int8 codes,
not 1,536 bytes of float32, so a million fit in ~440 MB; the store keeps the float32
vectors, and the best candidates are re-scored with them (semantic/vectors.py).

A search (`shortlist`): the visibility mask first (VectorIndex._mask: exact, before any
cut); then, over a visible set bigger than BITS_FROM, the Hamming distance of every
vector's sign bits to the query's (NumKong's SIMD kernels: a 48 MB pass) keeps the
SHORTLIST nearest visible slots; the int8 dot product ranks those (or every visible slot
of a smaller set) and keeps k + RESCORE_EXTRA for the exact re-scoring. Every visible
memory is a candidate of the first pass, so a filter never loses a visible match after a
cut, and a reader who sees one memory gets it.

Once built (in the background: semantic/in_process_index.py), a coarse index
(semantic/coarse_index.py) replaces the Hamming pass for a big visible set: it probes a
few inverted lists, the mask applied inside its search, and hands its k + RESCORE_EXTRA
best to the exact re-scoring; when it finds fewer visible candidates than that, the
passes above answer instead. docs/VECTOR_INDEX.md has the measurements behind the
numbers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numkong
import numpy as np

from memory_mcp.models import Visibility
from memory_mcp.semantic.coarse_index import (
    BUILD_CHUNK,
    CoarseIndex,
    lists_for,
    training_sample,
)
from memory_mcp.semantic.vector_index import Scan, VectorIndex
from memory_mcp.store.index_rows import IndexDelta

# A visible set up to this size is ranked by int8 codes directly (gathering 50k codes is
# 19 MB, a few ms); a bigger one is cut by sign bits first.
BITS_FROM = 50_000
# Sign-bit candidates kept for the int8 ranking: recall@10 0.99 at 1M real-text vectors.
SHORTLIST = 2_000
# int8-ranked candidates re-scored exactly beyond the k asked for.
RESCORE_EXTRA = 40


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 codes of each row and its scale (code * scale ~ value)."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    peak = np.abs(rows).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales


class QuantisedIndex(VectorIndex):
    bits: np.ndarray
    codes: np.ndarray
    scales: np.ndarray

    def __init__(self, thresholds: np.ndarray) -> None:
        # Each dimension's sign bit is taken against its median over the store, so every
        # bit splits the vectors in half (MiniLM's dimensions are not centred on 0).
        self.thresholds = np.asarray(thresholds, dtype=np.float32)
        super().__init__(len(self.thresholds))
        self.coarse: CoarseIndex | None = None
        # A delta's changes to the coarse index, made once at its end (coarse removals
        # pass over every list: one pass per delta, not per row).
        self._coarse_adds: dict[int, np.ndarray] = {}
        self._coarse_removals: set[int] = set()
        # The slots a delta changed while a coarse index was being built from a snapshot.
        self._touched_while_building: set[int] | None = None
        # The slots a delta changed while the index was being written to disk from a
        # snapshot (semantic/index_file.py): their written rows are brought up to date.
        self._touched_while_saving: set[int] | None = None

    def apply(self, delta: IndexDelta) -> None:
        super().apply(delta)
        coarse, adds, removals = self.coarse, self._coarse_adds, self._coarse_removals
        if coarse is not None and (adds or removals):
            coarse.remove(np.fromiter(removals, np.int64, len(removals)))
            slots = np.fromiter(adds, np.int64, len(adds))
            coarse.add(slots, np.stack(list(adds.values())) if adds else np.zeros((0, 0)))
        adds.clear()
        removals.clear()

    def _remove(self, memory_id: int) -> None:
        slot = self._slot_of.get(memory_id)
        super()._remove(memory_id)
        if slot is not None:
            self._changed(slot, None)

    def _allocate_vectors(
        self, capacity: int, first: bool, grow: Callable[..., np.ndarray]
    ) -> None:
        width = (self.dimension + 7) // 8
        self.bits = grow(None if first else self.bits, (capacity, width), np.uint8, 0)
        self.codes = grow(None if first else self.codes, (capacity, self.dimension), np.int8, 0)
        self.scales = grow(None if first else self.scales, (capacity,), np.float32, 0)

    def _put_vector(self, slot: int, vector: np.ndarray) -> None:
        self._changed(slot, vector)
        self.bits[slot] = np.packbits(vector > self.thresholds)
        codes, scales = quantise(vector)
        self.codes[slot] = codes[0]
        self.scales[slot] = scales[0]

    def _changed(self, slot: int, vector: np.ndarray | None) -> None:
        """Keep the coarse index (or the one being built, or the copy being written) in
        step with a slot's new vector (None: the slot was freed). Every change of a slot
        comes here: `_put` rewrites the vector of a memory whose tags or expiry alone
        changed too."""
        if self._touched_while_building is not None:
            self._touched_while_building.add(slot)
        if self._touched_while_saving is not None:
            self._touched_while_saving.add(slot)
        if self.coarse is None:
            return
        if vector is None or self.alive[slot]:  # freed, or a memory's vector replaced
            self._coarse_removals.add(slot)
        if vector is None:
            self._coarse_adds.pop(slot, None)
        else:
            self._coarse_adds[slot] = np.asarray(vector, dtype=np.float32)

    def dequantised(self, slots: np.ndarray) -> np.ndarray:
        """The int8 codes of `slots` back as float32 (what the coarse index is built
        from: the store's vectors are read for re-scoring only)."""
        vectors: np.ndarray = self.codes[slots].astype(np.float32) * self.scales[slots, None]
        return vectors

    def coarse_is_due(self) -> bool:
        """Whether a coarse index should be built: there is none, or the store has
        outgrown it (it has at least twice as many lists, about four times the vectors:
        lists that long make a search probe that much more)."""
        return self.coarse is None or lists_for(len(self)) >= 2 * self.coarse.lists

    def coarse_build_started(self) -> Callable[[], CoarseIndex]:
        """Start recording the slots deltas change, and hand back the build itself: run
        it without holding the index (a minute of one core at a million), then
        `attach_coarse` what it made."""
        self._touched_while_building = set()
        size = self._size
        alive = self.alive[:size].copy()

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for start in range(0, size, BUILD_CHUNK):
                slots = np.flatnonzero(alive[start : start + BUILD_CHUNK]) + start
                yield slots, self.dequantised(slots)

        lists = lists_for(int(np.count_nonzero(alive)))

        def build() -> CoarseIndex:
            sample = training_sample(alive, lists, self.dequantised)
            return CoarseIndex.build(self.dimension, lists, sample, chunks())

        return build

    def stop_recording_changes(self) -> None:
        self._touched_while_building = None

    def attach_coarse(self, coarse: CoarseIndex) -> None:
        """Use `coarse` from now on, once the slots changed during its build are brought
        up to date in it."""
        touched = np.fromiter(self._touched_while_building or (), np.int64)
        self.stop_recording_changes()
        coarse.remove(touched)
        live = touched[self.alive[touched]] if len(touched) else touched
        coarse.add(live, self.dequantised(live))
        self.coarse = coarse

    def save_started(self) -> None:
        """Start recording the slots deltas change, while the arrays are written from a
        snapshot without holding the index (semantic/in_process_index.py, persist_if_due)."""
        self._touched_while_saving = set()

    def changed_while_saving(self) -> np.ndarray:
        """The slots changed since `save_started`, in order."""
        return np.array(sorted(self._touched_while_saving or ()), dtype=np.int64)

    def save_ended(self) -> None:
        self._touched_while_saving = None

    def _next_capacity(self) -> int:
        # A quarter more, not twice: at a million, doubling would hold ~1.4 GB while copying.
        return self._capacity + max(1024, self._capacity // 4)

    @classmethod
    def from_exact(cls, exact: VectorIndex) -> QuantisedIndex:
        """The same memories, slots and facts as `exact`, its float32 vectors quantised
        (a store that grew past in_process_index.QUANTISE_FROM)."""
        size = exact._size
        vectors = exact.vectors[:size]
        live = vectors[exact.alive[:size]]
        index = cls(np.median(live, axis=0) if len(live) else np.zeros(exact.dimension))
        index.__dict__.update(
            {
                name: value
                for name, value in exact.__dict__.items()
                if name not in ("vectors", "dimension")
            }
        )
        index._capacity = 0
        index._allocate_vectors(exact._capacity, True, _filled)
        index._capacity = exact._capacity
        index.bits[:size] = np.packbits(vectors > index.thresholds, axis=1)
        index.codes[:size], index.scales[:size] = quantise(vectors) if size else (0, 0)
        return index

    def scan(self, query: np.ndarray, vis: Visibility | None = None) -> Scan:
        """The Hamming distance of every slot's sign bits to the query's: the one pass
        over the whole index, which a search starts in a worker thread while its keyword
        arm reads the store (as the exact index starts its product). Whatever `vis`: a
        visible set too small for the pass is ranked without it."""
        generation = self.generation
        query_bits = np.packbits(query > self.thresholds)
        distances = numkong.cdist(
            query_bits[None],
            self.bits[: self._size],
            metric="hamming",
            dtype="uint1",
            out_dtype="float32",
        )
        return Scan(generation, np.asarray(distances)[0])

    def shortlist(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: Scan | None = None,
    ) -> tuple[list[int], list[int]]:
        """(ids of the about k + RESCORE_EXTRA nearest visible memories by the quantised
        vectors, the visible ones of `also`): the caller re-scores both exactly. `scan`:
        this query's `scan` made earlier (used while no delta has been applied since)."""
        if self._size == 0 or (k <= 0 and not also):
            return [], []
        listed = self.ranked(query, vis, k, scan)
        return listed.ids, self.visible_of(listed, also)

    def ranked(
        self, query: np.ndarray, vis: Visibility, k: int, scan: Scan | None = None
    ) -> Shortlist:
        """`shortlist`'s first half, which needs no keyword candidates: a search runs it
        beside its keyword arm (semantic/in_process_index.py, `prepare`)."""
        n = self._size
        if n == 0:
            return Shortlist(self.generation, [], np.zeros(0, dtype=bool))
        mask = self._mask(vis)
        visible = int(np.count_nonzero(mask))
        ranked: list[int] = []
        want = min(visible, k + RESCORE_EXTRA) if k > 0 else 0
        if want:
            pool = self._coarse_candidates(query, mask, visible, want)
            if pool is None:
                pool = self._exact_pass_candidates(query, mask, visible, want, scan)
            ranked = self.ids[pool].tolist()
        return Shortlist(self.generation, ranked, mask)

    def _exact_pass_candidates(
        self, query: np.ndarray, mask: np.ndarray, visible: int, want: int, scan: Scan | None
    ) -> np.ndarray:
        """The `want` best visible slots by the int8 codes, of every visible slot of a
        small set, else of the SHORTLIST nearest by sign bits."""
        keep = max(SHORTLIST, want)
        if visible <= max(BITS_FROM, keep):
            pool = np.flatnonzero(mask)
        else:
            if scan is None or scan.generation != self.generation:
                scan = self.scan(query)
            distance = scan.scores
            np.putmask(distance, ~mask, np.inf)  # never a candidate: all `keep` are visible
            pool = np.argpartition(distance, keep - 1)[:keep]
        codes, _ = quantise(query)
        approx = (
            np.asarray(numkong.cdist(codes, self.codes[pool], metric="dot", out_dtype="float32"))[0]
            * self.scales[pool]
        )
        if want < len(pool):
            pool = pool[np.argpartition(-approx, want - 1)[:want]]
        return pool

    def _coarse_candidates(
        self, query: np.ndarray, mask: np.ndarray, visible: int, want: int
    ) -> np.ndarray | None:
        """The coarse index's `want` best visible slots; None when there is no coarse
        index, the visible set is small enough for the int8 pass over all of it, or the
        probed lists hold fewer than `want` visible memories."""
        if self.coarse is None or visible <= BITS_FROM:
            return None
        # Every live slot visible (the usual reader of a team's store): no selector.
        selector = None if visible == len(self._slot_of) else mask
        slots = self.coarse.search(query, want, selector)
        slots = slots[mask[slots]]  # the mask decides, whatever the coarse index holds
        return slots if len(slots) >= want else None

    def visible_of(self, listed: Shortlist, also: Sequence[int]) -> list[int]:
        """The memories of `also` that `listed`'s visibility mask lets through (the index
        at `listed.generation`: a slot may be reused after a delta)."""
        if not len(listed.mask):
            return []
        return [
            memory_id
            for memory_id in also
            if (slot := self._slot_of.get(memory_id)) is not None and listed.mask[slot]
        ]


@dataclass(frozen=True)
class Shortlist:
    """A search's quantised candidates (`QuantisedIndex.ranked`) and the visibility mask
    they were cut under, at the index's `generation`."""

    generation: int
    ids: list[int]
    mask: np.ndarray


def rescored(
    query: np.ndarray,
    ranked: Sequence[int],
    also: Sequence[int],
    vectors: dict[int, np.ndarray],
    k: int,
) -> list[tuple[int, float]]:
    """VectorIndex.search's answer from a shortlist and the exact vectors of its ids: the k
    best by exact cosine, then the rest of `also`. An id without a vector (deleted or
    changed since the index last caught up) is left out."""
    scored = sorted(
        (
            (memory_id, float(vectors[memory_id] @ query))
            for memory_id in ranked
            if memory_id in vectors
        ),
        key=lambda hit: -hit[1],
    )[: max(k, 0)]
    seen = {memory_id for memory_id, _ in scored}
    for memory_id in also:
        if memory_id in vectors and memory_id not in seen:
            seen.add(memory_id)
            scored.append((memory_id, float(vectors[memory_id] @ query)))
    return scored


def _filled(
    old: np.ndarray | None, shape: tuple[int, ...], dtype: type, fill: object
) -> np.ndarray:
    return np.full(shape, fill, dtype=dtype)
