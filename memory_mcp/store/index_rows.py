"""The shapes the vector index is fed with (semantic/vector_index.py): what it needs of one
memory to filter and score it, and a batch of changes since a revision. Plain data, so
the index and the store that fills it need nothing else of each other."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class IndexRow:
    """What the in-process vector index needs of one memory to filter and score it."""

    id: int
    agent_id: str
    scope: str
    session_id: str
    source: str
    expires_at: float | None
    tags: list[str]
    vector: np.ndarray | None
    updated_at: float = 0.0
    project: str = "*"
    task: str | None = None
    archived: bool = False
    valid_from: float | None = None  # rules/validity.py; None: always
    valid_to: float | None = None  # None: current


@dataclass
class IndexDelta:
    revision: int
    upserted: list[IndexRow] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
