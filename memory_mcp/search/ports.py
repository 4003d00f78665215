"""What a search (search/pipeline.py) takes of the store and of the vectors: Protocols with
the methods it calls. The composition root hands it the real ones (MemoryStore,
semantic/vectors.py's Vectors holding a VectorSearch), and mypy checks that they fit; the
search itself imports neither, so it sits below both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

import numpy as np

from memory_mcp.models import (
    KeywordFinds,
    KeywordQuery,
    MemoryRecord,
    PastVersion,
    RankFacts,
    Visibility,
)
from memory_mcp.search.expansion import CurrentLinks

# A backend's own answers to `scan` and `prepare`, opaque to the search, which only hands
# them back to the same backend's `nearest`.
ScanT = TypeVar("ScanT")
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

    async def versions_at(self, memory_ids: Sequence[int], at: float) -> dict[int, PastVersion]: ...

    async def past_versions_holding(
        self, terms: list[str], vis: Visibility, limit: int
    ) -> list[PastVersion]: ...


class VectorSearch(Protocol[ScanT, PreparedT]):
    """A vector backend: where the vector arm of a search runs. Two implement it, and the
    composition root (app/root.py) picks one by the database:
    - semantic/in_process_index.py's InProcessIndex (SQLite): every vector in a numpy
      index in this process, quantised and persisted beside the store when big;
    - store/postgres/pgvector_search.py's PgvectorSearch (PostgreSQL): pgvector's HNSW
      index, searched in the database, nothing kept in the process.
    A search calls catch_up, then scan and prepare with its query while its keyword arm
    runs, exact_vectors with the keyword candidates, and nearest after both arms, handing
    it what the earlier steps returned; a step with nothing to do returns None or {}.
    `nearest` alone gives the same answer: the earlier steps only move work beside the
    keyword arm."""

    async def catch_up(self) -> None:
        """See every committed write (of any process) from now on: the in-process index
        reads the rows changed since it last looked; pgvector reads the rows themselves
        and has nothing to do."""
        ...

    async def scan(self, query: np.ndarray, vis: Visibility) -> ScanT | None:
        """The part of `nearest` that needs only the query and `vis`: the in-process
        index's matrix product (of the rows `vis` lets through when they are few), in a
        thread, on a large index; None otherwise."""
        ...

    async def prepare(
        self, query: np.ndarray, vis: Visibility, k: int, scan: ScanT | None
    ) -> PreparedT | None:
        """The part of `nearest` that needs no keyword candidates: a quantised index's
        shortlist and its exact vectors; pgvector's k nearest memories; None where there
        is nothing to do (an exact in-process index)."""
        ...

    async def exact_vectors(
        self, memory_ids: Sequence[int], vis: Visibility
    ) -> Mapping[int, np.ndarray]:
        """The stored vectors `nearest` would read for `memory_ids` (the keyword arm's
        candidates), read by the keyword arm; {} where it reads none (an exact in-process
        index has them). pgvector's are of the memories `vis` lets through only."""
        ...

    async def nearest(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: ScanT | None = None,
        prepared: PreparedT | None = None,
        known: Mapping[int, np.ndarray] | None = None,
    ) -> list[tuple[int, float]]:
        """(memory id, cosine similarity) of the k nearest memories `vis` allows, best
        first, then those of `also` (the keyword arm's candidates) that `vis` allows and
        are not among them. A memory with no vector yet is not there. `scan`, `prepared`,
        `known`: this search's `scan`, `prepare` and `exact_vectors`, used where they still
        hold."""
        ...

    async def persist_if_due(self, now: float) -> bool:
        """The background worker's, after each catch-up: write the index beside the store
        if it is far enough behind (a big in-process index); whether it wrote."""
        ...

    async def build_coarse_if_due(self) -> bool:
        """The background worker's: build a big in-process index's coarse index if it has
        none or has outgrown it; whether it built one."""
        ...


class QueryVectors(Protocol[ScanT, PreparedT]):
    """The vector arm (semantic/vectors.py, Vectors): the query's embedding, and the
    backend that searches with it."""

    @property
    def search(self) -> VectorSearch[ScanT, PreparedT]: ...

    async def model_ready(self, wait_seconds: float) -> bool: ...

    async def embed_query(self, text: str) -> np.ndarray: ...

    async def embed_stored_while_loading(self) -> int: ...

    async def embed_texts(self, texts: Sequence[str]) -> int: ...


__all__ = ["PreparedT", "QueryVectors", "ScanT", "SearchStore", "VectorSearch"]
