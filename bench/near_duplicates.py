"""How close the bundled model puts a memory and its near-duplicate: the numbers behind
store_memory's `similar` threshold (memory_mcp/semantic/similar.py, docs/RETRIEVAL.md).

    python -m bench.near_duplicates [LOCOMO_DIR]

Cosine similarity of the stored vectors (all-MiniLM-L6-v2 with the passages recipe, as
the server embeds every memory) of the pairs in
bench/data/near_duplicates.json: paraphrases and corrections (should be surfaced), the same
topic with a different fact, and unrelated pairs; then, for each candidate threshold, the
share of each kind at or above it. With a LoCoMo folder it also times the check against
the write it follows, and prints how often a turn of a real conversation would surface at
least one earlier turn: the noise a threshold adds to ordinary writes."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

import anyio
import numpy as np

from bench.settings import BenchSettings
from bench.stats import percentile_ms
from memory_mcp.app.root import open_app
from memory_mcp.models import StoreRequest
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.semantic.onnx_model import ensure_in_child
from memory_mcp.semantic.passages import embed_memories

DATA = Path(__file__).parent / "data" / "near_duplicates.json"
THRESHOLDS = (0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85)


def pair_cosines(vectors: dict[str, np.ndarray], pairs: list[tuple[str, str]]) -> np.ndarray:
    return np.array([float(vectors[a] @ vectors[b]) for a, b in pairs])


def describe(name: str, scores: np.ndarray) -> str:
    q = np.quantile(scores, [0.0, 0.05, 0.5, 0.95, 1.0])
    return (
        f"{name:<11} n={len(scores):<4} min {q[0]:.3f}  p5 {q[1]:.3f}  median {q[2]:.3f}  "
        f"p95 {q[3]:.3f}  max {q[4]:.3f}"
    )


async def embed_all(embedder: OnnxEmbedder, texts: list[str]) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    rows = await embed_memories(embedder, unique)
    return dict(zip(unique, rows, strict=True))


def locomo_turns(folder: Path, labelled: bool) -> list[list[str]]:
    """Each conversation's turns as the LoCoMo benchmark stores them ("Speaker: text"), or
    the text alone."""
    conversations = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data.get("conversation", data)
        turns = []
        for name, session in conversation.items():
            if name.startswith("session_") and isinstance(session, list):
                turns += [
                    f"{turn['speaker']}: {turn['text']}" if labelled else turn["text"]
                    for turn in session
                ]
        conversations.append(turns)
    return conversations


async def locomo_noise(embedder: OnnxEmbedder, folder: Path, labelled: bool) -> None:
    """How often a turn would surface at least one earlier turn of its conversation."""
    how = "as stored, 'Speaker: text'" if labelled else "text alone"
    print(f"\nLoCoMo turns ({how}): share that would surface >= 1 earlier turn")
    flagged = dict.fromkeys(THRESHOLDS, 0)
    best_scores = []
    for turns in locomo_turns(folder, labelled):
        matrix = await embed_memories(embedder, turns)
        sims = matrix @ matrix.T
        for i in range(1, len(turns)):
            best = float(sims[i, :i].max())
            best_scores.append(best)
            for t in THRESHOLDS:
                flagged[t] += best >= t
    print("  " + describe("best match", np.array(best_scores)))
    for t in THRESHOLDS:
        print(f"  {t:.2f}: {flagged[t] / len(best_scores):.3f} of {len(best_scores)} turns")


async def write_cost(embedder: OnnxEmbedder, folder: Path, workdir: Path) -> None:
    """What `similar` adds to a write: the first conversation's turns stored one by one
    through the service (memory-store's path: upsert, then embed), each followed by the
    similar check, timed apart."""
    turns = locomo_turns(folder, labelled=True)[0]
    settings = BenchSettings(db=str(workdir / "memory.db"), data_dir=workdir)
    stores, checks = [], []
    async with open_app(settings, embedder, background=False) as app:
        for n, text in enumerate(turns):
            started = time.perf_counter()
            outcome = await app.service.store_memory(app.caller, StoreRequest(f"t{n}", text))
            stored = time.perf_counter()
            await app.service.gate.similar_to(app.caller, outcome.record)
            stores.append(stored - started)
            checks.append(time.perf_counter() - stored)
    print(f"\nwrite cost over {len(turns)} writes into a growing store (ms):")
    for name, values in (("store + embed", stores), ("similar check", checks)):
        p50, p95, p99 = (percentile_ms(values, q) for q in (50, 95, 99))
        print(f"  {name:<14} median {p50:6.1f}  p95 {p95:6.1f}  p99 {p99:6.1f}")


async def main(argv: list[str]) -> int:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    kinds = {
        name: [tuple(p) for p in data[name]] for name in ("paraphrase", "correction", "related")
    }
    firsts = [a for a, _ in kinds["paraphrase"]]
    kinds["unrelated"] = list(combinations(firsts, 2))
    with tempfile.TemporaryDirectory() as tmp:
        embedder = OnnxEmbedder(lambda: ensure_in_child(Path(tmp)))
        embedder.start()
        texts = [t for pairs in kinds.values() for pair in pairs for t in pair]
        vectors = await embed_all(embedder, texts)
        scores = {name: pair_cosines(vectors, pairs) for name, pairs in kinds.items()}
        print("cosine of all-MiniLM-L6-v2 (ONNX), per kind of pair:")
        for name, values in scores.items():
            print("  " + describe(name, values))
        print("\nshare of pairs at or above each threshold:")
        print("  threshold  " + "  ".join(f"{name:>10}" for name in scores))
        for threshold in THRESHOLDS:
            shares = "  ".join(f"{np.mean(v >= threshold):>10.2f}" for v in scores.values())
            print(f"  {threshold:>9.2f}  {shares}")
        if len(argv) > 1:
            await write_cost(embedder, Path(argv[1]), Path(tmp))
            for labelled in (True, False):
                await locomo_noise(embedder, Path(argv[1]), labelled)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv))
