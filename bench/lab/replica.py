"""The product's search path replayed on cached vectors: the keyword arm (FTS5 BM25, porter,
the product's query terms and column weights, pool of 50), the vector arm (cosine, pool of
50, plus the cosine of every keyword candidate), and ranking.fuse (min-max with span
floors, weak cosines capped beside keyword hits, 0.7 / 0.3). The prior is one constant in
LoCoMo (every memory manual, never read) and no dev question has an exact match that
changes its top 10 (docs/RETRIEVAL.md), so both are left out. `check` in experiments.py
holds this against the product's numbers."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_mcp.search.arm_mix import CLEAR_COSINE, WEAK_COSINE
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.search.ranking import KEYWORD_MIN_SPAN, KEYWORD_MIN_SPAN_SHARE, VECTOR_MIN_SPAN
from memory_mcp.store.keyword import query_terms
from memory_mcp.store.sqlite.match import match_any

POOL = 50
FTS_FIRST = 4 * POOL


class KeywordIndex:
    """One conversation's FTS5 table as the product builds it (key, value, tags), plus a
    `context` column (neighbour text, weight chosen per query; empty when not given)."""

    def __init__(
        self, keys: Sequence[str], values: Sequence[str], contexts: Sequence[str] | None = None
    ) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE fts USING fts5(key, value, tags, context, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        contexts = contexts if contexts is not None else [""] * len(keys)
        self.db.executemany(
            "INSERT INTO fts(rowid, key, value, tags, context) VALUES (?, ?, ?, ?, ?)",
            [
                (i, k, v, json.dumps([]), c)
                for i, (k, v, c) in enumerate(zip(keys, values, contexts, strict=True))
            ],
        )

    def hits(
        self, query: str, context_weight: float = 0.0, limit: int = POOL, split: bool = False
    ) -> list[tuple[int, float]]:
        """(row, BM25 larger-is-better) of the best `limit` rows matching any query term."""
        terms = query_terms(query)
        if not terms:
            return []
        # context_weight < 0: the context column alone (a feature of the learned ranker).
        own = KEYWORD_COLUMN_WEIGHTS[:3] if context_weight >= 0 else (0.0, 0.0, 0.0)
        weights = ", ".join(f"{w:g}" for w in (*own, abs(context_weight)))
        match = match_any(terms)
        if context_weight == 0.0:
            # The product's table has no context column: a context word must not match.
            match = "{key value tags} : (" + match + ")"
        elif split:
            # Own words and context words as separate phrases: each gets its own IDF, so
            # words lent to the neighbours do not make a memory's own words look common.
            match = "{key value tags} : (" + match + ") OR {context} : (" + match + ")"
        rows = self.db.execute(
            f"SELECT rowid, bm25(fts, {weights}) AS r FROM fts WHERE fts MATCH ? "
            "ORDER BY r LIMIT ?",
            (match, max(limit, FTS_FIRST)),
        ).fetchall()
        return [(int(r), -float(s)) for r, s in rows][:limit]


def min_max(values: np.ndarray, min_span: float) -> np.ndarray:
    if values.size == 0:
        return values
    high = float(values.max())
    low = min(float(values.min()), high - min_span)
    if high - low <= 1e-12:
        return np.ones_like(values)
    return (values - low) / (high - low)


@dataclass
class Fused:
    """Every candidate of one search: rows, and per row the scaled arms and raw values."""

    rows: np.ndarray
    keyword: np.ndarray  # scaled BM25, 0 outside the keyword pool
    in_keyword: np.ndarray  # bool
    bm25: np.ndarray
    vector: np.ndarray  # scaled cosine
    cosine: np.ndarray
    relevance: np.ndarray

    def order(self, scores: np.ndarray | None = None) -> np.ndarray:
        """Rows best first; ties go to the newer memory (the product's order)."""
        s = self.relevance if scores is None else scores
        keep = self.in_keyword | (self.cosine > 0.0)
        rows, s = self.rows[keep], s[keep]
        return rows[np.lexsort((-rows, -s))]


def fuse(
    keyword_hits: list[tuple[int, float]],
    cosines: np.ndarray,
    vector_weight: float = 0.7,
    pool: int = POOL,
) -> Fused:
    """ranking.fuse over the two arms' pools (see the module docstring)."""
    kw_rows = np.array([r for r, _ in keyword_hits], dtype=np.int64)
    kw_bm25 = np.array([s for _, s in keyword_hits], dtype=np.float64)
    k = min(pool, cosines.size)
    top = np.argpartition(-cosines, k - 1)[:k]
    rows = np.unique(np.concatenate([top, kw_rows]))
    cos = cosines[rows].astype(np.float64)
    vec = min_max(cos, VECTOR_MIN_SPAN)
    if kw_rows.size:  # search/arm_mix.py: a weak cosine is capped beside keyword hits
        ceiling = (cos - WEAK_COSINE) / (CLEAR_COSINE - WEAK_COSINE)
        vec = np.minimum(vec, np.clip(ceiling, 0.0, 1.0))
    keyword = np.zeros(rows.size)
    bm25 = np.zeros(rows.size)
    in_kw = np.zeros(rows.size, dtype=bool)
    if kw_rows.size:
        span = max(KEYWORD_MIN_SPAN_SHARE * float(kw_bm25.max()), KEYWORD_MIN_SPAN)
        scaled = min_max(kw_bm25, span)
        where = np.searchsorted(rows, kw_rows)
        keyword[where] = scaled
        bm25[where] = kw_bm25
        in_kw[where] = True
    kw_weight = 1.0 - vector_weight if kw_rows.size else 0.0
    total = vector_weight + kw_weight
    relevance = (vector_weight * vec + kw_weight * keyword) / total
    return Fused(rows, keyword, in_kw, bm25, vec, cos, relevance)


def recall(order: Sequence[int] | np.ndarray, evidence: set[int], k: int) -> float:
    top = set(int(r) for r in order[:k])
    return sum(1 for e in evidence if e in top) / len(evidence) if evidence else 0.0
