"""The knobs of the memory rules (MemoryService), built once from Settings by the
composition root (app/reads.py, policy_from)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_mcp.models import Caps, Source
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
    max_entries_per_project: int = 0

    @property
    def caps(self) -> Caps:
        """The caps a write is held to (store/eviction.py)."""
        return Caps(self.max_memories_per_agent, self.max_entries_per_project)

    def default_ttl_seconds(self, source: Source) -> float | None:
        days = self.ttl_days.get(source, 0.0)
        return days * 86_400 if days else None
