"""What a search answers (search/pipeline.py): its hits, each with the parts of its score.
Plain data, so whoever shows a search's results (the tools, the CLI, the web view,
results/explanations.py) imports these and not the search itself."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_mcp.models import MemoryRecord
from memory_mcp.search.expansion import LinkedFrom
from memory_mcp.search.ranking import PriorParts, Relevance
from memory_mcp.search.time_cues import TimeCue


@dataclass
class RankedHit:
    """One result as the search ranked it, and the parts of its score (memory-search's
    `explain`; the tool shows it as results/memories.SearchHit):
    score = relevance * prior, then, when the search matched a key or an identifier
    exactly, (exact_level + that) / (highest level among the results + 1)."""

    record: MemoryRecord
    score: float
    relevance: float
    matched_by: str
    parts: Relevance | None = None
    prior: PriorParts | None = None
    exact_level: int = 0  # 2: the key is the query; 1: holds a rare identifier of it
    via: LinkedFrom | None = None  # a link to a strong hit brought it in, or lifted it
    # With `explain`: the memories (id, key) in its context that hold query words, i.e.
    # that lent it the words it matched by (store/write_context.py).
    context_from: list[tuple[int, str]] = field(default_factory=list)
    # The factor of the query's time expression (search/time_cues.py), when it applied.
    time_factor: float | None = None


@dataclass
class SearchResult:
    hits: list[RankedHit]
    notices: list[str] = field(default_factory=list)
    semantic: bool = True  # False: keyword search only (the model was not ready)
    # The query's time expression and its range (search/time_cues.py); `time_applied`:
    # some candidate was stated in it, so it ranked them.
    time_cue: TimeCue | None = None
    time_applied: bool = False


__all__ = ["RankedHit", "SearchResult"]
