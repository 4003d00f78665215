"""`python -m bench.lab.fts_cost`: what the context column (memory_mcp/write_context.py)
costs the keyword arm, in SQLite alone. 10k synthetic memories (Zipf words, 12-40 each),
one FTS5 table without context and one whose context is the memories around each as
write_context.py takes them (CONTEXT_BEFORE before, CONTEXT_AFTER after); the
product's statements (term counts up to the budget, the rarest terms within
`MATCH_BUDGET`, BM25 with the product's weights or the newest matches unranked), the two
tables one after the other per query kind. Prints p50 per query kind, how many queries were ranked,
and the load average."""

from __future__ import annotations

import os
import random
import sqlite3
import statistics
import time

from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.store.keyword import MATCH_BUDGET
from memory_mcp.store.sqlite.match import match_any, match_own_or_context
from memory_mcp.store.write_context import CONTEXT_AFTER, CONTEXT_BEFORE

SIZE = 10_000
WEIGHTS = ", ".join(f"{w:g}" for w in KEYWORD_COLUMN_WEIGHTS)


def _store(docs: list[str], with_context: bool) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE memories_fts USING fts5(key, value, tags, context, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany(
        "INSERT INTO memories_fts(rowid, key, value, tags, context) VALUES (?, ?, ?, ?, ?)",
        [
            (
                i,
                f"k{i}",
                doc,
                "[]",
                " ".join(docs[max(0, i - CONTEXT_BEFORE) : i] + docs[i + 1 : i + 1 + CONTEXT_AFTER])
                if with_context
                else "",
            )
            for i, doc in enumerate(docs)
        ],
    )
    return db


def _search(db: sqlite3.Connection, terms: list[str], split: bool) -> tuple[float, bool]:
    started = time.perf_counter()
    counts = {
        t: db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
            (match_any([t]), MATCH_BUDGET + 1),
        ).fetchone()[0]
        for t in terms
    }
    chosen: list[str] = []
    total = 0
    for term in sorted((t for t in terms if counts[t]), key=counts.__getitem__):
        if total + counts[term] > MATCH_BUDGET:
            break
        chosen.append(term)
        total += counts[term]
    if chosen:
        match = match_own_or_context(chosen) if split else match_any(chosen)
        db.execute(
            f"SELECT rowid, bm25(memories_fts, {WEIGHTS}) AS r FROM memories_fts "
            "WHERE memories_fts MATCH ? ORDER BY r LIMIT 200",
            (match,),
        ).fetchall()
    else:
        db.execute(
            "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT 50",
            (match_any(terms),),
        ).fetchall()
    return (time.perf_counter() - started) * 1000, bool(chosen)


def main() -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(20_000)]
    zipf = [1 / (i + 1) for i in range(len(vocab))]
    docs = [" ".join(rng.choices(vocab, zipf, k=rng.randint(12, 40))) for _ in range(SIZE)]
    before, context = _store(docs, False), _store(docs, True)
    kinds = {
        "selective (3 words of rank 200-5000)": [
            [rng.choice(vocab[200:5000]) for _ in range(3)] for _ in range(150)
        ],
        "common (2 of the 50 commonest words)": [
            [rng.choice(vocab[:50]) for _ in range(2)] for _ in range(50)
        ],
    }
    for kind, queries in kinds.items():
        a = [_search(before, q, False) for q in queries]
        b = [_search(context, q, True) for q in queries]
        print(
            f"{kind}: before p50 {statistics.median(t for t, _ in a):.2f} ms "
            f"(ranked {sum(r for _, r in a)}/{len(a)}), with context "
            f"p50 {statistics.median(t for t, _ in b):.2f} ms (ranked {sum(r for _, r in b)}/"
            f"{len(b)})"
        )
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
