"""Checks on every argument that reaches the service. Each failure names the argument."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any, TypeGuard

from memory_mcp.checks.text_safety import forbidden_name_character, unpaired_surrogate
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import KIND_PATTERN, KINDS, LearningCategory, Scope, Source

MAX_KEY_CHARS = 256
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_RELATION_CHARS = 128
MAX_METADATA_BYTES = 16_384
MAX_METADATA_DEPTH = 20
MAX_ARGUMENT_VALUES = 100_000  # strings, numbers, lists... in one call's arguments
# Dates are kept as UNIX seconds and shown as ISO 8601, so every date must be one that
# datetime can hold in UTC after any offset is applied; expiry is at most 100 years away.
MAX_FUTURE_SECONDS = 100 * 365 * 86_400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_DATE = datetime(9000, 1, 1, tzinfo=UTC)
MAX_QUERY_CHARS = 2_000
MAX_SEARCH_LIMIT = 50

SCOPE_ALIASES = {"global": Scope.SWARM}
# The sources an agent may give a memory through the tools (file_index is the notes').
TOOL_SOURCES = (
    Source.MANUAL,
    Source.TASK_COMPLETION,
    Source.SESSION_SUMMARY,
    Source.USER_STATED,
    Source.TOOL_VERIFIED,
    Source.AGENT_INFERRED,
    Source.RECALLED,
    Source.EXTERNAL,
)


def refuse_unpaired_surrogates(text: str, field: str) -> None:
    """Every stored string must be encodable as UTF-8, or it could never be read back."""
    surrogate = unpaired_surrogate(text)
    if surrogate:
        raise InvalidInputError(
            field, f"contains an unpaired surrogate ({surrogate}); send valid Unicode text"
        )


def refuse_hidden_characters(name: str, field: str) -> None:
    """Names (keys, tags) are shown to people and models as labels: one line, and no
    character that is invisible or reorders the text around it."""
    bad = forbidden_name_character(name)
    if bad:
        raise InvalidInputError(
            field, f"must be one line without control or invisible characters; found {bad}"
        )


def clean_key(key: str, field: str = "key") -> str:
    key = key.strip()
    if not key:
        raise InvalidInputError(field, "must not be empty")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInputError(field, f"is {len(key):,} characters; the limit is {MAX_KEY_CHARS}")
    refuse_hidden_characters(key, field)
    return key


def clean_relation(relation: Any, field: str = "relation") -> str:
    """A link's relation: a short label in active voice ("works_at", "depends_on"), kept as
    given (the reference graph server matches relation types exactly), one line."""
    if not isinstance(relation, str) or not relation.strip():
        raise InvalidInputError(field, "must be a non-empty text, e.g. 'depends_on'")
    if len(relation) > MAX_RELATION_CHARS:
        raise InvalidInputError(
            field, f"is {len(relation):,} characters; the limit is {MAX_RELATION_CHARS}"
        )
    refuse_hidden_characters(relation, field)
    refuse_unpaired_surrogates(relation, field)
    return relation


def clean_value(value: str, max_chars: int, field: str = "value") -> str:
    if not value.strip():
        raise InvalidInputError(field, "must not be empty")
    if len(value) > max_chars:
        raise InvalidInputError(
            field, f"is {len(value):,} characters; the limit is {max_chars:,} (split it up)"
        )
    if "\x00" in value:
        raise InvalidInputError(field, "contains a NUL character")
    refuse_unpaired_surrogates(value, field)
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
    raise InvalidInputError("scope", f"{shown(scope)} is not one of {choices}")


def parse_source(source: Any, allowed: tuple[Source, ...]) -> Source:
    if isinstance(source, str):
        try:
            parsed = Source(source.strip().lower())
            if parsed in allowed:
                return parsed
        except ValueError:
            pass
    names = ", ".join(s.value for s in allowed)
    raise InvalidInputError("source", f"{shown(source)} is not one of {names}")


def parse_store_scope(scope: str) -> Scope:
    """The scope of a memory to store (`all` is for searching only)."""
    parsed = parse_scope(scope)
    assert parsed is not None  # parse_scope returns None only for `all`, when allowed
    return parsed


def parse_learning_category(category: str) -> LearningCategory:
    try:
        return LearningCategory(category)
    except ValueError:
        names = ", ".join(c.value for c in LearningCategory)
        raise InvalidInputError("category", f"{shown(category)} is not one of {names}") from None


def parse_optional_datetime(value: str | None, field: str) -> float | None:
    return None if value is None else parse_datetime(value, field)


# What `expires_at` takes to say "never expires": an update of a memory that expires then
# keeps it for good (StoreRequest: `expires_at` math.inf).
NEVER = "never"


def parse_expires_at(value: str | None, field: str = "expires_at") -> float | None:
    """An expiry as store_memory takes it: an ISO 8601 time, or "never" (math.inf: no
    expiry, and an update removes the one it had); None: not given."""
    if value is not None and value.strip().lower() == NEVER:
        return math.inf
    return parse_optional_datetime(value, field)


def clean_tags(tags: list[str]) -> list[str]:
    # Sizes first: a huge list is refused before any per-tag work.
    if len(tags) > MAX_TAGS:
        raise InvalidInputError("tags", f"at most {MAX_TAGS} tags, got {len(tags):,}")
    cleaned: dict[str, None] = {}  # ordered, de-duplicated
    for number, tag in enumerate(tags, start=1):  # counted from 1, as characters are
        tag = tag.strip().lower()
        if not tag or len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError("tags", f"tag {number} must be 1-{MAX_TAG_CHARS} characters")
        refuse_hidden_characters(tag, "tags")
        cleaned[tag] = None
    return list(cleaned)


def check_json_tree(value: Any, field: str, budget: int = MAX_METADATA_BYTES) -> None:
    """Plain JSON within bounds, checked by one walk before any JSON encoding: depth,
    size (a running count of characters, at most `budget`), string keys, finite numbers,
    64-bit integers, strings without NUL or unpaired surrogates. Stops at the first
    problem."""
    limit = budget
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise InvalidInputError(field, f"is nested more than {MAX_METADATA_DEPTH} levels deep")
        budget -= 8
        if isinstance(item, str):
            budget -= len(item)
        if budget < 0:
            raise InvalidInputError(field, f"is larger than {limit:,} bytes")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise InvalidInputError(field, "keys must be strings")
                stack.append((key, depth + 1))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise InvalidInputError(field, "contains a NUL character")
            refuse_unpaired_surrogates(item, field)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InvalidInputError(field, f"contains {item}, which is not a JSON number")
        elif isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, int):
            if not -(2**63) <= item < 2**63:
                raise InvalidInputError(field, "contains an integer outside 64 bits")
        else:
            raise InvalidInputError(field, f"is not plain JSON (holds a {type(item).__name__})")


def check_arguments(arguments: dict[str, Any]) -> None:
    """What every tool argument must satisfy before any typed parsing: valid Unicode in
    every string (keys included), bounded nesting and a bounded number of values. One walk,
    stopping at the first problem, which names the argument."""
    budget = MAX_ARGUMENT_VALUES
    for name, value in arguments.items():
        refuse_unpaired_surrogates(name, "arguments")
        stack: list[tuple[Any, int]] = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            budget -= 1
            if budget < 0:
                raise InvalidInputError(name, f"holds more than {MAX_ARGUMENT_VALUES:,} values")
            if depth > MAX_METADATA_DEPTH:
                raise InvalidInputError(
                    name, f"is nested more than {MAX_METADATA_DEPTH} levels deep"
                )
            if isinstance(item, str):
                refuse_unpaired_surrogates(item, name)
            elif isinstance(item, dict):
                for key, child in item.items():
                    stack.append((key, depth + 1))
                    stack.append((child, depth + 1))
            elif isinstance(item, list):
                stack.extend((child, depth + 1) for child in item)


def clean_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    check_json_tree(metadata, "metadata")
    encoded = json.dumps(metadata, sort_keys=True, allow_nan=False)
    if len(encoded.encode()) > MAX_METADATA_BYTES:
        raise InvalidInputError("metadata", f"is larger than {MAX_METADATA_BYTES:,} bytes")
    loaded: dict[str, Any] = json.loads(encoded)
    return loaded


def clean_confidence(confidence: float | None) -> float | None:
    if confidence is None:
        return None
    if not math.isfinite(confidence) or not 0.0 <= confidence <= 1.0:
        raise InvalidInputError("confidence", f"{confidence} is not between 0 and 1")
    return float(confidence)


_KIND = re.compile(KIND_PATTERN)


def clean_kind(kind: Any) -> str | None:
    """A memory's kind: None (not given), or a short lowercase identifier (KINDS lists the
    known ones; others are accepted unless a write policy refuses them)."""
    if kind is None:
        return None
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise InvalidInputError(
            "kind",
            f"must be a lowercase identifier of at most 40 characters, such as "
            f"{', '.join(KINDS[:4])}; got {kind!r:.60}",
        )
    return kind


def parse_datetime(value: Any, field: str) -> float:
    """An ISO 8601 date-time (naive means UTC) as UNIX seconds, between 1970 and 9000."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(field, "must be an ISO 8601 date-time, e.g. 2026-12-31T18:00:00Z")
    text = value.strip()
    if len(text) > 64:
        raise InvalidInputError(field, "is too long for an ISO 8601 date-time")
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInputError(
            field, f"{value[:64]!r} is not an ISO 8601 date-time (e.g. 2026-12-31T18:00:00Z)"
        ) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    out_of_range = InvalidInputError(
        field, f"{value[:64]!r} is not between the years 1970 and 9000"
    )
    try:
        # In UTC, so an offset cannot later push the date past what datetime can hold.
        parsed = parsed.astimezone(UTC)
    except OverflowError as exc:
        raise out_of_range from exc
    if not EPOCH <= parsed < LATEST_DATE:
        raise out_of_range
    return parsed.timestamp()


def resolve_expiry(
    ttl_seconds: float | None,
    expires_at: float | None,
    default_ttl_seconds: float | None,
    now: float,
) -> float | None:
    """Explicit ttl_seconds or expires_at win; otherwise the source's default TTL.
    `expires_at` math.inf (parse_expires_at's "never"): no expiry, not even the default."""
    if ttl_seconds is not None and expires_at is not None:
        raise InvalidInputError("ttl_seconds", "give ttl_seconds or expires_at, not both")
    if ttl_seconds is not None:
        if not math.isfinite(ttl_seconds) or not 0 < ttl_seconds <= MAX_FUTURE_SECONDS:
            raise InvalidInputError(
                "ttl_seconds",
                f"{ttl_seconds} must be > 0 and < 100 years "
                f'(expires_at "{NEVER}" removes an expiry)',
            )
        return now + float(ttl_seconds)
    if expires_at == math.inf:
        return None
    if expires_at is not None:
        if expires_at <= now:
            raise InvalidInputError("expires_at", f"{iso(expires_at)!r} is already in the past")
        if expires_at > now + MAX_FUTURE_SECONDS:
            raise InvalidInputError(
                "expires_at", f"{iso(expires_at)!r} is more than 100 years away"
            )
        return expires_at
    return now + default_ttl_seconds if default_ttl_seconds else None


def clean_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidInputError("limit", f"{limit} is not between 1 and {MAX_SEARCH_LIMIT}")
    return limit


def clean_valid_from(valid_from: float | None, field: str = "valid_from") -> float | None:
    """A bound of a fact's validity window (UNIX seconds), a time datetime can show."""
    if valid_from is None:
        return None
    if isinstance(valid_from, bool) or not isinstance(valid_from, int | float):
        raise InvalidInputError(field, f"{shown(valid_from)} is not a time")
    if not -62_135_596_800.0 <= valid_from <= 253_402_300_799.0:  # also false for NaN
        raise InvalidInputError(field, f"{valid_from} is not a time datetime can show")
    return float(valid_from)


def clean_min_score(min_score: float | None) -> float | None:
    """A floor on search scores, which are in [0, 1]."""
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, int | float):
        raise InvalidInputError("min_score", f"{shown(min_score)} is not a number")
    if not 0.0 <= min_score <= 1.0:  # also false for NaN
        raise InvalidInputError("min_score", f"{min_score} is not between 0 and 1")
    return float(min_score)


def clean_query(query: str) -> str:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError("query", f"is longer than {MAX_QUERY_CHARS} characters")
    if not query.strip():
        raise InvalidInputError("query", "must be a non-empty string")
    if "\x00" in query:
        raise InvalidInputError("query", "contains a NUL character")
    refuse_unpaired_surrogates(query, "query")
    return query.strip()


# The largest whole number a store holds (SQLite's INTEGER, PostgreSQL's BIGINT): an id,
# version or count beyond it cannot name anything, and the drivers fail on it
# (OverflowError) instead of answering "no such memory".
MAX_WHOLE_NUMBER = 2**63 - 1


def is_whole_number(value: object, least: int = 1, most: int = MAX_WHOLE_NUMBER) -> TypeGuard[int]:
    """An int from `least` to `most`, never a bool (an int to Python, not to a caller)."""
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= most


def shown(value: object, max_chars: int = 40) -> str:
    """A value as an error message quotes it: its repr, cut to `max_chars`."""
    text = repr(value)
    return text if len(text) <= max_chars else f"{text[: max_chars - 3]}..."


def is_digits(text: str) -> bool:
    """Only ASCII digits: str.isdigit also accepts '²', which int() refuses."""
    return text.isascii() and text.isdigit()


def clean_id(memory_id: Any, largest: int = MAX_WHOLE_NUMBER, field: str = "id") -> int:
    """Ids are whole numbers from 1 to `largest` (the store's: MemoryStore.largest_id);
    numeric strings are accepted because clients send them (read only up to that many
    digits: int() of a long one is slow, and past 4,300 digits refused)."""
    if isinstance(memory_id, str):
        text = memory_id.strip()
        if is_digits(text) and len(text) <= len(str(largest)):
            memory_id = int(text)
    if not is_whole_number(memory_id, 1, largest):
        raise InvalidInputError(
            field, f"{shown(memory_id)} is not a memory id (a whole number from 1 to {largest})"
        )
    return memory_id


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return (
        datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )
