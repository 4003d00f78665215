"""The knobs of the memory rules (MemoryService), built once from Settings by the
composition root (app/reads.py, policy_from)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_mcp.models import Source
from memory_mcp.rules.trust import TrustPolicy
from memory_mcp.search.ranking_config import RankingConfig


@dataclass(frozen=True)
class Policy:
    """The knobs of the rules. Their defaults live in one place, Settings: the composition
    root builds this from it (app/reads.py, policy_from)."""

    max_memories_per_agent: int
    max_value_chars: int
    search_value_chars: int
    ttl_days: dict[Source, float]
    ranking: RankingConfig
    # A search while the model is still loading waits this long before going keyword-only.
    search_model_wait_seconds: float
    # A memory whose text gives orders from a low-trust source, or any external one:
    # "flag", "quarantine" or "reject" (rules/quarantine.py).
    injection_policy: str = "quarantine"
    # The kinds memory-store keeps, by kind (rules/write_policy.py); None: the policy is off.
    write_kinds: dict[str, bool] | None = None

    @property
    def trust(self) -> TrustPolicy:
        """Confidence by source, the stale and verification marks, decay (rules/trust.py):
        held by the ranking, which weighs confidence."""
        return self.ranking.trust

    def default_ttl_seconds(self, source: Source) -> float | None:
        days = self.ttl_days.get(source, 0.0)
        return days * 86_400 if days else None
