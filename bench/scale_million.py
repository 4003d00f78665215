"""The rows of the scale data: `rows` unit vectors from the corpus's real ones (step 3 of
bench/scale_data.py).

There are ~100k real texts on this machine, not a million, and a million embedded texts
would take weeks here. So every real vector is a row once, and each other row is a new
point among real ones: a real vector (its parent) and two of its `NEIGHBOURS` nearest real
vectors, mixed with Dirichlet weights `WEIGHTS` (the parent weighs most, on average half),
plus a random direction of norm `NOISE`, renormalised. The new points lie where real texts
lie, in the dense regions and the sparse ones alike, and each is near but not on a real
vector: an index sees clusters of near-neighbours as a big store of real memories has
(the same fact said many ways), never exact duplicates. The rows are shuffled (seeded), so
the first N are a fair sample for a store of N.

Written: `million.npy` (rows x 384 float32), `million_parent.npy` (the corpus row each row
comes from), `million_is_real.npy` (whether the row is that text's own vector); the
vectors last, so their presence means the step finished."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

NEIGHBOURS = 10
WEIGHTS = (2.0, 1.0, 1.0)  # the parent, then its two neighbours
NOISE = 0.15
BLOCK = 1_024  # real vectors per block of the neighbour search: ~1.3 GB at 100k


def nearest_real(real: np.ndarray, k: int, say: Callable[[str], None]) -> np.ndarray:
    """The k nearest other real vectors of each real vector (cosine: they are unit length),
    by the exact scan, one block at a time."""
    found = np.empty((len(real), k), dtype=np.int64)
    for start in range(0, len(real), BLOCK):
        block = real[start : start + BLOCK]
        distances = block @ real.T
        distances *= -1  # in place: no second block of scores
        distances[np.arange(len(block)), np.arange(start, start + len(block))] = np.inf
        found[start : start + len(block)] = np.argpartition(distances, k - 1, axis=1)[:, :k]
        if (start // BLOCK) % 10 == 9:
            say(f"  nearest neighbours: {start + len(block):,} / {len(real):,}")
    return found


def new_points(
    real: np.ndarray, neighbours: np.ndarray, parents: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """One new unit vector per parent (see the module's docstring)."""
    k = neighbours.shape[1]
    first = rng.integers(k, size=len(parents))
    second = rng.integers(k - 1, size=len(parents))
    second += second >= first  # two different neighbours
    weights = rng.dirichlet(WEIGHTS, size=len(parents)).astype(np.float32)
    points = (
        weights[:, :1] * real[parents]
        + weights[:, 1:2] * real[neighbours[parents, first]]
        + weights[:, 2:] * real[neighbours[parents, second]]
    )
    noise = rng.standard_normal(points.shape).astype(np.float32)
    points += noise * (NOISE / np.linalg.norm(noise, axis=1, keepdims=True))
    unit: np.ndarray = points / np.linalg.norm(points, axis=1, keepdims=True)
    return unit


def save_npy(path: Path, array: np.ndarray) -> None:
    """Written whole or not at all: a stopped run never leaves a short file behind."""
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as out:
        np.save(out, array)
    os.replace(partial, path)


def make_million(out: Path, rows: int, seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    began = time.perf_counter()
    real = np.load(out / "vectors.npy")
    if len(real) < 3 or rows < len(real):
        raise SystemExit(
            f"memory-mcp: {rows:,} rows cannot hold {len(real):,} real vectors once each "
            "(and new points need at least 3 real ones)"
        )
    k = min(NEIGHBOURS, len(real) - 1)
    neighbours = nearest_real(real, k, say)
    rng = np.random.default_rng(seed)
    parents = np.concatenate([np.arange(len(real)), rng.integers(len(real), size=rows - len(real))])
    order = rng.permutation(rows)  # row i of the files is row order[i] of the above
    where = np.empty_like(order)
    where[order] = np.arange(rows)
    vectors = np.empty((rows, real.shape[1]), dtype=np.float32)  # filled in place: 1.5 GB
    vectors[where[: len(real)]] = real
    for start in range(len(real), rows, 100_000):
        stop = min(start + 100_000, rows)
        vectors[where[start:stop]] = new_points(real, neighbours, parents[start:stop], rng)
    save_npy(out / "million_parent.npy", parents[order])
    save_npy(out / "million_is_real.npy", order < len(real))
    save_npy(out / "million.npy", vectors)
    seconds = time.perf_counter() - began
    say(f"rows: {rows:,} written in {seconds:.0f} s")
    return {
        "rows": rows,
        "seed": seed,
        "real": len(real),
        "neighbours": k,
        "weights": list(WEIGHTS),
        "noise": NOISE,
        "seconds": round(seconds, 1),
    }
