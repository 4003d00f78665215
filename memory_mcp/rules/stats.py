"""What one agent's view of the store holds: counts per scope, source and owner, how many
have expired, and how much of it is searchable by meaning (`memory-mcp stats`).

Counted over `MemoryService.visible_records`, so the numbers obey the same visibility rules
as the tools: a worker's stats never count another agent's private memories."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memory_mcp.models import Caller

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService

# Texts per look-up of their vectors: one IN (...) list per chunk.
EMBEDDED_CHUNK = 500


@dataclass
class VisibleStats:
    agent_id: str
    role: str
    total: int = 0
    expired: int = 0  # not yet purged: memory-get still shows them, search does not
    by_scope: dict[str, int] = field(default_factory=dict)
    by_source: dict[str, int] = field(default_factory=dict)
    by_agent: dict[str, int] = field(default_factory=dict)  # by owner
    by_project: dict[str, int] = field(default_factory=dict)
    distinct_texts: int = 0
    embedded_texts: int = 0  # of distinct_texts, those with a vector from `model`
    model: str = ""

    @property
    def embedded_share(self) -> float:
        """The share of texts searchable by meaning (1.0 for an empty store)."""
        return self.embedded_texts / self.distinct_texts if self.distinct_texts else 1.0


async def visible_stats(
    service: MemoryService, caller: Caller, project: str | None = None
) -> VisibleStats:
    """Over the projects `project` covers (as a search's argument)."""
    stats = VisibleStats(caller.agent_id, caller.role.value, model=service.vectors.model)
    scopes: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    owners: Counter[str] = Counter()
    projects: Counter[str] = Counter()
    texts: dict[str, None] = {}  # ordered, distinct
    async for record in service.visible_records(caller, project):
        stats.total += 1
        stats.expired += service.is_expired(record)
        scopes[record.scope.value] += 1
        sources[record.source.value] += 1
        owners[record.agent_id] += 1
        projects[record.project] += 1
        texts[record.value] = None
    stats.by_scope = dict(scopes.most_common())
    stats.by_source = dict(sources.most_common())
    stats.by_agent = dict(owners.most_common())
    stats.by_project = dict(projects.most_common())
    distinct = list(texts)
    stats.distinct_texts = len(distinct)
    for start in range(0, len(distinct), EMBEDDED_CHUNK):
        chunk = distinct[start : start + EMBEDDED_CHUNK]
        stats.embedded_texts += len(chunk) - len(await service.vectors.unembedded(chunk))
    return stats
