"""An in-process cosine index over every memory's vector, with the facts needed to filter it.

Brute force in numpy: at 100k x 384 float32 one scan is a few milliseconds here, faster than
sqlite-vec, and exact. Filters (visibility, scope, source, tags, expiry, time of last change,
project, task, archived) become a boolean mask applied before the top-k cut, so a filtered
search never comes back short.

The index follows the store's `revision` counter: before each search its owner
(`InProcessIndex` in semantic/vectors.py) asks the store for rows changed since its revision and
tombstones of deleted ones and applies them here, so writes by other processes on the same
database are seen on the next search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from memory_mcp.models import Scope, Visibility
from memory_mcp.store.index_rows import IndexDelta, IndexRow

_SCOPE_CODE = {Scope.SESSION.value: 0, Scope.AGENT.value: 1, Scope.SWARM.value: 2}
# From this many vectors on, a scan runs its two halves on two threads (numpy releases the
# GIL in each product). BLAS itself runs single-threaded (memory_mcp/__init__.py): 100k
# vectors take ~13 ms on one thread here and ~7 ms on two. A search's scan reads its
# vectors from memory, not cache (the query embedding's weights have just passed through
# it), so even 10k (15 MB) gain: a search's p50 0.35-0.4 ms faster, alternating runs.
SPLIT_SCAN_FROM = 5_000
# A search whose visibility lets through under 1/GATHER_BELOW of the slots (a project's
# in a store of many projects) scores only those: gathering a visible row costs about
# twice streaming it (100k vectors, one thread: 18 ms all of them, 1.8 ms the 5 % of
# one project of 20, about the same as all at a quarter).
GATHER_BELOW = 8


@cache
def _scan_helper() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="vector-scan")


class _Codes:
    """Strings (agent ids, sessions, sources, projects, tasks) as small ints, for
    vectorised comparisons."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str) -> int:
        return self._codes.setdefault(value, len(self._codes))

    def lookup(self, value: str) -> int:
        return self._codes.get(value, -1)


@dataclass(frozen=True)
class _KeptMask:
    """VectorIndex._mask's last answer: for `key` (generation, size, the visibility
    without its time), from `now` until `valid_until` (an expiry)."""

    key: tuple[object, ...]
    now: float
    valid_until: float
    mask: np.ndarray


@dataclass(frozen=True)
class Scan:
    """Every slot's similarity to one query, from `VectorIndex.scan`; valid while the
    index is at the same `generation` (no delta applied since). `only`: the slots it
    scored when it scored only those a visibility lets through (the others -inf), for a
    search under the same mask; None: every slot."""

    generation: int
    scores: np.ndarray
    only: np.ndarray | None = None

    def serves(self, generation: int, mask: np.ndarray) -> bool:
        """Whether a search of the index at `generation` under `mask` may use it."""
        if self.generation != generation:
            return False
        return self.only is None or self.only is mask or np.array_equal(self.only, mask)


class VectorIndex:
    # Parallel arrays, one slot per memory (grown by doubling).
    vectors: np.ndarray
    ids: np.ndarray
    alive: np.ndarray
    owner: np.ndarray
    session: np.ndarray
    scope: np.ndarray
    source: np.ndarray
    expires: np.ndarray
    updated: np.ndarray
    project: np.ndarray
    task: np.ndarray  # -1: not a task's working memory
    archived: np.ndarray
    # Validity windows (rules/validity.py): from (when stated) and to (inf: current).
    valid_from: np.ndarray
    valid_to: np.ndarray

    def __init__(self, dimension: int = 384) -> None:
        self.dimension = dimension
        self.revision = -1
        self.generation = 0  # bumped by every applied delta: a Scan made before is stale
        self._size = 0
        self._capacity = 0
        self._slot_of: dict[int, int] = {}
        self._free: list[int] = []
        self._codes = _Codes()
        self._kept_mask: _KeptMask | None = None
        self._allocate(1024)

    def _allocate(self, capacity: int) -> None:
        def grow(
            old: np.ndarray | None, shape: tuple[int, ...], dtype: type, fill: object
        ) -> np.ndarray:
            new: np.ndarray = np.full(shape, fill, dtype=dtype)
            if old is not None:
                new[: len(old)] = old
            return new

        first = self._capacity == 0
        self._allocate_vectors(capacity, first, grow)
        self.ids = grow(None if first else self.ids, (capacity,), np.int64, -1)
        self.alive = grow(None if first else self.alive, (capacity,), np.bool_, False)
        self.owner = grow(None if first else self.owner, (capacity,), np.int32, -1)
        self.session = grow(None if first else self.session, (capacity,), np.int32, -1)
        self.scope = grow(None if first else self.scope, (capacity,), np.int8, -1)
        self.source = grow(None if first else self.source, (capacity,), np.int32, -1)
        self.expires = grow(None if first else self.expires, (capacity,), np.float64, np.inf)
        self.updated = grow(None if first else self.updated, (capacity,), np.float64, 0.0)
        self.project = grow(None if first else self.project, (capacity,), np.int32, -1)
        self.task = grow(None if first else self.task, (capacity,), np.int32, -1)
        self.archived = grow(None if first else self.archived, (capacity,), np.bool_, False)
        self.valid_from = grow(None if first else self.valid_from, (capacity,), np.float64, -np.inf)
        self.valid_to = grow(None if first else self.valid_to, (capacity,), np.float64, np.inf)
        self.tags: list[frozenset[str]] = (
            [frozenset()] * capacity
            if first
            else self.tags + [frozenset()] * (capacity - self._capacity)
        )
        self._capacity = capacity

    def _allocate_vectors(
        self, capacity: int, first: bool, grow: Callable[..., np.ndarray]
    ) -> None:
        self.vectors = grow(
            None if first else self.vectors, (capacity, self.dimension), np.float32, 0
        )

    def _put_vector(self, slot: int, vector: np.ndarray) -> None:
        self.vectors[slot] = vector

    def _next_capacity(self) -> int:
        return self._capacity * 2

    def __len__(self) -> int:
        return len(self._slot_of)

    def apply(self, delta: IndexDelta) -> None:
        self.generation += 1
        for row in delta.upserted:
            if row.vector is None:
                self._remove(row.id)  # content changed and its new vector is not ready yet
            else:
                self._put(row)
        for memory_id in delta.deleted:
            self._remove(memory_id)
        self.revision = delta.revision

    def _put(self, row: IndexRow) -> None:
        slot = self._slot_of.get(row.id)
        if slot is None:
            if self._free:
                slot = self._free.pop()
            else:
                if self._size == self._capacity:
                    self._allocate(self._next_capacity())
                slot = self._size
                self._size += 1
            self._slot_of[row.id] = slot
        assert row.vector is not None
        self._put_vector(slot, row.vector)
        self.ids[slot] = row.id
        self.alive[slot] = True
        self.owner[slot] = self._codes.code("agent:" + row.agent_id)
        self.session[slot] = self._codes.code("session:" + row.session_id)
        self.scope[slot] = _SCOPE_CODE[row.scope]
        self.source[slot] = self._codes.code("source:" + row.source)
        self.expires[slot] = np.inf if row.expires_at is None else row.expires_at
        self.updated[slot] = row.updated_at
        self.project[slot] = self._codes.code("project:" + row.project)
        self.task[slot] = -1 if row.task is None else self._codes.code("task:" + row.task)
        self.archived[slot] = row.archived
        self.valid_from[slot] = -np.inf if row.valid_from is None else row.valid_from
        self.valid_to[slot] = np.inf if row.valid_to is None else row.valid_to
        self.tags[slot] = frozenset(row.tags)

    def _remove(self, memory_id: int) -> None:
        slot = self._slot_of.pop(memory_id, None)
        if slot is not None:
            self.alive[slot] = False
            self.ids[slot] = -1
            self._free.append(slot)

    def _mask(self, vis: Visibility) -> np.ndarray:
        """Which slots `vis` lets through (read-only). The last one is kept: the next
        search of the same caller with the same filters reuses it while no delta was
        applied and no memory it lets through has expired since (~3 ms of each search at
        1M memories: a dozen passes over the slots)."""
        key = (self.generation, self._size, replace(vis, now=0.0))
        kept = self._kept_mask
        if kept is not None and kept.key == key and kept.now <= vis.now < kept.valid_until:
            return kept.mask
        mask = self._new_mask(vis)
        valid_until = np.inf
        if not vis.include_expired:  # the first expiry among the memories it lets through
            valid_until = float(np.min(self.expires[: self._size][mask], initial=np.inf))
        mask.setflags(write=False)
        self._kept_mask = _KeptMask(key, vis.now, valid_until, mask)
        return mask

    def _new_mask(self, vis: Visibility) -> np.ndarray:
        n = self._size
        caller = vis.caller
        own = self.owner[:n] == self._codes.lookup("agent:" + caller.agent_id)
        scope = self.scope[:n]
        by_scope = {
            Scope.SWARM: scope == _SCOPE_CODE[Scope.SWARM.value],
            Scope.AGENT: own & (scope == _SCOPE_CODE[Scope.AGENT.value]),
            Scope.SESSION: own
            & (scope == _SCOPE_CODE[Scope.SESSION.value])
            & (self.session[:n] == self._codes.lookup("session:" + caller.session_id)),
        }
        mask: np.ndarray
        if vis.scope is None:
            mask = by_scope[Scope.SWARM] | by_scope[Scope.AGENT] | by_scope[Scope.SESSION]
        else:
            mask = by_scope[vis.scope]
        mask &= self.alive[:n]
        projects = vis.shown_projects
        if projects is not None:
            project = self.project[:n]
            shown = np.zeros(n, dtype=np.bool_)
            for name in projects:  # a few: the current project and `*`, or one's grants
                shown |= project == self._codes.lookup("project:" + name)
            mask &= shown
        if not vis.every_task:
            task = self.task[:n]
            none = task == -1
            if vis.task is not None:
                none |= task == self._codes.lookup("task:" + vis.task)
            mask &= none
        if not vis.include_archived:
            mask &= ~self.archived[:n]
        if vis.as_of is not None:  # what held then (store/visibility.py says the same)
            mask &= (self.valid_from[:n] <= vis.as_of) & (self.valid_to[:n] > vis.as_of)
            if not vis.include_expired:
                mask &= self.expires[:n] > vis.as_of
        else:
            if not vis.include_expired:
                mask &= self.expires[:n] > vis.now
            if not vis.include_superseded:
                mask &= self.valid_to[:n] > vis.now
        if vis.updated_since is not None:
            mask &= self.updated[:n] >= vis.updated_since
        if vis.updated_until is not None:
            mask &= self.updated[:n] <= vis.updated_until
        if vis.source is not None:
            mask &= self.source[:n] == self._codes.lookup("source:" + vis.source.value)
        if vis.tags:
            wanted = frozenset(vis.tags)
            candidates = np.flatnonzero(mask)
            keep = np.fromiter((wanted <= self.tags[i] for i in candidates), bool, len(candidates))
            mask[:] = False
            mask[candidates[keep]] = True
        return mask

    def scan(self, query: np.ndarray, vis: Visibility | None = None) -> Scan:
        """The one matrix-vector product of a search: numpy releases the GIL here, so a
        worker thread can run it while the keyword arm reads the store. Of every slot,
        or, when `vis` lets through only a small share of them, of those alone."""
        generation = self.generation
        n = self._size
        if vis is not None:
            mask = self._mask(vis)
            slots = np.flatnonzero(mask)
            if len(slots) * GATHER_BELOW < n:
                scores = np.full(n, -np.inf, dtype=np.float32)
                scores[slots] = self.vectors[slots] @ query
                return Scan(generation, scores, mask)
        scores = np.empty(n, dtype=np.float32)
        half = n // 2 if n >= SPLIT_SCAN_FROM else n
        second = None
        if half < n:
            second = _scan_helper().submit(
                np.matmul, self.vectors[half:n], query, out=scores[half:]
            )
        np.matmul(self.vectors[:half], query, out=scores[:half])
        if second is not None:
            second.result()
        return Scan(generation, scores)

    def search(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: Scan | None = None,
    ) -> list[tuple[int, float]]:
        """(memory id, cosine similarity) of the k nearest visible memories, best first,
        then those of the visible memories in `also` (the keyword arm's candidates) that
        are not among them: the scan computes every similarity anyway. `scan`: this
        query's scan made earlier (used while no delta has been applied since)."""
        n = self._size
        if n == 0 or (k <= 0 and not also):
            return []
        mask = self._mask(vis)
        allowed = np.flatnonzero(mask)
        if len(allowed) == 0:
            return []
        # One matrix-vector product (of every row unless few are visible), then the mask.
        if scan is None or not scan.serves(self.generation, mask):
            scan = self.scan(query, vis)
        scores = scan.scores
        scores[~mask] = -np.inf
        k = min(k, len(allowed))
        top = np.argpartition(-scores, k - 1)[:k] if k > 0 else np.zeros(0, dtype=np.int64)
        top = top[np.argsort(-scores[top])]
        hits = list(zip(self.ids[top].tolist(), scores[top].tolist(), strict=True))
        seen = {memory_id for memory_id, _ in hits}
        for memory_id in also:
            slot = self._slot_of.get(memory_id)
            if slot is not None and mask[slot] and memory_id not in seen:
                seen.add(memory_id)
                hits.append((memory_id, float(scores[slot])))
        return hits
