"""Records shaped for the templates: plain strings and numbers, times as ISO 8601 UTC.

Nothing here marks text as safe HTML: the templates escape every value (autoescape), so a
memory's key, value, tags or metadata are shown as text, whatever they contain."""

from __future__ import annotations

import json
from dataclasses import dataclass

from memory_mcp.checks.validation import iso
from memory_mcp.models import MemoryRecord
from memory_mcp.rules.browsing import MemoryVersion
from memory_mcp.rules.trust import TrustMarks
from memory_mcp.search.hits import RankedHit

PREVIEW_CHARS = 280  # a list row shows this much of a value; the memory's page shows it all


@dataclass(frozen=True)
class MemoryRow:
    """One line of a list or of search results."""

    id: int
    key: str
    preview: str
    cut: bool  # the preview is shorter than the value
    scope: str
    agent_id: str
    updated_by: str
    source: str
    tags: list[str]
    version: int
    updated_at: str
    expired: bool
    score: float | None = None
    matched_by: str | None = None
    project: str = "*"
    # rules/trust.py: the reason it is stale (None: it is not); under the threshold to act on.
    stale_reason: str | None = None
    needs_verification: bool = False


@dataclass(frozen=True)
class MemoryPage:
    """The whole memory."""

    row: MemoryRow
    value: str
    metadata: str  # pretty JSON, or "" when there is none
    flags: list[str]
    confidence: float | None
    pinned: bool
    created_at: str
    expires_at: str | None
    last_accessed_at: str | None
    access_count: int
    file_path: str | None
    about_agent: str | None


@dataclass(frozen=True)
class VersionRow:
    """One version of a memory (MemoryService.history)."""

    version: int
    value: str
    tags: list[str]
    metadata: str
    source: str
    written_by: str
    written_at: str
    current: bool


@dataclass(frozen=True)
class QuarantinedRow:
    """A memory held for approval, shown whole to the lead who decides."""

    id: int
    key: str
    value: str
    agent_id: str
    source: str
    flags: list[str]
    updated_at: str


def quarantined_row(record: MemoryRecord) -> QuarantinedRow:
    return QuarantinedRow(
        id=record.id,
        key=record.key,
        value=record.value,
        agent_id=record.agent_id,
        source=record.source.value,
        flags=list(record.flags),
        updated_at=iso(record.updated_at) or "",
    )


def version_row(version: MemoryVersion) -> VersionRow:
    return VersionRow(
        version=version.version,
        value=version.value,
        tags=list(version.tags),
        metadata=_pretty(version.metadata),
        source=version.source.value,
        written_by=version.written_by,
        written_at=iso(version.written_at) or "",
        current=version.current,
    )


def _pretty(metadata: dict[str, object]) -> str:
    if not metadata:
        return ""
    return json.dumps(metadata, indent=2, ensure_ascii=False, sort_keys=True)


def when(timestamp: str | None) -> str:
    """An ISO 8601 UTC time (iso()) as people read it: `2026-11-23 17:05 UTC`."""
    if not timestamp:
        return ""
    return f"{timestamp[:10]} {timestamp[11:16]} UTC"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def memory_row(
    record: MemoryRecord,
    now: float,
    hit: RankedHit | None = None,
    marks: TrustMarks | None = None,
) -> MemoryRow:
    preview = _one_line(record.value)
    return MemoryRow(
        id=record.id,
        key=record.key,
        preview=preview[:PREVIEW_CHARS],
        cut=len(preview) > PREVIEW_CHARS,
        scope=record.scope.value,
        agent_id=record.agent_id,
        updated_by=record.updated_by or record.agent_id,
        source=record.source.value,
        tags=list(record.tags),
        version=record.version,
        updated_at=iso(record.updated_at) or "",
        expired=record.expires_at is not None and record.expires_at <= now,
        score=round(hit.score, 3) if hit is not None else None,
        matched_by=hit.matched_by if hit is not None else None,
        project=record.project,
        stale_reason=marks.stale_reason if marks is not None else None,
        needs_verification=marks is not None and marks.needs_verification,
    )


def memory_page(record: MemoryRecord, now: float, marks: TrustMarks | None = None) -> MemoryPage:
    return MemoryPage(
        row=memory_row(record, now, marks=marks),
        value=record.value,
        metadata=_pretty(record.metadata),
        flags=list(record.flags),
        confidence=record.confidence,
        pinned=record.pinned,
        created_at=iso(record.created_at) or "",
        expires_at=iso(record.expires_at),
        last_accessed_at=iso(record.last_accessed_at),
        access_count=record.access_count,
        file_path=record.file_path,
        about_agent=record.about_agent,
    )
