"""python -m bench.lab.coarse_lists DATA LISTS:PROBES[,PROBES...] ...: how many inverted
lists and probes the coarse index needs (semantic/coarse_index.py), on `bench scale-data`'s
1M rows. For each LISTS: faiss IVF-SQ8 (the product's index class) trained on
TRAIN_PER_LIST rows a list and filled with every row; then, per PROBES, 300 queries ask for
CANDIDATES (a search's k + 40), re-scored by the float32 rows as the product does, and
recall@10 against the exact top 10 and the search's p50 (one thread) are printed.
docs/VECTOR_INDEX.md has a run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

QUERIES = 300
CANDIDATES = 90
TRAIN_PER_LIST = int(os.environ.get("TRAIN_PER_LIST", "40"))


def exact_top10(rows: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    best = np.full((len(queries), 10), -9.0, np.float32)
    best_rows = np.zeros((len(queries), 10), np.int64)
    for start in range(0, len(rows), 100_000):
        block = np.asarray(rows[start : start + 100_000])
        scores = np.concatenate([best, queries @ block.T], axis=1)
        ids = np.arange(start, start + len(block))[None].repeat(len(queries), 0)
        every = np.concatenate([best_rows, ids], axis=1)
        top = np.argpartition(-scores, 9, axis=1)[:, :10]
        best = np.take_along_axis(scores, top, 1)
        best_rows = np.take_along_axis(every, top, 1)
    return [set(r.tolist()) for r in best_rows]


def main(data: Path, specs: list[str]) -> None:
    import faiss

    faiss.omp_set_num_threads(1)
    rows = np.load(data / "million.npy", mmap_mode="r")
    queries = np.load(data / "bench_queries.npy")[:QUERIES].astype(np.float32)
    truth = exact_top10(rows, queries)
    rng = np.random.default_rng(0)
    for spec in specs:
        lists_text, probes_text = spec.split(":")
        lists = int(lists_text)
        ivf = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(rows.shape[1]),
            rows.shape[1],
            lists,
            faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )
        began = time.perf_counter()
        sample = rng.choice(len(rows), lists * TRAIN_PER_LIST, replace=False)
        ivf.train(np.asarray(rows[np.sort(sample)]))
        for start in range(0, len(rows), 100_000):
            ivf.add(np.ascontiguousarray(rows[start : start + 100_000]))
        print(f"{lists} lists built in {time.perf_counter() - began:.0f} s", flush=True)
        for probes in map(int, probes_text.split(",")):
            params = faiss.SearchParametersIVF()
            params.nprobe = probes
            seconds, found = [], 0
            for query, best in zip(queries, truth, strict=True):
                began = time.perf_counter()
                _, ids = ivf.search(query[None], CANDIDATES, params=params)
                seconds.append(time.perf_counter() - began)
                ids = np.sort(ids[0][ids[0] >= 0])
                top = ids[np.argsort(-(np.asarray(rows[ids]) @ query))[:10]]
                found += len(set(top.tolist()) & best)
            print(
                f"  {probes} probes: recall@10 {found / (10 * len(queries)):.4f}, "
                f"search p50 {np.median(seconds) * 1000:.2f} ms",
                flush=True,
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
