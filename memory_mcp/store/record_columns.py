"""A row of `memories` as a MemoryRecord, and the reads of whole records written once as
SQL text: by id, and the most recently used visible ones (the `<memories>` block's pool).

Standard library only, so that a hook or a reading command can read a record without
SQLAlchemy: store/sqlite/stdlib_reads.py runs this SQL on the standard library's sqlite3, and
MemoryStore runs the same text through SQLAlchemy on either database (store/memories_table.py,
store/read_statements.py). The checks below are what a read trusts of a row: SQLite's columns
take any value, so a row can hold what no valid write stores, and one such row must never
break a search, a prompt block or an export."""

from __future__ import annotations

import json
import logging
from collections import namedtuple
from collections.abc import Iterable
from typing import Any, cast

from memory_mcp.errors import DamagedMemoryError
from memory_mcp.models import MemoryRecord, Scope, Source, Visibility
from memory_mcp.store.visibility import visible_sql

log = logging.getLogger(__name__)

# What datetime can show (years 1 to 9999, UTC): a stored time outside it cannot be read back.
MIN_TIMESTAMP = -62_135_596_800.0
MAX_TIMESTAMP = 253_402_300_799.0

_reported_damage: set[tuple[int, str]] = set()
# Enum members by value: a dict lookup, where calling the enum costs ~1 microsecond a row.
SOURCES = {source.value: source for source in Source}
SCOPES = {scope.value: scope for scope in Scope}

# The columns a record is made of (store/schema.py's MemoryRow has them all, and more).
RECORD_COLUMNS = (
    "id",
    "key",
    "value",
    "scope",
    "agent_id",
    "session_id",
    "source",
    "tags",
    "metadata",
    "flags",
    "confidence",
    "pinned",
    "version",
    "content_hash",
    "created_at",
    "updated_at",
    "expires_at",
    "last_accessed_at",
    "access_count",
    "file_path",
    "updated_by",
    "about_agent",
    "written_session",
    "project",
    "task",
    "archived_at",
    "valid_from",
    "valid_to",
    "superseded_by",
    "value_json",
    "kind",
    "quarantined",
)
# A row of RECORD_COLUMNS by name, at the cost of an index lookup (see rows.MemoryColumns).
RecordColumns = namedtuple("RecordColumns", RECORD_COLUMNS)  # type: ignore[misc]

_SELECT = "SELECT " + ", ".join(f"memories.{name}" for name in RECORD_COLUMNS) + " FROM memories"
RECORD_BY_ID_SQL = f"{_SELECT} WHERE memories.id = :id"
# Pinned first, then most recently used: the prompt block's pool (rules/memories_block.py).
_RECENT_ORDER = " ORDER BY memories.pinned DESC, memories.last_used_at DESC, memories.id DESC"


def recent_sql(vis: Visibility, limit: int) -> tuple[str, dict[str, Any]]:
    """The `limit` most recently used memories `vis` lets through: SQL text and parameters."""
    visible = visible_sql(vis)
    sql = f"{_SELECT} WHERE {visible.sql}{_RECENT_ORDER} LIMIT :limit"
    return sql, {**visible.params, "limit": limit}


def timestamp(row: Any, name: str, optional: bool = False) -> float | None:
    """The column `name` as UNIX seconds datetime can show; ValueError if it is not."""
    value = getattr(row, name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    if not MIN_TIMESTAMP <= value <= MAX_TIMESTAMP:  # also false for NaN
        raise ValueError(f"{name} is outside the years 1-9999")
    return float(value)


def json_column(row: Any, name: str, kind: type) -> Any:
    text = getattr(row, name)
    if text == "[]" and kind is list:  # most tags and flags: skip the parser
        return []
    if text == "{}" and kind is dict:
        return {}
    try:
        value: Any = json.loads(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not valid JSON") from None
    if not isinstance(value, kind):
        raise ValueError(f"{name} is not a JSON {kind.__name__}")
    if kind is list and not all(isinstance(item, str) for item in cast(list[Any], value)):
        raise ValueError(f"{name} holds something other than text")
    return value


def _member(members: dict[str, Any], value: Any, name: str) -> Any:
    try:
        return members[value]
    except (KeyError, TypeError):  # TypeError: a value that cannot be a key (SQLite blob)
        raise ValueError(f"{name} is not one of {', '.join(members)}") from None


def _whole_number(row: Any, name: str) -> int:
    value = getattr(row, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} is not a whole number")
    return value


def text_column(row: Any, name: str) -> str:
    """The column `name` as non-empty text; ValueError if it is not."""
    value = getattr(row, name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} is not text")
    return value


def _check_damage(row: Any) -> None:
    """Types SQLite lets through (its columns take any value) and json.loads would not catch."""
    for name in ("key", "value", "agent_id", "session_id", "content_hash"):
        if not isinstance(getattr(row, name), str):
            raise ValueError(f"{name} is not text")
    for name in ("version", "access_count"):
        _whole_number(row, name)
    confidence = row.confidence
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0.0 <= confidence <= 1.0
    ):
        raise ValueError("confidence is not a number in [0, 1]")


def record_from_columns(row: Any) -> MemoryRecord:
    """A row with RECORD_COLUMNS by name as a record, or DamagedMemoryError if it holds what
    no valid write stores (malformed JSON, an unknown scope, a time datetime cannot show...)."""
    try:
        _check_damage(row)
        return MemoryRecord(
            id=row.id,
            key=row.key,
            value=row.value,
            scope=_member(SCOPES, row.scope, "scope"),
            agent_id=row.agent_id,
            session_id=row.session_id,
            source=_member(SOURCES, row.source, "source"),
            tags=json_column(row, "tags", list),
            metadata=json_column(row, "metadata", dict),
            flags=json_column(row, "flags", list),
            confidence=None if row.confidence is None else float(row.confidence),
            pinned=bool(row.pinned),
            version=row.version,
            content_hash=row.content_hash,
            created_at=cast(float, timestamp(row, "created_at")),
            updated_at=cast(float, timestamp(row, "updated_at")),
            expires_at=timestamp(row, "expires_at", optional=True),
            last_accessed_at=timestamp(row, "last_accessed_at", optional=True),
            access_count=row.access_count,
            file_path=row.file_path if isinstance(row.file_path, str) else None,
            updated_by=row.updated_by or row.agent_id,
            about_agent=row.about_agent,
            written_session=row.written_session or "",
            project=text_column(row, "project"),
            task=row.task if isinstance(row.task, str) else None,
            archived_at=timestamp(row, "archived_at", optional=True),
            valid_from=timestamp(row, "valid_from", optional=True),
            valid_to=timestamp(row, "valid_to", optional=True),
            superseded_by=row.superseded_by if type(row.superseded_by) is int else None,
            value_json=bool(row.value_json),
            kind=row.kind if isinstance(row.kind, str) else None,
            quarantined=bool(row.quarantined),
        )
    except ValueError as exc:  # enum values raise ValueError too
        raise DamagedMemoryError(row.id, str(exc)) from None


def readable_from_columns(rows: Iterable[Any]) -> list[MemoryRecord]:
    """The rows that can be read; a damaged one is skipped and logged (once per process),
    so one bad row never breaks a search, a prompt block or an export."""
    records = []
    for row in rows:
        try:
            records.append(record_from_columns(row))
        except DamagedMemoryError as exc:
            if (exc.memory_id, exc.problem) not in _reported_damage:
                _reported_damage.add((exc.memory_id, exc.problem))
                log.warning("skipping damaged memory %s: %s", exc.memory_id, exc.problem)
    return records


# memory-get's reads, counted and written in a batch (store/access_counts.py): access_count,
# last_accessed_at and the LRU clock, each moved forward only. No revision: search is
# unaffected. The later of two times as a CASE, which every database reads alike (SQLite
# names the two-argument maximum max(), PostgreSQL greatest()); a NULL is earlier.
ACCESS_SQL = (
    "UPDATE memories SET access_count = access_count + :count, "
    "last_accessed_at = CASE WHEN last_accessed_at > :last THEN last_accessed_at "
    "ELSE :last END, "
    "last_used_at = CASE WHEN last_used_at > :last THEN last_used_at ELSE :last END "
    "WHERE id = :id"
)


__all__ = [
    "ACCESS_SQL",
    "MAX_TIMESTAMP",
    "MIN_TIMESTAMP",
    "RECORD_BY_ID_SQL",
    "RECORD_COLUMNS",
    "RecordColumns",
    "readable_from_columns",
    "recent_sql",
    "record_from_columns",
    "text_column",
]
