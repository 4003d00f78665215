"""What the MCP tools return: one pydantic model per concept (a memory, a search hit, a
stored memory, a deleted one, a learning). The SDK publishes each model's JSON schema as
the tool's `outputSchema` and validates every result against it before sending it as
`structuredContent`.

Optional extras (flags, about_agent, file_path, truncated...) are left out of a result
when they are empty, as clients have always seen them; the schema lists them as optional."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from memory_mcp.models import LearningCategory, MemoryRecord, Scope, Source, UpsertOutcome
from memory_mcp.validation import iso


class ToolResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Fields left out of the result when None or empty.
    omitted_when_empty: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _leave_out_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.omitted_when_empty:
            if data.get(name) in (None, [], False):
                data.pop(name, None)
        return data


class StoredMemory(ToolResult):
    """store_memory's answer: which memory was written, at which version."""

    omitted_when_empty = frozenset({"flags"})

    id: int
    key: str
    scope: Scope
    version: int
    created: bool
    agent_id: str
    updated_by: str
    expires_at: str | None
    flags: list[str] | None = None

    @classmethod
    def of(cls, outcome: UpsertOutcome) -> StoredMemory:
        record = outcome.record
        return cls(
            id=record.id,
            key=record.key,
            scope=record.scope,
            version=record.version,
            created=outcome.created,
            agent_id=record.agent_id,
            updated_by=record.updated_by,
            expires_at=iso(record.expires_at),
            flags=record.flags or None,
        )


class Memory(ToolResult):
    """A whole memory, as memory-get returns it (expired ones too, with `expired: true`)."""

    omitted_when_empty = frozenset({"about_agent", "flags", "file_path"})

    id: int
    key: str
    value: str
    scope: Scope
    agent_id: str
    updated_by: str
    source: Source
    tags: list[str]
    metadata: dict[str, Any]
    confidence: float | None
    pinned: bool
    version: int
    access_count: int
    created_at: str | None
    updated_at: str | None
    last_accessed_at: str | None
    expires_at: str | None
    expired: bool
    about_agent: str | None = None
    flags: list[str] | None = None
    file_path: str | None = None

    @classmethod
    def of(cls, record: MemoryRecord, expired: bool) -> Memory:
        return cls(
            id=record.id,
            key=record.key,
            value=record.value,
            scope=record.scope,
            agent_id=record.agent_id,
            updated_by=record.updated_by,
            source=record.source,
            tags=record.tags,
            metadata=record.metadata,
            confidence=record.confidence,
            pinned=record.pinned,
            version=record.version,
            access_count=record.access_count,
            created_at=iso(record.created_at),
            updated_at=iso(record.updated_at),
            last_accessed_at=iso(record.last_accessed_at),
            expires_at=iso(record.expires_at),
            expired=expired,
            about_agent=record.about_agent or None,
            flags=record.flags or None,
            file_path=record.file_path or None,
        )


class SearchHit(ToolResult):
    """One memory-search result: the memory with its value cut to the configured length."""

    omitted_when_empty = frozenset({"truncated", "full_length", "about_agent", "flags"})

    id: int
    key: str
    value: str
    scope: Scope
    agent_id: str
    updated_by: str
    source: Source
    tags: list[str]
    score: float
    matched_by: str
    created_at: str | None
    updated_at: str | None
    expires_at: str | None
    truncated: bool | None = None
    full_length: int | None = None
    about_agent: str | None = None
    flags: list[str] | None = None

    @classmethod
    def of(cls, record: MemoryRecord, score: float, matched_by: str, max_chars: int) -> SearchHit:
        cut = len(record.value) > max_chars
        return cls(
            id=record.id,
            key=record.key,
            value=record.value[:max_chars],
            scope=record.scope,
            agent_id=record.agent_id,
            updated_by=record.updated_by,
            source=record.source,
            tags=record.tags,
            score=round(score, 4),
            matched_by=matched_by,
            created_at=iso(record.created_at),
            updated_at=iso(record.updated_at),
            expires_at=iso(record.expires_at),
            truncated=True if cut else None,
            full_length=len(record.value) if cut else None,
            about_agent=record.about_agent or None,
            flags=record.flags or None,
        )


class SearchResults(ToolResult):
    """memory-search's answer. `semantic: false`: keyword search only (see notices)."""

    omitted_when_empty = frozenset({"notices"})

    results: list[SearchHit]
    semantic: bool
    notices: list[str] | None = None


class DeleteResult(ToolResult):
    deleted: bool
    id: int


class Learning(ToolResult):
    """inject-learning's answer: the swarm memory holding the learning."""

    omitted_when_empty = frozenset({"about_agent"})

    id: int
    key: str
    scope: Scope
    version: int
    created: bool
    category: LearningCategory
    agent_id: str
    about_agent: str | None = None

    @classmethod
    def of(cls, outcome: UpsertOutcome, category: LearningCategory) -> Learning:
        record = outcome.record
        return cls(
            id=record.id,
            key=record.key,
            scope=record.scope,
            version=record.version,
            created=outcome.created,
            category=category,
            agent_id=record.agent_id,
            about_agent=record.about_agent or None,
        )
