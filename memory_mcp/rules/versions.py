"""A memory's versions, read as pages from the store's history rows: what each version
held, who wrote it and when (a version was written when the one before it was replaced).
MemoryService.history and version_of check who may read the memory first."""

from __future__ import annotations

import json
from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import MemoryRecord, Source
from memory_mcp.rules.browsing import HistoryPage, MemoryVersion
from memory_mcp.store.repository import MemoryStore


async def one_version(store: MemoryStore, record: MemoryRecord, version: Any) -> MemoryVersion:
    """Version `version` of `record` (InvalidInputError names a version it never had)."""
    if not v.is_whole_number(version):
        raise InvalidInputError(
            "version", f"{v.shown(version)} is not a version number (1 or more)"
        )
    page = await versions_page(store, record, version + 1, 1)
    if not page.versions or page.versions[0].version != version:
        raise InvalidInputError(
            "version", f"memory {record.id} has versions 1 to {record.version}, not {version}"
        )
    return page.versions[0]


async def versions_page(
    store: MemoryStore, record: MemoryRecord, before: int | None, limit: int | None
) -> HistoryPage:
    """The newest `limit` versions of `record` older than `before`, oldest first."""
    # A version replaced after `record` was read is left out: the list ends at the
    # version `record` is, which is the current one.
    if before is None or before > record.version:
        with_current, below = True, record.version
    else:
        with_current, below = False, before
    wanted = None if limit is None else limit - (1 if with_current else 0)
    # One replaced version more than shown: when it was replaced is when the oldest one
    # shown was written, and it tells that there are earlier ones.
    rows = await store.history(record.id, below, None if wanted is None else wanted + 1)
    written_at = record.created_at
    more = wanted is not None and len(rows) > wanted
    if more:
        written_at = rows[0]["replaced_at"]
        rows = rows[1:]
    versions = []
    for row in rows:
        versions.append(
            MemoryVersion(
                version=row["version"],
                value=row["value"],
                tags=_json_or(row["tags"], []),
                metadata=_json_or(row["metadata"], {}),
                source=_source_or(row["source"], record.source),
                written_by=row["updated_by"] or record.agent_id,
                written_at=written_at,
                current=False,
                valid_to=row["replaced_at"],
            )
        )
        written_at = row["replaced_at"]  # the next version was written then
    if with_current:
        versions.append(
            MemoryVersion(
                version=record.version,
                value=record.value,
                tags=record.tags,
                metadata=record.metadata,
                source=record.source,
                written_by=record.updated_by,
                written_at=record.updated_at,
                current=True,
                valid_to=record.valid_to,
            )
        )
    return HistoryPage(versions, versions[0].version if more else None)


def _json_or(text: Any, default: Any) -> Any:
    """A history row's JSON column; a damaged one reads as `default` (history is shown,
    never refused, for one bad column)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _source_or(name: Any, default: Source) -> Source:
    try:
        return Source(name)
    except ValueError:
        return default
