"""store_memory's `memories`: each item parsed into the StoreRequest a single call makes
(rules/batch.py stores them all or none). An item is an object with store_memory's
arguments for one memory; a bad one is named by its place (`memories[2].scope`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import StoreRequest
from memory_mcp.rules.batch import MAX_BATCH


class BatchMemory(BaseModel):
    """One memory of `memories`: store_memory's arguments, typed as the tool types them."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key: str
    value: str | dict[str, Any] | list[Any]
    scope: str = "agent"
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    ttl_seconds: float | None = None
    expires_at: str | None = None
    source: str | None = None
    confidence: float | None = None
    pinned: bool | None = None
    expected_version: int | None = None
    replace: bool = False
    project: str | None = None
    task: str | None = None
    kind: str | None = None


def batch_requests(memories: list[Any]) -> list[StoreRequest]:
    """The requests of `memories`, in order; InvalidInputError names the first bad item."""
    if not 1 <= len(memories) <= MAX_BATCH:
        raise InvalidInputError("memories", f"give 1 to {MAX_BATCH} memories, got {len(memories)}")
    return [_request(index, item) for index, item in enumerate(memories)]


def _request(index: int, item: Any) -> StoreRequest:
    where = f"memories[{index}]"
    if not isinstance(item, dict):
        raise InvalidInputError(where, "must be an object with key and value")
    try:
        memory = BatchMemory.model_validate(_numbers_as_floats(item))
    except ValidationError as exc:
        raise InvalidInputError(f"{where}.{_field_of(exc)}", _problem_of(exc)) from None
    try:
        return StoreRequest(
            key=memory.key,
            value=memory.value,
            scope=v.parse_store_scope(memory.scope),
            tags=memory.tags,
            metadata=memory.metadata,
            ttl_seconds=memory.ttl_seconds,
            expires_at=v.parse_expires_at(memory.expires_at),
            source=None if memory.source is None else v.parse_source(memory.source, v.TOOL_SOURCES),
            confidence=memory.confidence,
            pinned=memory.pinned,
            expected_version=memory.expected_version,
            replace=memory.replace,
            project=memory.project,
            task=memory.task,
            kind=memory.kind,
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}.{exc.field}", exc.problem) from None


def _numbers_as_floats(item: dict[str, Any]) -> dict[str, Any]:
    """ttl_seconds and confidence take any JSON number (strict mode refuses 5 for a float)."""
    return {
        name: float(value)
        if name in ("ttl_seconds", "confidence")
        and isinstance(value, int)
        and not isinstance(value, bool)
        else value
        for name, value in item.items()
    }


def _field_of(exc: ValidationError) -> str:
    location = exc.errors(include_url=False)[0]["loc"]
    return str(location[0]) if location else "value"


def _problem_of(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    if error["type"] == "extra_forbidden":
        return "is not an argument of store_memory"
    if error["type"] == "missing":
        return "is required"
    return str(error["msg"]).lower()


__all__ = ["BatchMemory", "batch_requests"]
