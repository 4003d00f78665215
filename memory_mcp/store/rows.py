"""Shared pieces of the store: the memories table handle, row conversion, the visibility
condition, and the shapes the vector index is fed with."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple, cast

import numpy as np
from sqlalchemy import Connection, Table, and_, bindparam, func, or_, select, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import ColumnElement

from memory_mcp.errors import DamagedMemoryError
from memory_mcp.models import MemoryRecord, RankFacts, Scope, Source, Visibility
from memory_mcp.store.index_rows import IndexRow
from memory_mcp.store.schema import MemoryRow, MemoryTagRow, StoreMetaRow

log = logging.getLogger(__name__)

MEMORIES = cast(Table, MemoryRow.__table__)
M = MEMORIES.c

# Identities per IN (...) list: well under SQLite's bound-variable limit.
IN_CHUNK = 500


# What datetime can show (years 1 to 9999, UTC): a stored time outside it cannot be read back.
MIN_TIMESTAMP = -62_135_596_800.0
MAX_TIMESTAMP = 253_402_300_799.0

_reported_damage: set[tuple[int, str]] = set()
# Enum members by value: a dict lookup, where calling the enum costs ~1 microsecond a row.
_SOURCES = {source.value: source for source in Source}
_SCOPES = {scope.value: scope for scope in Scope}


def _timestamp(row: Any, name: str, optional: bool = False) -> float | None:
    value = getattr(row, name)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} is not a number")
    if not MIN_TIMESTAMP <= value <= MAX_TIMESTAMP:  # also false for NaN
        raise ValueError(f"{name} is outside the years 1-9999")
    return float(value)


def _json(row: Any, name: str, kind: type) -> Any:
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


def _text(row: Any, name: str) -> str:
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


# A row of select(MEMORIES) copied into a namedtuple: reading ~30 columns by name from
# SQLAlchemy's Row looks each name up (a record cost ~30 microseconds); a namedtuple's
# attributes are plain index lookups (~10 microseconds a record, copy included).
_COLUMN_NAMES = tuple(MEMORIES.c.keys())
MemoryColumns = namedtuple("MemoryColumns", _COLUMN_NAMES)  # type: ignore[misc]


def record_from_row(row: Any) -> MemoryRecord:
    """The row as a record, or DamagedMemoryError if it holds what no valid write stores
    (malformed JSON, an unknown scope, a time datetime cannot show...)."""
    if type(row) is not MemoryColumns and getattr(row, "_fields", None) == _COLUMN_NAMES:
        row = MemoryColumns._make(row)
    try:
        _check_damage(row)
        return MemoryRecord(
            id=row.id,
            key=row.key,
            value=row.value,
            scope=_member(_SCOPES, row.scope, "scope"),
            agent_id=row.agent_id,
            session_id=row.session_id,
            source=_member(_SOURCES, row.source, "source"),
            tags=_json(row, "tags", list),
            metadata=_json(row, "metadata", dict),
            flags=_json(row, "flags", list),
            confidence=None if row.confidence is None else float(row.confidence),
            pinned=bool(row.pinned),
            version=row.version,
            content_hash=row.content_hash,
            created_at=cast(float, _timestamp(row, "created_at")),
            updated_at=cast(float, _timestamp(row, "updated_at")),
            expires_at=_timestamp(row, "expires_at", optional=True),
            last_accessed_at=_timestamp(row, "last_accessed_at", optional=True),
            access_count=row.access_count,
            file_path=row.file_path if isinstance(row.file_path, str) else None,
            updated_by=row.updated_by or row.agent_id,
            about_agent=row.about_agent,
            written_session=row.written_session or "",
            project=_text(row, "project"),
            task=row.task if isinstance(row.task, str) else None,
            archived_at=_timestamp(row, "archived_at", optional=True),
        )
    except ValueError as exc:  # enum values raise ValueError too
        raise DamagedMemoryError(row.id, str(exc)) from None


RANK_COLUMNS = (M.id, M.source, M.pinned, M.updated_at, M.last_accessed_at, M.access_count)


def rank_facts_from_row(row: Any) -> RankFacts | None:
    """A row of RANK_COLUMNS as RankFacts, or None if damaged (its record, read whole, is
    skipped and logged by readable_records). The same checks as record_from_row's, written
    out on the unpacked tuple: a search converts dozens of these, and this way costs ~2
    microseconds a row where named access and the shared helpers cost ~10."""
    memory_id, source, pinned, updated_at, last_accessed_at, access_count = row
    member = _SOURCES.get(source) if isinstance(source, str) else None
    if (
        member is None
        or not _readable_time(updated_at)
        or (last_accessed_at is not None and not _readable_time(last_accessed_at))
        or type(access_count) is not int  # not bool, which is an int too
    ):
        return None
    return RankFacts(
        memory_id,
        member,
        bool(pinned),
        float(updated_at),
        None if last_accessed_at is None else float(last_accessed_at),
        access_count,
    )


def _readable_time(value: Any) -> bool:
    """A number that datetime can show (what _timestamp accepts)."""
    return type(value) in (int, float) and MIN_TIMESTAMP <= value <= MAX_TIMESTAMP


def readable_records(rows: Iterable[Any]) -> list[MemoryRecord]:
    """The rows that can be read; a damaged one is skipped and logged (once per process),
    so one bad row never breaks a search, a prompt block or an export."""
    records = []
    for row in rows:
        try:
            records.append(record_from_row(row))
        except DamagedMemoryError as exc:
            if (exc.memory_id, exc.problem) not in _reported_damage:
                _reported_damage.add((exc.memory_id, exc.problem))
                log.warning("skipping damaged memory %s: %s", exc.memory_id, exc.problem)
    return records


def index_row(row: Any) -> IndexRow | None:
    """What the vector index needs of a row, or None if the row is damaged: the index
    drops it, and the record itself is skipped wherever it is read."""
    try:
        scope, source = Scope(row.scope).value, Source(row.source).value
        tags = _json(row, "tags", list)
        expires_at = _timestamp(row, "expires_at", optional=True)
        updated_at = cast(float, _timestamp(row, "updated_at"))
        if not isinstance(row.agent_id, str) or not isinstance(row.session_id, str):
            raise ValueError("owner is not text")
        project = _text(row, "project")
        archived = row.archived_at is not None
    except ValueError:
        return None
    vector = np.frombuffer(row.vector, dtype=np.float32) if row.vector else None
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
    )


@dataclass(frozen=True)
class _VisibilityShape:
    """What the SQL of a visibility condition depends on; the values are its parameters."""

    scope: Scope | None
    include_expired: bool
    source: bool
    updated_since: bool
    updated_until: bool
    tags: int  # distinct tags asked for
    projects: int | None  # projects shown (None: every project)
    task: bool | None  # task memories: of one task too (True), of none (False), any (None)
    include_archived: bool


def _shape_and_values(vis: Visibility) -> tuple[_VisibilityShape, dict[str, Any]]:
    caller = vis.caller
    values: dict[str, Any] = {
        "vis_agent": caller.agent_id,
        "vis_session": caller.session_id,
        "vis_now": vis.now,
        "vis_swarm_scope": Scope.SWARM.value,
        "vis_agent_scope": Scope.AGENT.value,
        "vis_session_scope": Scope.SESSION.value,
    }
    if vis.source:
        values["vis_source"] = vis.source.value
    if vis.updated_since is not None:
        values["vis_since"] = vis.updated_since
    if vis.updated_until is not None:
        values["vis_until"] = vis.updated_until
    tags = sorted(set(vis.tags))
    for i, tag in enumerate(tags):
        values[f"vis_tag_{i}"] = tag
    if tags:
        values["vis_tag_count"] = len(tags)
    projects = vis.shown_projects
    for i, project in enumerate(sorted(projects or ())):
        values[f"vis_project_{i}"] = project
    if vis.task is not None and not vis.every_task:
        values["vis_task"] = vis.task
    shape = _VisibilityShape(
        vis.scope,
        vis.include_expired,
        bool(vis.source),
        vis.updated_since is not None,
        vis.updated_until is not None,
        len(tags),
        None if projects is None else len(projects),
        None if vis.every_task else vis.task is not None,
        vis.include_archived,
    )
    return shape, values


def _condition(shape: _VisibilityShape, values: dict[str, Any] | None) -> ColumnElement[bool]:
    """The visibility rule and the query's filters, written once: with `values` bound (for
    SQLAlchemy's statements), or as named parameters (compiled once per shape, for
    SQLite's cursor: visible_sql)."""

    def param(name: str) -> Any:
        if values is None:
            return bindparam(name)
        return bindparam(name, values[name], unique=True)  # never clashes in a statement

    own = M.agent_id == param("vis_agent")
    by_scope = {
        Scope.SWARM: M.scope == param("vis_swarm_scope"),
        Scope.AGENT: and_(M.scope == param("vis_agent_scope"), own),
        Scope.SESSION: and_(
            M.scope == param("vis_session_scope"), own, M.session_id == param("vis_session")
        ),
    }
    conditions = [by_scope[shape.scope] if shape.scope else or_(*by_scope.values())]
    if not shape.include_expired:
        conditions.append(or_(M.expires_at.is_(None), M.expires_at > param("vis_now")))
    if shape.source:
        conditions.append(M.source == param("vis_source"))
    if shape.updated_since:
        conditions.append(M.updated_at >= param("vis_since"))
    if shape.updated_until:
        conditions.append(M.updated_at <= param("vis_until"))
    if shape.projects is not None:  # an empty set shows nothing (`IN ()` is false)
        conditions.append(M.project.in_([param(f"vis_project_{i}") for i in range(shape.projects)]))
    if shape.task is False:
        conditions.append(M.task.is_(None))
    elif shape.task:
        conditions.append(or_(M.task.is_(None), M.task == param("vis_task")))
    if not shape.include_archived:
        conditions.append(M.archived_at.is_(None))
    if shape.tags:
        tagged = (
            select(MemoryTagRow.memory_id)
            .where(MemoryTagRow.tag.in_([param(f"vis_tag_{i}") for i in range(shape.tags)]))
            .group_by(MemoryTagRow.memory_id)
            .having(func.count() == param("vis_tag_count"))
        )
        conditions.append(M.id.in_(tagged))
    return and_(*conditions)


def visible_to(vis: Visibility) -> ColumnElement[bool]:
    """The visibility rule and the query's filters, as one SQL condition."""
    return _condition(*_shape_and_values(vis))


_NAMED_SQLITE = sqlite.dialect(paramstyle="named")


@cache  # one per scope, filter set and number of tags asked for: a bounded few
def _condition_sql(shape: _VisibilityShape) -> str:
    return str(_condition(shape, None).compile(dialect=_NAMED_SQLITE))


class VisibleSql(NamedTuple):
    """visible_to's condition as SQLite SQL on the table `memories`, and its parameters
    (all named `vis_…`)."""

    sql: str
    params: dict[str, Any]


def visible_sql(vis: Visibility) -> VisibleSql:
    """The condition for SQL text: compiled once per shape (scope, filters), where building
    the expression costs ~0.3 ms of Python a search."""
    shape, values = _shape_and_values(vis)
    return VisibleSql(_condition_sql(shape), values)


def content_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def next_revision(conn: Connection) -> int:
    """Move the store's revision counter on, inside the write transaction of `conn` (run
    in a worker thread: `conn.run_sync(next_revision)` from async code)."""
    result = conn.execute(
        update(StoreMetaRow)
        .where(StoreMetaRow.name == "revision")
        .values(value=StoreMetaRow.value + 1)
        .returning(StoreMetaRow.value)
    )
    return int(result.scalar_one())
