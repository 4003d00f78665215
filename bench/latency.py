"""Search latency on large synthetic stores (10k, 100k memories).

The store is written the way `memory-mcp import` writes (`prepare_memory`, then
`write_batch`: 500 memories per transaction) and embedded by `embed_pending`, with
synthetic text and synthetic document vectors (embedding 100k texts with the real model
would take most of an hour here and says nothing about search latency). Searches then
run through `MemoryService.search` with the real model embedding each query. A built
store is kept in the work directory and reused by later runs.

Three kinds of query: `selective` (rare words: few keyword matches), `common` (words in a
large share of all memories: the FTS worst case) and `question` (a sentence mixing both).
Besides the end-to-end time, each part of a search is timed on its own."""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.settings import store_settings
from bench.stats import p50_p95_ms, percentile_ms, table
from memory_mcp.app.root import open_app
from memory_mcp.models import SearchRequest, StoreRequest, Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.store.keyword import query_terms

# 2: each memory carries the write-time context of the 4 before it (issue 23): a store
# built before is built again.
GENERATOR_VERSION = 2
BUILD_BATCH = 500  # memories per transaction, as `memory-mcp import` writes them
VOCABULARY = 20_000
QUERY_KINDS = ("selective", "common", "question")
PARTS = ("embed query", "keyword (FTS5)", "vector scan", "read facts + results")
_SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gi ho ju ly pa qui ro su ze".split()


def _word(rank: int) -> str:
    """A made-up word per vocabulary rank, e.g. 'kalomi'; never an English stopword."""
    letters = []
    n = rank + 1
    while n:
        n, digit = divmod(n, len(_SYLLABLES))
        letters.append(_SYLLABLES[digit])
    return "".join(letters) + "x"


class SyntheticText:
    """Memories of 2-4 sentences whose words follow a Zipf law, as natural text does: a
    few words are in a large share of memories, most are rare."""

    def __init__(self, seed: int = 7) -> None:
        self.random = random.Random(seed)
        weights = 1.0 / np.arange(1, VOCABULARY + 1)
        self.cumulative = np.cumsum(weights / weights.sum())
        self.words = [_word(i) for i in range(VOCABULARY)]

    def _words(self, n: int) -> list[str]:
        picks = np.searchsorted(self.cumulative, [self.random.random() for _ in range(n)])
        return [self.words[min(int(i), VOCABULARY - 1)] for i in picks]

    def memory(self) -> str:
        sentences = []
        for _ in range(self.random.randint(2, 4)):
            words = self._words(self.random.randint(5, 12))
            sentences.append(" ".join(words).capitalize() + ".")
        return " ".join(sentences)

    def query(self, kind: str) -> str:
        if kind == "selective":
            ranks = [self.random.randint(2_000, VOCABULARY - 1) for _ in range(2)]
            return " ".join(self.words[r] for r in ranks)
        if kind == "common":
            return " ".join(self.words[self.random.randint(0, 4)] for _ in range(3))
        rare = self.words[self.random.randint(500, VOCABULARY - 1)]
        common = self.words[self.random.randint(0, 20)]
        return f"What did we decide about the {common} and the {rare}?"


class SyntheticDocumentEmbedder:
    """FAKE document vectors for building a large store quickly: a unit vector seeded by
    each text's checksum. Stored under the real model's name so the real model can embed
    the queries against them."""

    def __init__(self, model_name: str, dimension: int = 384) -> None:
        self.model_name = model_name
        self.dimension = dimension
        # Not ready while memories are written, so they are embedded in batches afterwards
        # (as an import does) rather than one by one inline.
        self.ready = False

    def is_ready(self) -> bool:
        return self.ready

    async def wait_ready(self) -> None:
        return None

    async def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            vector = rng.standard_normal(self.dimension).astype(np.float32)
            out[row] = vector / np.linalg.norm(vector)
        return out


@dataclass
class SizeResult:
    size: int
    build_seconds: float | None  # None: reused from an earlier run
    index_load_seconds: float
    seconds: dict[str, list[float]] = field(default_factory=dict)  # by query kind
    parts: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # kind -> part

    def summary(self) -> dict[str, Any]:
        every = [s for kind in self.seconds.values() for s in kind]
        return {
            "memories": self.size,
            "build_seconds": None if self.build_seconds is None else round(self.build_seconds, 1),
            "index_load_seconds": round(self.index_load_seconds, 2),
            "search_ms": {
                kind: p50_p95_ms(v) for kind, v in {"all": every, **self.seconds}.items()
            },
            "part_ms_p50": {
                kind: {name: round(percentile_ms(v, 50), 2) for name, v in parts.items()}
                for kind, parts in self.parts.items()
            },
        }


async def build_store(
    directory: Path, size: int, model_name: str, progress: Callable[[str], None] | None = None
) -> float | None:
    """Write `size` synthetic memories unless an earlier run left them in `directory`."""
    marker = directory / f"built-v{GENERATOR_VERSION}"
    if marker.exists():
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("memory.db*"):
        stale.unlink()
    text = SyntheticText()
    started = time.perf_counter()
    embedder = SyntheticDocumentEmbedder(model_name)
    async with open_app(store_settings(directory), embedder, background=False) as app:
        service, caller = app.service, app.caller
        for start in range(0, size, BUILD_BATCH):
            # The import's path: checked like store_memory, written 500 per transaction.
            batch = [
                (
                    caller,
                    service.prepare_memory(caller, StoreRequest(f"note-{i}", text.memory())),
                    None,
                )
                for i in range(start, min(start + BUILD_BATCH, size))
            ]
            await service.write_batch(batch)
            if progress and (start + BUILD_BATCH) % 10_000 == 0:
                progress(f"  {start + BUILD_BATCH:,} / {size:,} memories written")
        embedder.ready = True
        await service.vectors.embed_pending(batch_size=2_048)
    marker.write_text(f"{size}\n")
    return time.perf_counter() - started


async def measure_size(
    directory: Path,
    size: int,
    embedder: Embedder,
    queries: int,
    progress: Callable[[str], None] | None = None,
) -> SizeResult:
    await embedder.wait_ready()
    built = await build_store(directory, size, embedder.model_name, progress)
    text = SyntheticText(seed=size)
    async with open_app(store_settings(directory), embedder, background=False) as app:
        service, caller = app.service, app.caller
        started = time.perf_counter()
        await service.vectors.search.catch_up()  # what the first search after a start pays
        result = SizeResult(size, built, time.perf_counter() - started)
        for warm in range(5):
            await service.search(caller, SearchRequest(text.query(QUERY_KINDS[warm % 3])))
        vis = Visibility(caller=caller, now=time.time())
        for i in range(queries):
            kind = QUERY_KINDS[i % len(QUERY_KINDS)]
            parts = result.parts.setdefault(kind, {name: [] for name in PARTS})
            query = text.query(kind)
            started = time.perf_counter()
            await service.search(caller, SearchRequest(query, limit=10))
            result.seconds.setdefault(kind, []).append(time.perf_counter() - started)
            # The same search again, one part at a time.
            started = time.perf_counter()
            vector = (await embedder.embed([query]))[0]
            parts["embed query"].append(time.perf_counter() - started)
            started = time.perf_counter()
            keyword = await service.store.keyword_search(
                query_terms(query), vis, 50, KEYWORD_COLUMN_WEIGHTS
            )
            parts["keyword (FTS5)"].append(time.perf_counter() - started)
            started = time.perf_counter()
            nearest = await service.vectors.search.nearest(
                vector, vis, 50, also=[i for i, _ in keyword]
            )
            parts["vector scan"].append(time.perf_counter() - started)
            # As the search reads the vector arm's own finds: ranking facts of each, whole
            # records of the 10 most similar (the likely results).
            found = {i for i, _ in keyword}
            own = [i for i, _ in nearest if i not in found]
            started = time.perf_counter()
            await service.store.rank_facts(own[10:], own[:10])
            parts["read facts + results"].append(time.perf_counter() - started)
        return result


def render(results: list[SizeResult]) -> str:
    rows: list[list[object]] = []
    for r in results:
        s = r.summary()
        for kind, ms in s["search_ms"].items():
            parts = s["part_ms_p50"].get(kind)
            rows.append(
                [f"{r.size:,}", kind, f"{ms['p50']:.1f}", f"{ms['p95']:.1f}"]
                + [f"{parts[name]:.1f}" if parts else "" for name in PARTS]
            )
    header = ["memories", "queries", "p50 ms", "p95 ms", *(f"{p} p50" for p in PARTS)]
    lines = [table(header, rows), ""]
    for r in results:
        s = r.summary()
        built = "reused" if s["build_seconds"] is None else f"built in {s['build_seconds']} s"
        lines.append(
            f"{r.size:,} memories: store {built}; vector index loaded in "
            f"{s['index_load_seconds']} s"
        )
    return "\n".join(lines)
