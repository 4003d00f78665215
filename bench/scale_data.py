"""`python -m bench scale-data --out DIR`: the data folder `bench scale` reads (its format is
in bench/scale.py's docstring; the recipe in docs/VECTOR_INDEX.md, "How the data is made").

Three steps, each skipped when an earlier run finished it, so a run that stops (embedding
~100k texts took 17 minutes here, alone on two cores; far longer when they are shared)
continues where it stopped:

1. corpus (`corpus.jsonl`, `bench_queries.jsonl`): the texts of bench/scale_sources.py,
   deduplicated (ignoring case and spacing: the model's vocabulary is lower-case), ordered
   by the SHA-1 of the text so that any prefix is a fair sample of every source; the
   first `held_out` are search texts, the next `texts` the corpus. LoCoMo's questions are
   searches too, and a text equal to one is never stored. Written once: the later steps'
   files are only valid for the corpus they were made from.
2. vectors (`vectors.npy`, `bench_queries.npy`): each text as the product embeds a memory
   (`embed_memories`: the whole text and its passages), in parts of `CHUNK` texts written
   as they finish (`vectors.parts/`); each search text as a search embeds it (the text
   alone).
3. the rows (`million.npy`, `million_parent.npy`, `million_is_real.npy`;
   bench/scale_million.py).

`scale_data.json` records what each step made, from which sources, and how long it took."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.scale_million import make_million, save_npy
from bench.scale_sources import Sources, locomo_questions, read_all
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.passages import embed_memories

DEFAULT_TEXTS = 103_000
DEFAULT_ROWS = 1_000_000
HELD_OUT = 600
CHUNK = 1_000  # texts per part: ~10 s of embedding here, so a stop loses little
SEED = 26
MANIFEST = "scale_data.json"
QUESTION = "locomo-question"
DERIVED = (
    MANIFEST,
    "vectors.parts",
    "vectors.npy",
    "bench_queries.npy",
    "million.npy",
    "million_parent.npy",
    "million_is_real.npy",
)

Say = Callable[[str], None]


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def _write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    partial = path.with_suffix(".partial")
    with open(partial, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    os.replace(partial, path)


def _read_jsonl(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def read_manifest(out: Path) -> dict[str, Any]:
    path = out / MANIFEST
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}


def _record(out: Path, step: str, facts: dict[str, Any]) -> None:
    manifest = read_manifest(out)
    manifest[step] = facts
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def make_corpus(out: Path, sources: Sources, texts: int, held_out: int, say: Say) -> None:
    done = read_manifest(out).get("corpus")
    if done is not None and (out / "corpus.jsonl").exists():
        if done["texts_asked"] != texts or done["held_out"] != held_out:
            raise SystemExit(
                f"memory-mcp: {out} holds a corpus made with --texts {done['texts_asked']} "
                f"and {done['held_out']} held out: give another --out, or remove it"
            )
        say(f"corpus: kept ({done['texts']:,} texts, {done['queries']:,} searches)")
        return
    for stale in DERIVED:  # made from another corpus, or from none that was finished
        path = out / stale
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    say("corpus: reading the sources")
    by_source = read_all(sources)
    questions = locomo_questions(sources.locomo)
    taken = {_key(q) for q in questions}
    pool = []
    for _, text, source in sorted(
        (_sha1(text), text, source) for source, group in by_source.items() for text in group
    ):
        if _key(text) not in taken:
            taken.add(_key(text))
            pool.append({"text": text, "source": source})
    searches = [{"text": r["text"], "source": f"held-out {r['source']}"} for r in pool[:held_out]]
    searches += [{"text": q, "source": QUESTION} for q in questions]
    searches.sort(key=lambda row: _sha1(row["text"]))  # a prefix mixes both kinds
    corpus = [{"text": r["text"], "source": r["source"]} for r in pool[held_out:][:texts]]
    _write_jsonl(out / "bench_queries.jsonl", searches)
    _write_jsonl(out / "corpus.jsonl", corpus)
    facts = {
        "texts_asked": texts,
        "held_out": held_out,
        "texts": len(corpus),
        "queries": len(searches),
        "read": {source: len(group) for source, group in by_source.items()},
        "distinct": dict(Counter(r["source"] for r in pool)),
        "corpus_sources": dict(Counter(r["source"] for r in corpus)),
        "query_sources": dict(Counter(r["source"] for r in searches)),
        "paths": {name: str(path) for name, path in vars(sources).items()},
    }
    _record(out, "corpus", facts)
    say(f"corpus: {len(corpus):,} texts {facts['corpus_sources']}, {len(searches):,} searches")


async def embed_corpus(out: Path, embedder: Embedder, say: Say, chunk: int = CHUNK) -> None:
    """`vectors.npy`: one row per corpus text, in its order, from the parts in
    `vectors.parts/` (each named by its first row, kept until the whole is written)."""
    if (out / "vectors.npy").exists():
        say("vectors: kept")
        return
    texts = [row["text"] for row in _read_jsonl(out / "corpus.jsonl")]
    parts = out / "vectors.parts"
    parts.mkdir(exist_ok=True)
    starts = range(0, len(texts), chunk)
    todo = [s for s in starts if not (parts / f"{s:08d}-{chunk}.npy").exists()]
    say(f"vectors: {len(texts):,} texts, {len(todo)} parts of {chunk:,} left to embed")
    earlier = float(read_manifest(out).get("vectors", {}).get("seconds", 0.0))
    began = time.perf_counter()
    done = 0
    for start in todo:
        vectors = await embed_memories(embedder, texts[start : start + chunk])
        save_npy(parts / f"{start:08d}-{chunk}.npy", vectors.astype(np.float32))
        done += len(vectors)
        seconds = time.perf_counter() - began
        left = (len(texts) - start - len(vectors)) / (done / seconds) / 60
        say(
            f"  {start + len(vectors):,} / {len(texts):,}: {done / seconds:.0f} texts/s, "
            f"~{left:.0f} min left"
        )
        # Embedding time over every run that contributed parts: the manifest's total.
        _record(out, "vectors", {"texts": len(texts), "seconds": round(earlier + seconds, 1)})
    whole = np.concatenate([np.load(parts / f"{s:08d}-{chunk}.npy") for s in starts])
    if whole.shape[0] != len(texts):
        raise SystemExit(
            f"memory-mcp: {parts} holds {whole.shape[0]:,} vectors, not {len(texts):,}"
        )
    save_npy(out / "vectors.npy", whole)
    shutil.rmtree(parts)
    seconds = float(read_manifest(out).get("vectors", {}).get("seconds", earlier))
    _record(
        out,
        "vectors",
        {
            "texts": len(texts),
            "seconds": seconds,
            "texts_per_s": round(len(texts) / max(seconds, 0.1), 1),
        },
    )


async def embed_queries(out: Path, embedder: Embedder, say: Say) -> None:
    if (out / "bench_queries.npy").exists():
        return
    texts = [row["text"] for row in _read_jsonl(out / "bench_queries.jsonl")]
    say(f"vectors: {len(texts):,} searches")
    vectors = np.asarray(await embedder.embed(texts), dtype=np.float32)
    save_npy(out / "bench_queries.npy", vectors)


async def make_scale_data(
    out: Path,
    sources: Sources,
    embedder: Embedder,
    say: Say,
    texts: int = DEFAULT_TEXTS,
    rows: int = DEFAULT_ROWS,
    held_out: int = HELD_OUT,
    chunk: int = CHUNK,
    seed: int = SEED,
) -> dict[str, Any]:
    """Every step not done yet; the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    make_corpus(out, sources, texts, held_out, say)
    await embed_queries(out, embedder, say)
    await embed_corpus(out, embedder, say, chunk)
    made = read_manifest(out).get("million")
    if made and made["rows"] == rows and made["seed"] == seed and (out / "million.npy").exists():
        say("rows: kept")
    else:
        say(f"rows: {rows:,}")
        _record(out, "million", make_million(out, rows, seed, say))
    return read_manifest(out)
