"""The knobs of the memory rules (MemoryService), built once from Settings by the
composition root (app/reads.py, policy_from)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_mcp.models import Caps, Source
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
    # The kinds store_memory keeps, by kind (rules/write_policy.py); None: the policy is off.
    write_kinds: dict[str, bool] | None = None

    @property
    def trust(self) -> TrustPolicy:
        """Confidence by source, the stale and verification marks, decay (rules/trust.py):
        held by the ranking, which weighs confidence."""
        return self.ranking.trust

    # Lifetime by kind, in days, 0 permanent (Settings.ttl_kind_days).
    kind_ttl_days: dict[str, float] = field(default_factory=dict)
    max_entries_per_project: int = 0

    @property
    def caps(self) -> Caps:
        """The caps a write is held to (store/eviction.py)."""
        return Caps(self.max_memories_per_agent, self.max_entries_per_project)

    def default_ttl_seconds(self, source: Source, kind: str | None = None) -> float | None:
        """A new memory's lifetime when no TTL is given: its kind's, if the table names
        the kind (a kind says more of how long a memory matters than who wrote it),
        else its source's; None: permanent."""
        if kind is not None and kind in self.kind_ttl_days:
            days = self.kind_ttl_days[kind]
        else:
            days = self.ttl_days.get(source, 0.0)
        return days * 86_400 if days else None
