"""What the near-duplicate check at write time answers (semantic/similar.py): plain data,
so store_memory's result (results/memories.py) names it without importing the check."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SimilarMemory:
    id: int
    key: str
    score: float  # cosine similarity to the memory just written, in [-1, 1]


@dataclass(frozen=True)
class ConflictCandidate:
    """A similar memory the new one may contradict (rules/conflicts.py): why, and the call
    that would close its window (rules/validity.py)."""

    id: int
    key: str
    why: str
    supersede: str


@dataclass
class SimilarCheck:
    """`checked` False: the memory just written has no vector yet (the model is loading),
    so it was compared with nothing."""

    memories: list[SimilarMemory] = field(default_factory=list)
    checked: bool = True
    conflicts: list[ConflictCandidate] = field(default_factory=list)


__all__ = ["ConflictCandidate", "SimilarCheck", "SimilarMemory"]
