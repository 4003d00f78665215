"""What the near-duplicate check at write time answers (semantic/similar.py): plain data,
so store_memory's result (results/memories.py) names it without importing the check."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SimilarMemory:
    id: int
    key: str
    score: float  # cosine similarity to the memory just written, in [-1, 1]


@dataclass
class SimilarCheck:
    """`checked` False: the memory just written has no vector yet (the model is loading),
    so it was compared with nothing."""

    memories: list[SimilarMemory] = field(default_factory=list)
    checked: bool = True


__all__ = ["SimilarCheck", "SimilarMemory"]
