"""Scores. One scale everywhere: every score is in [0, 1], larger is better.

    keyword   = BM25, min-max scaled over this search's keyword candidates   (in [0, 1])
    vector    = cosine, min-max scaled over every candidate of this search   (in [0, 1])

The min-max span is at least half the best BM25 and at least 1 BM25 unit, and at least 0.3
of cosine, so that near-equal candidates (a small store; a query word in half of all
memories, whose BM25 is ~0) do not become 1 and 0.
    relevance = confidence * (vector_weight * vector + keyword_weight * keyword)  (in [0, 1])
(search/arm_mix.py: a candidate with no vector yet is ranked on its keyword score, and a
weak cosine's scaled value is capped where some candidate holds a query word.)
    prior     = recency * access * source_quality * trust                    (in (0, 1])
    score     = relevance * prior

Both arms are scaled within the search, so a score says how a memory compares with the
other candidates of the same search (1.0: the best on both arms), not how close it is to
the query in absolute terms: compare scores within one search, never against a fixed
threshold across searches. Raw BM25 has no fixed range at all, and MiniLM's cosines crowd
into 0.2-0.7 whatever the query, so neither raw scale would mean more. Why min-max and
these weights: docs/RETRIEVAL.md.

The prior follows Agent Swarm's reranker (recency half-life per source, an access boost,
a quality weight per source), divided by its maximum so that it never lifts a score above
1. Memories of equal age, access and source get equal priors, so the prior never reorders
them.

The trust term is the memory's confidence (rules/trust.py: its own, else its source's,
less an unconfirmed inference's decay) weighed lightly (RankingConfig.trust_weight): of
two memories equally relevant the better attested ranks first, and relevance still leads.
Memories at full confidence (every memory of the writing sources, by default) get 1."""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory_mcp.models import Ranked
from memory_mcp.rules.trust import trust_factor
from memory_mcp.search.arm_mix import ArmWeights, capped_vector
from memory_mcp.search.ranking_config import RankingConfig

DAY = 86_400.0

MAX_ACCESS_BOOST = 1.5
# Least spans of the min-max scaling: a share of the best BM25 and BM25 units (about one
# match of a word found in a quarter of all memories); cosine units.
KEYWORD_MIN_SPAN_SHARE = 0.5
KEYWORD_MIN_SPAN = 1.0
VECTOR_MIN_SPAN = 0.3
# A search where no memory holds a query word is only as good as its best cosine. MiniLM
# puts unrelated text at about 0-0.1 and a paraphrase from about 0.35 up, so between these
# the whole search is scaled down (never to zero: the order is still the best we have).
MEANING_ONLY_COSINE_FLOOR = 0.05
MEANING_ONLY_COSINE_FULL = 0.35
MEANING_ONLY_MIN_CONFIDENCE = 0.05


@dataclass
class Relevance:
    memory_id: int
    keyword: float | None = None  # min-max scaled BM25, None when no query word matched
    vector: float | None = None  # min-max scaled cosine (arm_mix.py's cap), None: no vector
    cosine: float | None = None  # the raw cosine similarity
    bm25: float | None = None  # the raw keyword score (BM25; ts_rank on PostgreSQL)
    search_confidence: float = 1.0  # the whole search's factor (search_confidence)
    relevance: float = 0.0
    # False: no query word is in the memory itself, only in its context (the words of the
    # 3 memories written just before it and the 4 just after it in its session,
    # store/write_context.py).
    own_words: bool = True

    @property
    def matched_by(self) -> str:
        """keyword: it contains query words; context: only its context does (the 3
        memories written just before it and the 4 just after it in its session); vector:
        it is close in meaning; both: keyword and vector."""
        if self.keyword is not None and not self.own_words:
            return "context+vector" if self.vector is not None else "context"
        if self.keyword is not None and self.vector is not None:
            return "both"
        return "keyword" if self.keyword is not None else "vector"


def min_max(values: list[float], min_span: float = 0.0) -> list[float]:
    """Scale into [0, 1]: the best becomes 1 and the worst 0, unless the values span less
    than `min_span`, in which case they are scaled as if they spanned it (the best is
    still 1). A lone value, or all equal with no `min_span`, become 1."""
    if not values:
        return []
    high = max(values)
    low = min(min(values), high - min_span)
    if high - low <= 1e-12:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def fuse(
    keyword_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    config: RankingConfig,
) -> dict[int, Relevance]:
    """Combine the arms' candidates into relevances in [0, 1].

    `keyword_hits` are (id, BM25, larger is better) of the keyword arm's pool.
    `vector_hits` are (id, cosine) of the vector arm's pool *and* of the keyword
    candidates that have a vector, so both arms judge every candidate they can."""
    fused: dict[int, Relevance] = {}
    bm25 = [s for _, s in keyword_hits]
    keyword_span = max(KEYWORD_MIN_SPAN_SHARE * max(bm25, default=0.0), KEYWORD_MIN_SPAN)
    for (memory_id, raw), scaled in zip(keyword_hits, min_max(bm25, keyword_span), strict=True):
        item = fused.setdefault(memory_id, Relevance(memory_id))
        item.keyword, item.bm25 = scaled, raw
    cosines = [c for _, c in vector_hits]
    for (memory_id, cosine), scaled in zip(
        vector_hits, min_max(cosines, VECTOR_MIN_SPAN), strict=True
    ):
        item = fused.setdefault(memory_id, Relevance(memory_id))
        # A weak cosine does not outrank a keyword hit for being the search's best.
        item.vector, item.cosine = capped_vector(scaled, cosine, bool(keyword_hits)), cosine
    # Without a vector arm (model still loading) the keyword arm carries all the weight,
    # so scores keep their range rather than being cut to keyword_weight; a candidate
    # with no vector yet is ranked on its words alone (search/arm_mix.py).
    weights = ArmWeights(
        config.vector_weight if vector_hits else 0.0,
        config.keyword_weight if keyword_hits else 0.0,
    )
    confidence = search_confidence(keyword_hits, cosines)
    for item in fused.values():
        item.search_confidence = confidence
        item.relevance = confidence * weights.relevance(item.keyword, item.vector)
    return fused


def search_confidence(keyword_hits: list[tuple[int, float]], cosines: list[float]) -> float:
    """How much this search found at all, in (0, 1]; the same factor for every candidate,
    so it never reorders them. With min-max scaling alone, the best candidate of a search
    for something the store knows nothing about ("capital of France" in a store of
    engineering notes) would score as high as a true match."""
    if keyword_hits or not cosines:
        return 1.0
    span = MEANING_ONLY_COSINE_FULL - MEANING_ONLY_COSINE_FLOOR
    share = (max(cosines) - MEANING_ONLY_COSINE_FLOOR) / span
    return min(max(share, MEANING_ONLY_MIN_CONFIDENCE), 1.0)


def is_unrelated(item: Relevance) -> bool:
    """No query word and a cosine at or below zero: nothing connects it to the query."""
    return item.keyword is None and (item.cosine is None or item.cosine <= 0.0)


@dataclass(frozen=True)
class PriorParts:
    """The factors of a memory's prior, each in (0, 1]; `value` is their product.
    `recency` is 1 for a pinned memory or a source without a half-life; `trust` is the
    trust term of `confidence` (the memory's, as a reader sees it now)."""

    recency: float
    access: float
    source_quality: float
    trust: float = 1.0
    confidence: float = 1.0

    @property
    def value(self) -> float:
        return self.recency * self.access * self.source_quality * self.trust


def prior_parts(record: Ranked, now: float, config: RankingConfig) -> PriorParts:
    """recency, access, source quality and trust, each scaled into (0, 1]."""
    half_life = config.half_life_days.get(record.source)
    recency = 1.0
    if half_life and not record.pinned:
        age_days = max(now - record.updated_at, 0.0) / DAY
        recency = math.pow(2.0, -age_days / half_life)
    recent_access = record.last_accessed_at is not None and now - record.last_accessed_at < 2 * DAY
    access = 1.0 + min(record.access_count / 10.0, 0.5) * (1.0 if recent_access else 0.5)
    quality = config.source_quality.get(record.source, 1.0)
    best_quality = max(config.source_quality.values())
    confidence = config.trust.confidence(
        record.source, record.confidence, record.pinned, record.updated_at, now
    )
    trust = trust_factor(confidence, config.trust_weight)
    return PriorParts(recency, access / MAX_ACCESS_BOOST, quality / best_quality, trust, confidence)


def prior(record: Ranked, now: float, config: RankingConfig) -> float:
    """recency x access x source quality x trust, scaled into (0, 1]."""
    return prior_parts(record, now, config).value
