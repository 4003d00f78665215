"""The experiments of issue 23, each a grid of parameters scored per conversation, then
leave-one-conversation-out (loo.py). Run: `python -m bench.lab DIR` (see __main__)."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

import numpy as np

from bench.lab.loo import Outcome, Scores, leave_one_out
from bench.lab.prepared import Prepared, unit
from bench.lab.replica import Fused, fuse, recall

__all__ = ["fuse", "recall"]
from memory_mcp.search.ranking import VECTOR_MIN_SPAN
from memory_mcp.store.keyword import STOPWORDS

Ranker = Callable[[Prepared, int], np.ndarray]  # (conversation, question) -> rows, best first


def scores_of(p: Prepared, rank: Ranker) -> Scores:
    r5, r10 = [], []
    for qi, evidence in enumerate(p.evidence):
        order = rank(p, qi)
        wanted = set(evidence)
        # An evidence id that is no turn (-1) counts as a miss, as in bench/locomo.py.
        r5.append(recall(order, wanted, 5))
        r10.append(recall(order, wanted, 10))
    return Scores(p.categories, np.array(r5), np.array(r10))


P = TypeVar("P", bound=Hashable)


def run(
    name: str,
    prepared: dict[str, Prepared],
    grid: Sequence[P],
    ranker_for: Callable[[Prepared, P], Ranker],
) -> Outcome:
    def score(conv: str, params: P) -> Scores:
        p = prepared[conv]
        return scores_of(p, ranker_for(p, params))

    return leave_one_out(name, list(prepared), grid, score)


# -- rankers ------------------------------------------------------------------------------


def dense(vectors: Callable[[Prepared], np.ndarray]) -> Ranker:
    def rank(p: Prepared, qi: int) -> np.ndarray:
        cos = vectors(p) @ p.queries[qi]
        return np.argsort(-cos, kind="stable")

    return rank


def hybrid(
    vectors: np.ndarray,
    hits: Sequence[list[tuple[int, float]]] | None = None,
    vector_weight: float = 0.7,
    after: Callable[[Prepared, int, Fused, np.ndarray], np.ndarray] | None = None,
) -> Ranker:
    """The product's fusion over `vectors` (n x d) and keyword `hits` (per question)."""

    def rank(p: Prepared, qi: int) -> np.ndarray:
        cos = vectors @ p.queries[qi]
        fused = fuse((hits or p.kw_hits)[qi], cos, vector_weight)
        if after is not None:
            return after(p, qi, fused, cos)
        return fused.order()

    return rank


# -- context at write time ----------------------------------------------------------------


def with_previous(p: Prepared, k: int, weight: float, base: np.ndarray | None = None) -> np.ndarray:
    """normalise(v + weight * mean of the vectors of the k memories written before it in
    its session): the store holds those vectors when the memory is written."""
    v = p.base if base is None else base
    if k == 0 or weight == 0.0:
        return v
    out = v.copy()
    for i, rows in enumerate(p.same_session_before(k)):
        if rows:
            out[i] = v[i] + weight * unit(v[rows].mean(axis=0))
    return unit(out)


def with_neighbours(
    p: Prepared, k_before: int, w_before: float, k_after: int, w_after: float
) -> np.ndarray:
    """Previous and following memories of the session (the following ones only once
    written: a memory's vector would be refreshed when the next ones arrive)."""
    out = p.base.copy()
    before = p.same_session_before(k_before)
    after = p.same_session_after(k_after)
    for i in range(p.n):
        if before[i] and w_before:
            out[i] += w_before * unit(p.base[before[i]].mean(axis=0))
        if after[i] and w_after:
            out[i] += w_after * unit(p.base[after[i]].mean(axis=0))
    return unit(out)


def window_texts(p: Prepared, k: int) -> list[str]:
    """ "the k previous memories of the session, then this one": a second passage."""
    out = []
    for i, rows in enumerate(p.same_session_before(k)):
        out.append("\n".join([p.values[j] for j in rows] + [p.values[i]]))
    return out


def with_window(p: Prepared, windows: np.ndarray, weight: float) -> np.ndarray:
    """normalise(v + weight * vector of the window text), only where there is a window."""
    has = np.array([bool(r) for r in p.same_session_before(1)])
    out = p.base.copy()
    out[has] += weight * windows[has]
    return unit(out)


def context_docs(p: Prepared, k_before: int, k_after: int = 0) -> list[str]:
    """Neighbour text for the keyword document: the memories around it in its session."""
    before = p.same_session_before(k_before)
    after = p.same_session_after(k_after)
    return [" ".join(p.values[j] for j in before[i] + after[i]) for i in range(p.n)]


# -- a second hop -------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def entity_terms(p: Prepared, capitalised_only: bool) -> list[set[str]]:
    """Per memory, its words that could name something (the speaker label left out):
    capitalised words not opening a sentence, or every word of 4+ letters not a stopword."""
    out: list[set[str]] = []
    for turn in p.conv.turns:
        words: set[str] = set()
        for sentence in re.split(r"(?<=[.!?])\s+", turn.text):
            tokens = _WORD.findall(sentence)
            for position, token in enumerate(tokens):
                if capitalised_only:
                    if position > 0 and token[0].isupper() and token.lower() not in STOPWORDS:
                        words.add(token.lower())
                elif len(token) >= 4 and token.lower() not in STOPWORDS:
                    words.add(token.lower())
        out.append(words)
    return out


def extended_relevance(fused: Fused, cos: np.ndarray, vector_weight: float = 0.7) -> np.ndarray:
    """Every memory's relevance on this search's scale: the vector arm's min-max span
    applied to every cosine (clipped to [0, 1]), the keyword arm's score where it has one."""
    low = min(float(fused.cosine.min()), float(fused.cosine.max()) - VECTOR_MIN_SPAN)
    high = float(fused.cosine.max())
    vec = np.clip((cos - low) / max(high - low, 1e-12), 0.0, 1.0)
    rel = vector_weight * vec
    rel[fused.rows] = fused.relevance
    return rel


def second_hop(
    mode: str,
    seeds: int,
    reach: int,
    share: float,
    entities: list[set[str]] | None = None,
    rare_up_to: int = 3,
) -> Callable[[Prepared, int, Fused, np.ndarray], np.ndarray]:
    """Bring in neighbours of the best `seeds` results: memories of the same session within
    `reach` turns (mode "session"), or memories sharing a rare entity with a seed that the
    question does not name (mode "entity"); a neighbour scores at least `share` x its
    seed's relevance, and every memory is ranked by the same score."""

    def after(p: Prepared, qi: int, fused: Fused, cos: np.ndarray) -> np.ndarray:
        rel = extended_relevance(fused, cos)
        order = fused.order()
        lifted = rel.copy()
        in_play = np.zeros(p.n, dtype=bool)
        in_play[fused.rows] = True
        query_words = {w.lower() for w in _WORD.findall(p.questions[qi])}
        df: dict[str, int] = {}
        if entities is not None:
            for words in entities:
                for w in words:
                    df[w] = df.get(w, 0) + 1
        for seed in order[:seeds]:
            if mode == "session":
                near = np.flatnonzero(
                    (p.session == p.session[seed])
                    & (np.abs(p.position - p.position[seed]) <= reach)
                )
            else:
                assert entities is not None
                rare = {w for w in entities[seed] if df[w] <= rare_up_to and w not in query_words}
                near = np.array([j for j in range(p.n) if j != seed and entities[j] & rare])
            if near.size:
                lifted[near] = np.maximum(lifted[near], share * rel[seed])
                in_play[near] = True
        rows = np.flatnonzero(in_play)
        return rows[np.lexsort((-rows, -lifted[rows]))]

    return after


# -- learned fusion -----------------------------------------------------------------------

FEATURES = (
    "vector (scaled)",
    "keyword (scaled)",
    "cosine",
    "in keyword pool",
    "1/(1+vector rank)",
    "1/(1+keyword rank)",
    "best passage cosine",
    "query-word coverage",
    "context-only BM25 (scaled)",
)


def features(
    p: Prepared,
    qi: int,
    fused: Fused,
    cos: np.ndarray,
    context_hits: list[tuple[int, float]] | None,
) -> np.ndarray:
    rows = fused.rows
    vec_rank = np.empty(rows.size)
    vec_rank[np.argsort(-fused.cosine, kind="stable")] = np.arange(rows.size)
    kw_rank = np.full(rows.size, 1e9)
    kw_order = np.flatnonzero(fused.in_keyword)[np.argsort(-fused.bm25[fused.in_keyword])]
    kw_rank[kw_order] = np.arange(kw_order.size)
    q = p.queries[qi]
    best_passage = np.array([float((p.passage_rows[r] @ q).max()) for r in rows])
    words = set(_WORD.findall(p.questions[qi].lower())) - STOPWORDS
    coverage = np.array(
        [len(words & set(_WORD.findall(p.values[r].lower()))) / max(len(words), 1) for r in rows]
    )
    ctx = np.zeros(rows.size)
    if context_hits:
        top = max(s for _, s in context_hits) or 1.0
        where = {r: s / top for r, s in context_hits}
        ctx = np.array([where.get(int(r), 0.0) for r in rows])
    return np.stack(
        [
            fused.vector,
            fused.keyword,
            fused.cosine,
            fused.in_keyword.astype(float),
            1.0 / (1.0 + vec_rank),
            1.0 / (1.0 + kw_rank),
            best_passage,
            coverage,
            ctx,
        ],
        axis=1,
    )


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 300) -> np.ndarray:
    """Weights (bias last) of an L2-regularised logistic regression, by Newton steps."""
    xb = np.hstack([x, np.ones((x.shape[0], 1))])
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        z = xb @ w
        prob = 1.0 / (1.0 + np.exp(-z))
        grad = xb.T @ (prob - y) + l2 * np.r_[w[:-1], 0.0]
        hess = (xb * (prob * (1 - prob))[:, None]).T @ xb + l2 * np.diag(
            np.r_[np.ones(len(w) - 1), 0.0]
        )
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w
