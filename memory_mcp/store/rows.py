"""Shared pieces of the store: the memories table handle, row conversion, the visibility
condition, and the shapes the vector index is fed with."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from sqlalchemy import Table, and_, func, or_, select
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import MemoryRecord, Scope, Source, Visibility
from memory_mcp.store.schema import MemoryRow, MemoryTagRow

MEMORIES = cast(Table, MemoryRow.__table__)
M = MEMORIES.c


@dataclass
class IndexRow:
    """What the in-process vector index needs of one memory to filter and score it."""

    id: int
    agent_id: str
    scope: str
    session_id: str
    source: str
    expires_at: float | None
    tags: list[str]
    vector: np.ndarray | None


@dataclass
class IndexDelta:
    revision: int
    upserted: list[IndexRow] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)


def record_from_row(row: Any) -> MemoryRecord:
    return MemoryRecord(
        id=row.id,
        key=row.key,
        value=row.value,
        scope=Scope(row.scope),
        agent_id=row.agent_id,
        session_id=row.session_id,
        source=Source(row.source),
        tags=json.loads(row.tags),
        metadata=json.loads(row.metadata),
        flags=json.loads(row.flags),
        confidence=row.confidence,
        pinned=bool(row.pinned),
        version=row.version,
        content_hash=row.content_hash,
        created_at=row.created_at,
        updated_at=row.updated_at,
        expires_at=row.expires_at,
        last_accessed_at=row.last_accessed_at,
        access_count=row.access_count,
        file_path=row.file_path,
        updated_by=row.updated_by or row.agent_id,
        about_agent=row.about_agent,
    )


def visible_to(vis: Visibility) -> ColumnElement[bool]:
    """The visibility rule and the query's filters, as one SQL condition."""
    caller = vis.caller
    own = M.agent_id == caller.agent_id
    by_scope = {
        Scope.SWARM: M.scope == Scope.SWARM.value,
        Scope.AGENT: and_(M.scope == Scope.AGENT.value, own),
        Scope.SESSION: and_(
            M.scope == Scope.SESSION.value, own, M.session_id == caller.session_id
        ),
    }
    conditions = [by_scope[vis.scope] if vis.scope else or_(*by_scope.values())]
    if not vis.include_expired:
        conditions.append(or_(M.expires_at.is_(None), M.expires_at > vis.now))
    if vis.source:
        conditions.append(M.source == vis.source.value)
    if vis.tags:
        tagged = (
            select(MemoryTagRow.memory_id)
            .where(MemoryTagRow.tag.in_(vis.tags))
            .group_by(MemoryTagRow.memory_id)
            .having(func.count() == len(set(vis.tags)))
        )
        conditions.append(M.id.in_(tagged))
    return and_(*conditions)


def content_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()
