"""Two ONNX files of the embedding model timed against each other, alternating in one
process (the machine's speed drifts from minute to minute, so A and B share each minute):

    python -m bench.onnx_ab OLD.onnx NEW.onnx [--rounds 5] [--queries 100] [--batch 256]

Each round times, for A then B (then B then A in the next round), one short query
embedded `--queries` times through `OnnxEmbedder` (tokenizer and pooling included, as a
search embeds its query) and one batch of `--batch` synthetic texts of 4-250 words (as an
import embeds them). Prints p50/p95 per query, texts/s per batch, the largest difference
between the two files' vectors, the machine and its load average. Wall time on a shared
machine moves with the others' load; the process's CPU time per query and per text
(all threads) moves much less, so both are printed."""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

from bench.stats import percentile_ms, table
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder

QUERY = "how do we run the tests?"


def synthetic_texts(count: int, seed: int = 9) -> list[str]:
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(3_000)
    ]
    return [" ".join(rng.choices(words, k=rng.randint(4, 250))) for _ in range(count)]


def loaded(path: Path) -> OnnxEmbedder:
    embedder = OnnxEmbedder(lambda: path)
    embedder._load()  # in this thread: the timings start with a loaded session
    return embedder


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.onnx_ab")
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args(argv)

    embedders = {"A": loaded(args.a), "B": loaded(args.b)}
    texts = synthetic_texts(args.batch)
    queries: dict[str, list[float]] = {"A": [], "B": []}
    query_cpu: dict[str, list[float]] = {"A": [], "B": []}
    rates: dict[str, list[float]] = {"A": [], "B": []}
    text_cpu: dict[str, list[float]] = {"A": [], "B": []}
    loads = [os.getloadavg()[0]]
    for embedder in embedders.values():  # warm-up: first runs allocate
        embedder.encode([QUERY])
        embedder.encode(texts[:32])
    for round_ in range(args.rounds):
        for name in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
            embedder = embedders[name]
            for _ in range(args.queries):
                started, cpu = time.perf_counter(), time.process_time()
                embedder.encode([QUERY])
                queries[name].append(time.perf_counter() - started)
                query_cpu[name].append(time.process_time() - cpu)
            started, cpu = time.perf_counter(), time.process_time()
            embedder.encode(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
            text_cpu[name].append((time.process_time() - cpu) / len(texts))
        loads.append(os.getloadavg()[0])
        print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)

    sample = texts[:64] + [QUERY, "", "Ünïcödé 日本語 🙂"]
    diff = float(np.abs(embedders["A"].encode(sample) - embedders["B"].encode(sample)).max())
    rows = [
        [
            f"{name}: {path.name}",
            f"{percentile_ms(queries[name], 50):.2f}",
            f"{percentile_ms(queries[name], 95):.2f}",
            f"{percentile_ms(query_cpu[name], 50):.2f}",
            f"{float(np.median(rates[name])):.1f}",
            f"{percentile_ms(text_cpu[name], 50):.2f}",
            " / ".join(f"{r:.0f}" for r in rates[name]),
        ]
        for name, path in (("A", args.a), ("B", args.b))
    ]
    header = ["file", "query p50 ms", "p95 ms", "CPU ms p50", "batch texts/s", "CPU ms/text"]
    print(table([*header, "texts/s by round"], rows))
    print(f"max |A - B| over {len(sample)} texts: {diff:.2e}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
        f"load average during the run: {min(loads):.1f}-{max(loads):.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
