"""Scores. One scale everywhere: every score is in [0, 1], larger is better.

    relevance = vector_weight * vector_score + keyword_weight * keyword_score   (in [0, 1])
    prior     = recency * access * source_quality                               (in (0, 1])
    score     = relevance * prior

keyword_score is BM25 divided by the best BM25 of the query's candidate pool; vector_score
is the cosine similarity clipped at 0. The prior follows Agent Swarm's reranker (recency
half-life per source, an access boost, a quality weight per source), divided by its
maximum so that it never lifts a score above 1. Memories of equal age, access and source
get equal priors, so the prior never reorders them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from memory_mcp.models import MemoryRecord, Source

DAY = 86_400.0

DEFAULT_HALF_LIFE_DAYS: dict[Source, float | None] = {
    Source.MANUAL: None,
    Source.FILE_INDEX: 180.0,
    Source.TASK_COMPLETION: 14.0,
    Source.SESSION_SUMMARY: 7.0,
}
DEFAULT_SOURCE_QUALITY: dict[Source, float] = {
    Source.MANUAL: 1.5,
    Source.FILE_INDEX: 1.0,
    Source.TASK_COMPLETION: 0.7,
    Source.SESSION_SUMMARY: 0.5,
}
MAX_ACCESS_BOOST = 1.5


@dataclass(frozen=True)
class RankingConfig:
    vector_weight: float = 0.5
    keyword_weight: float = 0.5
    half_life_days: dict[Source, float | None] = field(
        default_factory=lambda: dict(DEFAULT_HALF_LIFE_DAYS)
    )
    source_quality: dict[Source, float] = field(
        default_factory=lambda: dict(DEFAULT_SOURCE_QUALITY)
    )
    # Each arm returns this many candidates per requested result before fusion.
    candidate_multiplier: int = 5
    min_candidates: int = 50

    def with_half_life(self, days: float | None) -> RankingConfig:
        """Override every source's half-life (MEMORY_MCP_RECENCY_HALF_LIFE_DAYS)."""
        if days is None:
            return self
        return RankingConfig(
            vector_weight=self.vector_weight,
            keyword_weight=self.keyword_weight,
            half_life_days={s: days for s in Source},
            source_quality=self.source_quality,
            candidate_multiplier=self.candidate_multiplier,
            min_candidates=self.min_candidates,
        )


@dataclass
class Relevance:
    memory_id: int
    keyword: float | None = None  # normalised to [0, 1]
    vector: float | None = None  # cosine clipped to [0, 1]
    relevance: float = 0.0

    @property
    def matched_by(self) -> str:
        if self.keyword is not None and self.vector is not None:
            return "both"
        return "keyword" if self.keyword is not None else "vector"


def fuse(
    keyword_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    config: RankingConfig,
) -> dict[int, Relevance]:
    fused: dict[int, Relevance] = {}
    best = max((score for _, score in keyword_hits), default=0.0)
    for memory_id, score in keyword_hits:
        fused.setdefault(memory_id, Relevance(memory_id)).keyword = (
            score / best if best > 0 else 0.0
        )
    for memory_id, cosine in vector_hits:
        fused.setdefault(memory_id, Relevance(memory_id)).vector = max(cosine, 0.0)
    # Without a vector arm (model still loading) the keyword arm carries all the weight,
    # so scores stay comparable in spirit rather than halved.
    vector_weight = config.vector_weight if vector_hits else 0.0
    keyword_weight = config.keyword_weight if keyword_hits else 0.0
    total = vector_weight + keyword_weight or 1.0
    for item in fused.values():
        item.relevance = (
            vector_weight * (item.vector or 0.0) + keyword_weight * (item.keyword or 0.0)
        ) / total
    return fused


def prior(record: MemoryRecord, now: float, config: RankingConfig) -> float:
    """recency x access x source quality, scaled into (0, 1]."""
    half_life = config.half_life_days.get(record.source)
    recency = 1.0
    if half_life and not record.pinned:
        age_days = max(now - record.updated_at, 0.0) / DAY
        recency = math.pow(2.0, -age_days / half_life)
    recent_access = record.last_accessed_at is not None and now - record.last_accessed_at < 2 * DAY
    access = 1.0 + min(record.access_count / 10.0, 0.5) * (1.0 if recent_access else 0.5)
    quality = config.source_quality.get(record.source, 1.0)
    best_quality = max(config.source_quality.values())
    return recency * (access / MAX_ACCESS_BOOST) * (quality / best_quality)
