"""The knobs of a search's ranking (search/ranking.py) and of its `expand` step
(search/expansion.py), with their defaults: plain data, which the policy holds
(rules/policy.py) without importing the code that ranks."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memory_mcp.models import Source
from memory_mcp.rules.trust import TrustPolicy

DEFAULT_HALF_LIFE_DAYS: dict[Source, float | None] = {
    Source.MANUAL: None,
    Source.FILE_INDEX: 180.0,
    Source.TASK_COMPLETION: 14.0,
    Source.SESSION_SUMMARY: 7.0,
    # The provenance levels: written as deliberately as `manual`; how far each is trusted
    # is the trust term's (confidence, rules/trust.py), and an inference's age its decay.
    Source.USER_STATED: None,
    Source.TOOL_VERIFIED: None,
    Source.AGENT_INFERRED: None,
    Source.RECALLED: None,
    Source.EXTERNAL: None,
}
DEFAULT_SOURCE_QUALITY: dict[Source, float] = {
    Source.MANUAL: 1.5,
    # A note is what a person wrote down on purpose in the repository's memory folder: as
    # deliberate as a manual memory, and aged by its half-life above. At 1.0 (x0.67) a note
    # matching a question by its words and its meaning lost to a manual memory matching by
    # meaning alone (0.7 of relevance at most, against the note's 1.0 x 0.67).
    Source.FILE_INDEX: 1.5,
    Source.TASK_COMPLETION: 0.7,
    Source.SESSION_SUMMARY: 0.5,
    Source.USER_STATED: 1.5,
    Source.TOOL_VERIFIED: 1.5,
    Source.AGENT_INFERRED: 1.5,
    Source.RECALLED: 1.5,
    Source.EXTERNAL: 1.5,
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
    # The trust term of the prior: a memory at confidence c is weighed 1 - weight x (1 - c)
    # (rules/trust.py, trust_factor), so an inference at 0.6 ranks 4% below a stated fact
    # equally relevant; `trust` gives each memory its confidence (its source's by default).
    trust_weight: float = 0.1
    trust: TrustPolicy = field(default_factory=TrustPolicy)
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
