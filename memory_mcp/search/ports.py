"""What a search (search/pipeline.py) takes of the store and of the vectors: Protocols with
the methods it calls. The composition root hands it the real ones (MemoryStore,
semantic/vectors.py's Vectors), and mypy checks that they fit; the search itself imports
neither, so it sits below both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

import numpy as np

from memory_mcp.models import KeywordFinds, KeywordQuery, MemoryRecord, RankFacts, Visibility
from memory_mcp.search.expansion import CurrentLinks

# The vector index's scan started early (semantic/vector_index.py): opaque to the search,
# which only hands it back to `nearest`.
ScanT = TypeVar("ScanT")
# What the vector arm works out before the keyword candidates are known (a big index's
# shortlist and its exact vectors, semantic/in_process_index.py): also handed back.
PreparedT = TypeVar("PreparedT")


class SearchStore(Protocol):
    """The store's reads on a search's path (store/repository.py, MemoryStore)."""

    @property
    def links(self) -> CurrentLinks: ...

    async def keyword_finds(self, query: KeywordQuery, vis: Visibility) -> KeywordFinds: ...

    async def rank_facts(
        self, memory_ids: Sequence[int], whole: Sequence[int] = ()
    ) -> tuple[dict[int, RankFacts], dict[int, MemoryRecord]]: ...

    async def fetch_many(self, memory_ids: Sequence[int]) -> dict[int, MemoryRecord]: ...

    async def context_lenders(
        self, memory_ids: Sequence[int], terms: Sequence[str], vis: Visibility
    ) -> dict[int, list[tuple[int, str]]]: ...


class QueryVectors(Protocol[ScanT, PreparedT]):
    """The vector arm (semantic/vectors.py, Vectors)."""

    async def model_ready(self, wait_seconds: float) -> bool: ...

    async def catch_up(self) -> None: ...

    async def embed_query(self, text: str) -> np.ndarray: ...

    async def scan(self, query: np.ndarray) -> ScanT | None: ...

    async def prepare(
        self, query: np.ndarray, vis: Visibility, k: int, scan: ScanT | None
    ) -> PreparedT | None: ...

    async def exact_vectors(
        self, memory_ids: Sequence[int], vis: Visibility
    ) -> Mapping[int, np.ndarray]: ...

    async def nearest(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: ScanT | None = None,
        prepared: PreparedT | None = None,
        known: Mapping[int, np.ndarray] | None = None,
    ) -> list[tuple[int, float]]: ...


__all__ = ["PreparedT", "QueryVectors", "ScanT", "SearchStore"]
