"""MemoryService as the ways in see it: the calls the MCP tools, the web view, the CLI and
the hooks make, and nothing of how they are done.

The ways in are typed against this Protocol, not against service.py, so that naming the
service's type does not pull the store, the vector index and the search pipeline into
every edge's imports (issue 22: the import graph's depth). app.py builds the real
MemoryService and mypy checks that it fits here (`AppContext.service`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memory_mcp.browsing import (
        DeleteManyResult,
        HistoryPage,
        ListFilters,
        MemoryPage,
        MemoryVersion,
    )
    from memory_mcp.link_views import LinkedMemory, LinkEvent, Related
    from memory_mcp.models import (
        BatchOutcome,
        Caller,
        LearningCategory,
        Link,
        LinkOutcome,
        MemoryRecord,
        NewMemory,
        Scope,
        Source,
        StoreRequest,
        UpsertOutcome,
    )
    from memory_mcp.policy import Policy
    from memory_mcp.search.hits import SearchResult
    from memory_mcp.semantic.embeddings import Embedder
    from memory_mcp.semantic.similar_check import SimilarCheck


class TextVectors(Protocol):
    """The vectors of memory values, as an import fills them in."""

    async def unembedded(self, texts: Sequence[str]) -> list[str]: ...

    async def embed_texts(self, texts: Sequence[str]) -> int: ...


class MemoryApi(Protocol):
    """Every rule (scopes, permissions, versions, the cap) is applied behind these calls;
    service.py, reading.py and linking.py say what each does."""

    clock: Callable[[], float]
    embedder: Embedder
    policy: Policy

    @property
    def vectors(self) -> TextVectors: ...

    @property
    def vector_model(self) -> str: ...

    # -- writing
    async def store_memory(
        self, caller: Caller, request: StoreRequest, *, embed_now: bool = ...
    ) -> UpsertOutcome: ...

    def prepare_memory(self, caller: Caller, request: StoreRequest) -> NewMemory: ...

    async def similar_to(self, caller: Caller, record: MemoryRecord) -> SimilarCheck: ...

    async def store_and_check(
        self, caller: Caller, request: StoreRequest
    ) -> tuple[UpsertOutcome, SimilarCheck]: ...

    async def write_batch(
        self, memories: Sequence[tuple[Caller, NewMemory, float | None]]
    ) -> BatchOutcome: ...

    async def ownership_refusals(
        self, memories: Sequence[tuple[Caller, NewMemory]]
    ) -> dict[int, str]: ...

    async def inject_learning(
        self,
        caller: Caller,
        learning: str,
        category: LearningCategory,
        agent_id: str | None = ...,
    ) -> UpsertOutcome: ...

    async def delete(self, caller: Caller, memory_id: Any) -> int: ...

    async def delete_by_key(self, caller: Caller, key: str, scope: Scope = ...) -> int: ...

    async def delete_many(
        self,
        caller: Caller,
        *,
        tags: list[str] | None = ...,
        source: Source | None = ...,
        older_than: float | None = ...,
        scope: Scope | None = ...,
        dry_run: bool = ...,
        limit: int = ...,
    ) -> DeleteManyResult: ...

    async def revert(
        self, caller: Caller, memory_id: Any, version: Any, expected_version: int | None = ...
    ) -> UpsertOutcome: ...

    async def purge_expired(self) -> int: ...

    # -- reading
    def visible_records(self, caller: Caller) -> AsyncIterator[MemoryRecord]: ...

    def all_records(self) -> AsyncIterator[MemoryRecord]: ...

    async def recent_visible(self, caller: Caller, limit: int) -> list[MemoryRecord]: ...

    async def count(self) -> int: ...

    async def cap_usage(self, agent_id: str, identities: list[str]) -> tuple[int, int]: ...

    async def flush_accesses(self) -> None: ...

    async def get(self, caller: Caller, memory_id: Any, *, count: bool = ...) -> MemoryRecord: ...

    async def by_identity(self, caller: Caller, identity: str) -> MemoryRecord | None: ...

    async def list_memories(
        self,
        caller: Caller,
        filters: ListFilters | None = ...,
        order: str = ...,
        cursor: str | None = ...,
        limit: int = ...,
    ) -> MemoryPage: ...

    async def history(
        self, caller: Caller, memory_id: Any, limit: int | None = ..., before: Any = ...
    ) -> HistoryPage: ...

    async def version_of(self, caller: Caller, memory_id: Any, version: Any) -> MemoryVersion: ...

    def is_expired(self, record: MemoryRecord) -> bool: ...

    async def search(
        self,
        caller: Caller,
        query: str,
        limit: int = ...,
        scope: Scope | None = ...,
        tags: list[str] | None = ...,
        source: Source | None = ...,
        include_expired: bool = ...,
        *,
        since: str | None = ...,
        until: str | None = ...,
        min_score: float | None = ...,
        expand: bool | None = ...,
        explain: bool = ...,
    ) -> SearchResult: ...

    # -- links
    async def link(
        self, caller: Caller, memory_id: Any, to: Any, relation: Any, *, remove: bool = ...
    ) -> LinkOutcome: ...

    async def change_links(
        self,
        caller: Caller,
        memory_id: Any,
        adds: Sequence[tuple[Any, Any]],
        removes: Sequence[tuple[Any, Any]] = ...,
    ) -> LinkOutcome: ...

    async def links_of(
        self, caller: Caller, record: MemoryRecord, limit: int = ...
    ) -> tuple[list[LinkedMemory], bool]: ...

    async def related(
        self,
        caller: Caller,
        memory_id: Any,
        *,
        depth: Any = ...,
        direction: Any = ...,
        relation: Any = ...,
        limit: Any = ...,
        fan_out: Any = ...,
        include_expired: bool = ...,
    ) -> Related: ...

    async def links_among(self, caller: Caller, memory_ids: Sequence[int]) -> list[Link]: ...

    async def link_history(
        self, caller: Caller, memory_id: Any, limit: int = ...
    ) -> list[LinkEvent]: ...
