"""Shared pieces of the store: the memories table handle, row conversion (store/record_columns.py
for SQLAlchemy's rows), the visibility condition (store/visibility.py bound for SQLAlchemy),
and the shapes the vector index is fed with."""

from __future__ import annotations

import hashlib
from collections import namedtuple
from collections.abc import Iterable
from typing import Any, cast

import numpy as np
from sqlalchemy import Connection, Table, bindparam, text, update
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import MemoryRecord, RankFacts, Scope, Source, Visibility
from memory_mcp.store.index_rows import IndexRow
from memory_mcp.store.record_columns import (
    MAX_TIMESTAMP,
    MIN_TIMESTAMP,
    RECORD_COLUMNS,
    SOURCES,
    RecordColumns,
    json_column,
    readable_from_columns,
    record_from_columns,
    text_column,
    timestamp,
)
from memory_mcp.store.schema import MemoryRow, StoreMetaRow
from memory_mcp.store.visibility import condition_parameters, condition_sql, shape_and_values

MEMORIES = cast(Table, MemoryRow.__table__)
M = MEMORIES.c

# Identities per IN (...) list: well under SQLite's bound-variable limit.
IN_CHUNK = 500


# A row of select(MEMORIES) copied into a namedtuple: reading ~30 columns by name from
# SQLAlchemy's Row looks each name up (a record cost ~30 microseconds); a namedtuple's
# attributes are plain index lookups (~10 microseconds a record, copy included).
_COLUMN_NAMES = tuple(MEMORIES.c.keys())
MemoryColumns = namedtuple("MemoryColumns", _COLUMN_NAMES)  # type: ignore[misc]


def _by_name(row: Any) -> Any:
    """A SQLAlchemy Row of the whole table or of RECORD_COLUMNS as a namedtuple."""
    fields = getattr(row, "_fields", None)
    if type(row) is MemoryColumns or type(row) is RecordColumns or fields is None:
        return row
    if fields == _COLUMN_NAMES:
        return MemoryColumns._make(row)
    if fields == RECORD_COLUMNS:
        return RecordColumns._make(row)
    return row


def record_from_row(row: Any) -> MemoryRecord:
    """The row as a record, or DamagedMemoryError if it holds what no valid write stores
    (malformed JSON, an unknown scope, a time datetime cannot show...): record_columns.py."""
    return record_from_columns(_by_name(row))


def readable_records(rows: Iterable[Any]) -> list[MemoryRecord]:
    """The rows that can be read; a damaged one is skipped and logged (record_columns.py)."""
    return readable_from_columns(map(_by_name, rows))


RANK_COLUMNS = (
    M.id,
    M.source,
    M.pinned,
    M.updated_at,
    M.last_accessed_at,
    M.access_count,
    M.confidence,
)


def rank_facts_from_row(row: Any) -> RankFacts | None:
    """A row of RANK_COLUMNS as RankFacts, or None if damaged (its record, read whole, is
    skipped and logged by readable_records). The same checks as record_from_row's, written
    out on the unpacked tuple: a search converts dozens of these, and this way costs ~2
    microseconds a row where named access and the shared helpers cost ~10."""
    memory_id, source, pinned, updated_at, last_accessed_at, access_count, confidence = row
    member = SOURCES.get(source) if isinstance(source, str) else None
    if (
        member is None
        or not _readable_time(updated_at)
        or (last_accessed_at is not None and not _readable_time(last_accessed_at))
        or type(access_count) is not int  # not bool, which is an int too
        or (
            confidence is not None
            and (type(confidence) not in (int, float) or not 0.0 <= confidence <= 1.0)
        )
    ):
        return None
    return RankFacts(
        memory_id,
        member,
        bool(pinned),
        float(updated_at),
        None if last_accessed_at is None else float(last_accessed_at),
        access_count,
        None if confidence is None else float(confidence),
    )


def _readable_time(value: Any) -> bool:
    """A number that datetime can show (what records.timestamp accepts)."""
    return type(value) in (int, float) and MIN_TIMESTAMP <= value <= MAX_TIMESTAMP


def index_row(row: Any) -> IndexRow | None:
    """What the vector index needs of a row, or None if the row is damaged: the index
    drops it, and the record itself is skipped wherever it is read."""
    try:
        scope, source = Scope(row.scope).value, Source(row.source).value
        tags = json_column(row, "tags", list)
        expires_at = timestamp(row, "expires_at", optional=True)
        updated_at = cast(float, timestamp(row, "updated_at"))
        if not isinstance(row.agent_id, str) or not isinstance(row.session_id, str):
            raise ValueError("owner is not text")
        project = text_column(row, "project")
        archived = row.archived_at is not None
        valid_from = timestamp(row, "valid_from", optional=True)
        valid_to = timestamp(row, "valid_to", optional=True)
    except ValueError:
        return None
    # A quarantined memory is never served (rules/quarantine.py): the index leaves it out
    # as it does a memory whose vector is not ready, and takes it in once approved.
    served = row.vector and not row.quarantined
    vector = np.frombuffer(row.vector, dtype=np.float32) if served else None
    return IndexRow(
        row.id,
        row.agent_id,
        scope,
        row.session_id,
        source,
        expires_at,
        tags,
        vector,
        updated_at,
        project,
        row.task if isinstance(row.task, str) else None,
        archived,
        valid_from,
        valid_to,
    )


def visible_to(vis: Visibility) -> ColumnElement[bool]:
    """The visibility rule and the query's filters, as one condition for SQLAlchemy's
    statements: store/visibility.py's SQL text with its values bound. Each parameter is
    unique in its statement, so two conditions (or other parameters named alike) in one
    statement never clash."""
    shape, values = shape_and_values(vis)
    named = condition_parameters(shape)
    clause = text(condition_sql(shape)).bindparams(
        *(bindparam(name, values[name], unique=True) for name in sorted(named))
    )
    # A condition in parentheses (condition_sql's), combined as any boolean expression is.
    return cast(ColumnElement[bool], clause)


def content_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


# Built once: every write runs it (store/writes.py says why that matters).
_NEXT_REVISION = (
    update(StoreMetaRow)
    .where(StoreMetaRow.name == "revision")
    .values(value=StoreMetaRow.value + 1)
    .returning(StoreMetaRow.value)
)


def next_revision(conn: Connection) -> int:
    """Move the store's revision counter on, inside the write transaction of `conn` (run
    in a worker thread: `conn.run_sync(next_revision)` from async code)."""
    return int(conn.execute(_NEXT_REVISION).scalar_one())
