"""`memory-mcp import` and `memory-mcp export`: one memory per JSON line."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_mcp.errors import InvalidInputError, MemoryMcpError
from memory_mcp.models import Caller, MemoryRecord, Source
from memory_mcp.service import MemoryService
from memory_mcp.validation import iso, parse_datetime


class MemoryLine(BaseModel):
    """One line of an export: the store_memory fields plus who wrote it and when."""

    model_config = ConfigDict(extra="ignore")

    key: str
    value: str
    scope: str = "agent"
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    ttl_seconds: float | None = None
    expires_at: str | None = None
    source: str = "manual"
    confidence: float | None = None
    pinned: bool = False
    agent_id: str | None = None
    session_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


@dataclass
class ImportReport:
    stored: int = 0
    unchanged: int = 0
    embedded: int = 0
    errors: list[str] = field(default_factory=list)


def read_lines(path: Path) -> tuple[list[tuple[int, MemoryLine]], list[str]]:
    """Parse the whole file first, so a malformed file stores nothing at all."""
    parsed: list[tuple[int, MemoryLine]] = []
    errors: list[str] = []
    with path.open(encoding="utf-8", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                parsed.append((number, MemoryLine.model_validate_json(line)))
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors()
                )
                errors.append(f"line {number}: {problems}")
    return parsed, errors


async def import_lines(
    service: MemoryService,
    lines: list[tuple[int, MemoryLine]],
    default: Caller,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Store every line, then embed everything in batches: searchable when this returns."""
    report = ImportReport()
    for number, line in lines:
        caller = Caller(
            line.agent_id or default.agent_id, default.role, line.session_id or default.session_id
        )
        try:
            written_at = parse_datetime(line.updated_at, "updated_at") if line.updated_at else None
            result = await service.store_memory(
                caller, line.key, line.value, line.scope, line.tags, line.metadata,
                line.ttl_seconds, line.expires_at, line.source, line.confidence, line.pinned,
                allowed_sources=tuple(Source), written_at=written_at,
            )
        except (MemoryMcpError, InvalidInputError) as exc:
            report.errors.append(f"line {number}: {exc}")
            continue
        if result.changed:
            report.stored += 1
        else:
            report.unchanged += 1
    await service.embedder.wait_ready()
    report.embedded = await service.embed_pending(progress=progress)
    return report


async def export_lines(records: AsyncIterator[MemoryRecord], out: TextIO | None = None) -> int:
    """Write `records` (the service decides which: what one agent may see, or all) to
    `out`, by default the stdout of the moment (not of import time)."""
    out = out or sys.stdout
    count = 0
    async for record in records:
        line = {
            "key": record.key,
            "value": record.value,
            "scope": record.scope.value,
            "tags": record.tags,
            "metadata": record.metadata,
            "expires_at": iso(record.expires_at),
            "source": record.source.value,
            "confidence": record.confidence,
            "pinned": record.pinned,
            "agent_id": record.agent_id,
            "updated_by": record.updated_by,
            **({"about_agent": record.about_agent} if record.about_agent else {}),
            "session_id": record.session_id or None,
            "created_at": iso(record.created_at),
            "updated_at": iso(record.updated_at),
        }
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        count += 1
    return count
