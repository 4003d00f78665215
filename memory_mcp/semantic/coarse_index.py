"""A big store's coarse vector index: faiss's inverted file (IVF) with int8 codes, keyed by
the quantised index's slots. A search probes the few lists nearest the query instead of
passing over every vector, so at a million memories its candidates take ~2 ms instead of
the ~10-13 ms of a Hamming pass over every sign bit (docs/VECTOR_INDEX.md, "Coarse index").

It only proposes candidates: the caller's visibility mask is applied inside the search (a
faiss ID selector, before the top-k cut) and the store's float32 vectors re-score them
(semantic/quantised_index.py). A search it cannot answer in full (fewer visible
candidates than asked for) goes to the exact passes instead.

faiss is imported when a coarse index is first built or loaded: a store below
in_process_index.QUANTISE_FROM never pays for it."""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

# Inverted lists: about 4 x sqrt(vectors), a power of two (4,096 at a million, 2,048 at
# 200,000); a search probes about 2 x sqrt(lists) of them (128 of 4,096: 3 % of the
# vectors). On the 1M bench set (300 queries, 90 candidates re-scored exactly, one
# thread; docs/VECTOR_INDEX.md): 1,024 lists / 64 probed recall@10 0.985 in 5.5 ms,
# 2,048 / 96 0.984 in 4.3 ms, 4,096 / 128 0.988 in 3.1 ms. None: derived from the
# size (tests set small fixed ones).
LISTS: int | None = None
PROBES: int | None = None
MIN_LISTS, MAX_LISTS = 64, 16_384
# k-means trains on TRAIN_PER_LIST vectors per list (faiss wants at least 39): 4,096
# lists train in ~60 s of one core, most of the build.
TRAIN_PER_LIST = 40
# Rows dequantised and added at a time while building (~75 MB of float32).
BUILD_CHUNK = 50_000
# The build takes a minute or two of one core at a million: it runs in a background
# thread on one OpenMP thread, leaving the other core to searches. A search splits its
# probed lists over two (1M: 3.1 -> 2.0 ms), by then the keyword arm has mostly ended.
BUILD_THREADS = 1
SEARCH_THREADS = 2


def lists_for(vectors: int) -> int:
    """How many inverted lists a coarse index over `vectors` vectors gets."""
    if LISTS is not None:
        return LISTS
    wanted = 4 * math.sqrt(max(vectors, 1))
    return int(min(MAX_LISTS, max(MIN_LISTS, 2 ** round(math.log2(wanted)))))


def probes_for(lists: int) -> int:
    """How many of `lists` lists a search probes."""
    if PROBES is not None:
        return min(PROBES, lists)
    return min(lists, round(2 * math.sqrt(lists)))


def _faiss() -> Any:
    # faiss's loader logs each SIMD build it tries at INFO: not a server's business.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    # OpenMP reads these when faiss's own libgomp loads; omp_set_num_threads alone would
    # set it for the calling thread only, and builds and searches run in worker threads.
    os.environ.setdefault("OMP_NUM_THREADS", str(BUILD_THREADS))
    # Waiting threads sleep instead of spinning (ONNX Runtime's are set the same way,
    # semantic/onnx_embedder.py): on a busy machine a spinning thread holds the core its
    # partner needs, and a two-thread search of 200,000 vectors took a p50 of 25-48 ms
    # and 16-19 ms of CPU instead of 0.75 ms and 0.8 ms (load ~10 on 2 cores).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import faiss  # 0.1 s of import and 66 MB installed: only for a big store

    return faiss


class CoarseIndex:
    """faiss IVF-SQ8 over inner product (the vectors are unit length), ids = slots."""

    def __init__(self, ivf: Any) -> None:
        self._faiss = _faiss()
        self.ivf = ivf
        # A search with one query splits its probed lists over the threads (faiss's
        # default splits queries, and there is one).
        ivf.parallel_mode = 1

    def __len__(self) -> int:
        return int(self.ivf.ntotal)

    @property
    def lists(self) -> int:
        return int(self.ivf.nlist)

    @classmethod
    def build(
        cls,
        dimension: int,
        lists: int,
        sample: np.ndarray,
        chunks: Iterator[tuple[np.ndarray, np.ndarray]],
    ) -> CoarseIndex:
        """`lists` lists trained on `sample` (float32 rows), filled from `chunks` of
        (slots, vectors). Runs in the calling thread (OpenMP's thread count is the
        calling thread's own)."""
        faiss = _faiss()
        faiss.omp_set_num_threads(BUILD_THREADS)
        quantiser = faiss.IndexFlatIP(dimension)
        ivf = faiss.IndexIVFScalarQuantizer(
            quantiser, dimension, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        ivf.train(np.ascontiguousarray(sample, dtype=np.float32))
        index = cls(ivf)
        for slots, vectors in chunks:
            index.add(slots, vectors)
        return index

    def add(self, slots: np.ndarray, vectors: np.ndarray) -> None:
        if len(slots):
            self.ivf.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32),
                np.ascontiguousarray(slots, dtype=np.int64),
            )

    def remove(self, slots: np.ndarray) -> None:
        """Forget `slots` (one pass over the lists' ids, ~1 ms at a million: batched per
        delta by the caller)."""
        if len(slots):
            self.ivf.remove_ids(
                self._faiss.IDSelectorBatch(np.ascontiguousarray(slots, dtype=np.int64))
            )

    def remove_from(self, first_slot: int) -> None:
        """Forget every slot from `first_slot` on (one pass over the lists' ids)."""
        self.ivf.remove_ids(self._faiss.IDSelectorRange(first_slot, np.iinfo(np.int64).max))

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
        """The slots of the (up to) k best candidates for `query` among those `mask` lets
        through (None: every slot held), best first."""
        faiss = self._faiss
        faiss.omp_set_num_threads(SEARCH_THREADS)  # this (worker) thread's searches
        params = faiss.SearchParametersIVF(nprobe=probes_for(self.lists))
        if mask is not None:
            # Bit i of byte i // 8 is slot i (faiss reads the bitmap little-endian).
            bitmap = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
        _, slots = self.ivf.search(
            np.ascontiguousarray(query, dtype=np.float32)[None], k, params=params
        )
        found: np.ndarray = slots[0]
        return found[found >= 0]

    def save(self, path: Path) -> None:
        self._faiss.write_index(self.ivf, str(path))

    @classmethod
    def load(cls, path: Path) -> CoarseIndex:
        try:
            ivf = _faiss().read_index(str(path))
        except RuntimeError as exc:  # faiss says what is wrong with the file
            raise ValueError(f"coarse index: {exc}") from exc
        return cls(ivf)


def training_sample(
    alive: np.ndarray, lists: int, vectors_of: Callable[[np.ndarray], np.ndarray], seed: int = 0
) -> np.ndarray:
    """`lists` * TRAIN_PER_LIST live rows, chosen at random (all of them in a smaller set)."""
    live = np.flatnonzero(alive)
    want = min(len(live), lists * TRAIN_PER_LIST)
    chosen = np.sort(np.random.default_rng(seed).choice(live, want, replace=False))
    return vectors_of(chosen)
