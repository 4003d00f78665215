"""Checks on every argument that reaches the service. Each failure names the argument."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Scope, Source

MAX_KEY_CHARS = 256
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_METADATA_BYTES = 16_384
MAX_QUERY_CHARS = 2_000
MAX_SEARCH_LIMIT = 50

SCOPE_ALIASES = {"global": Scope.SWARM}


def _printable(text: str) -> bool:
    return all(ch in "\t\n\r" or ord(ch) >= 32 for ch in text)


def clean_key(key: Any) -> str:
    if not isinstance(key, str):
        raise InvalidInputError("key", f"must be a string, got {type(key).__name__}")
    key = key.strip()
    if not key:
        raise InvalidInputError("key", "must not be empty")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError("key", f"is {len(key)} characters; the limit is {MAX_KEY_CHARS}")
    if not _printable(key) or "\n" in key:
        raise InvalidInputError("key", "must be one line without control characters")
    return key


def clean_value(value: Any, max_chars: int, field: str = "value") -> str:
    if not isinstance(value, str):
        raise InvalidInputError(field, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(field, "must not be empty")
    if len(value) > max_chars:
        raise InvalidInputError(
            field, f"is {len(value):,} characters; the limit is {max_chars:,} (split it up)"
        )
    if "\x00" in value:
        raise InvalidInputError(field, "contains a NUL character")
    return value


def parse_scope(scope: Any, allow_all: bool = False) -> Scope | None:
    """A scope name; `global` is another name for swarm; `all` (search only) means None."""
    if isinstance(scope, str):
        name = scope.strip().lower()
        if allow_all and name == "all":
            return None
        if name in SCOPE_ALIASES:
            return SCOPE_ALIASES[name]
        try:
            return Scope(name)
        except ValueError:
            pass
    choices = "all, session, agent, swarm" if allow_all else "session, agent, swarm (or global)"
    raise InvalidInputError("scope", f"{scope!r} is not one of {choices}")


def parse_source(source: Any, allowed: tuple[Source, ...]) -> Source:
    if isinstance(source, str):
        try:
            parsed = Source(source.strip().lower())
            if parsed in allowed:
                return parsed
        except ValueError:
            pass
    names = ", ".join(s.value for s in allowed)
    raise InvalidInputError("source", f"{source!r} is not one of {names}")


def clean_tags(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInputError("tags", "must be a list of strings")
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip().lower()
        if not tag or len(tag) > MAX_TAG_CHARS or not _printable(tag) or "\n" in tag:
            raise InvalidInputError("tags", f"{tag!r} must be 1-{MAX_TAG_CHARS} printable chars")
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > MAX_TAGS:
        raise InvalidInputError("tags", f"at most {MAX_TAGS} tags, got {len(cleaned)}")
    return cleaned


def clean_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInputError("metadata", "must be a JSON object")
    try:
        encoded = json.dumps(metadata, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("metadata", f"is not plain JSON: {exc}") from exc
    if len(encoded.encode()) > MAX_METADATA_BYTES:
        raise InvalidInputError("metadata", f"is larger than {MAX_METADATA_BYTES:,} bytes")
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


def clean_confidence(confidence: Any) -> float | None:
    if confidence is None:
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise InvalidInputError("confidence", "must be a number between 0 and 1")
    if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        raise InvalidInputError("confidence", f"{confidence} is not between 0 and 1")
    return float(confidence)


def parse_datetime(value: Any, field: str) -> float:
    """An ISO 8601 date-time (naive means UTC) as UNIX seconds."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(field, "must be an ISO 8601 date-time, e.g. 2026-12-31T18:00:00Z")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInputError(
            field, f"{value!r} is not an ISO 8601 date-time (e.g. 2026-12-31T18:00:00Z)"
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def resolve_expiry(
    ttl_seconds: Any,
    expires_at: Any,
    default_ttl_seconds: float | None,
    now: float,
) -> float | None:
    """Explicit ttl_seconds or expires_at win; otherwise the source's default TTL."""
    if ttl_seconds is not None and expires_at is not None:
        raise InvalidInputError("ttl_seconds", "give ttl_seconds or expires_at, not both")
    if ttl_seconds is not None:
        if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float):
            raise InvalidInputError("ttl_seconds", "must be a number of seconds")
        if not math.isfinite(ttl_seconds) or ttl_seconds <= 0 or ttl_seconds > 100 * 365 * 86400:
            raise InvalidInputError("ttl_seconds", f"{ttl_seconds} must be > 0 and < 100 years")
        return now + float(ttl_seconds)
    if expires_at is not None:
        when = parse_datetime(expires_at, "expires_at")
        if when <= now:
            raise InvalidInputError("expires_at", f"{expires_at!r} is already in the past")
        return when
    return now + default_ttl_seconds if default_ttl_seconds else None


def clean_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInputError("limit", "must be a whole number")
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInputError("limit", f"{limit} is not between 1 and {MAX_SEARCH_LIMIT}")
    return limit


def clean_query(query: Any) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("query", "must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"is longer than {MAX_QUERY_CHARS} characters")
    return query.strip()


def clean_id(memory_id: Any) -> int:
    """Ids are positive integers; numeric strings are accepted because clients send them."""
    if isinstance(memory_id, str) and memory_id.strip().isdigit():
        memory_id = int(memory_id.strip())
    if isinstance(memory_id, bool) or not isinstance(memory_id, int) or memory_id <= 0:
        raise InvalidInputError("id", f"{memory_id!r} is not a memory id (a positive integer)")
    return memory_id


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z"
    )
