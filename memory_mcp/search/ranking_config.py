"""The knobs of a search's ranking (search/ranking.py) and of its `expand` step
(search/expansion.py), with their defaults: plain data, which the policy holds
(rules/policy.py) without importing the code that ranks."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memory_mcp.models import Source

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


@dataclass(frozen=True)
class ExpandConfig:
    on_by_default: bool = False  # a search that does not say
    seeds: int = 3  # the best-scoring candidates whose links are followed
    seed_share: float = 0.5  # ... only those scoring at least this share of the best
    fan_out: int = 10  # links followed from one seed, each way
    decay: float = 0.5  # what a link lends: decay x its seed's relevance


@dataclass(frozen=True)
class RankingConfig:
    # Chosen on the LoCoMo development split by leave-one-conversation-out (docs/RETRIEVAL.md).
    vector_weight: float = 0.7
    keyword_weight: float = 0.3
    half_life_days: dict[Source, float | None] = field(
        default_factory=lambda: dict(DEFAULT_HALF_LIFE_DAYS)
    )
    source_quality: dict[Source, float] = field(
        default_factory=lambda: dict(DEFAULT_SOURCE_QUALITY)
    )
    # Each arm returns this many candidates per requested result before fusion.
    candidate_multiplier: int = 5
    min_candidates: int = 50
    # memory-search's expand: which links are followed, what they lend (search/expansion.py).
    expand: ExpandConfig = field(default_factory=ExpandConfig)

    def with_half_life(self, days: float | None) -> RankingConfig:
        """Override every source's half-life (MEMORY_MCP_RECENCY_HALF_LIFE_DAYS)."""
        if days is None:
            return self
        return replace(self, half_life_days={s: days for s in Source})


__all__ = ["DEFAULT_HALF_LIFE_DAYS", "DEFAULT_SOURCE_QUALITY", "ExpandConfig", "RankingConfig"]
