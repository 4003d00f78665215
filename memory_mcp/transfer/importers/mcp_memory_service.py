"""mcp-memory-service's JSON export (its `MemoryExporter`, the file its sync/import reads):

    {"export_metadata": {"source_machine": "laptop", "exporter_version": "4.6.1", ...},
     "memories": [{"content": "...", "content_hash": "<sha256>", "tags": ["a", "b"],
                   "created_at": 1731234567.8, "updated_at": 1731234567.8,
                   "memory_type": "note", "metadata": {...}, "export_source": "laptop"}]}

A bare list of such memories is read too. Each becomes one memory keyed
`mcp-memory-service:<content_hash>` (its identity there; computed from the content when
the export lacks it), with its tags plus its memory_type, its metadata plus where it came
from, and its own time (updated_at, else created_at; epoch seconds or ISO). Embeddings in
the export are ignored: vectors come from this server's model."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_mcp.checks.validation import EPOCH, LATEST_DATE, iso, parse_datetime, shown
from memory_mcp.errors import InvalidInputError
from memory_mcp.transfer.jsonl import MemoryLine

FORMAT = "mcp-memory-service"
KEY_PREFIX = "mcp-memory-service:"
EPOCH_SECONDS_RANGE = (EPOCH.timestamp(), LATEST_DATE.timestamp())  # as parse_datetime


class ExportedMemory(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1)
    content_hash: str | None = Field(None, min_length=1, max_length=128)
    tags: list[str] | str = []  # older exports: one comma-separated string
    memory_type: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: float | str | None = None
    updated_at: float | str | None = None
    export_source: str | None = None

    def tag_list(self) -> list[str]:
        tags = self.tags.split(",") if isinstance(self.tags, str) else self.tags
        kept = [tag.strip() for tag in tags if tag.strip()]
        if self.memory_type and self.memory_type.strip() not in kept:
            kept.append(self.memory_type.strip())
        return kept

    def written_at(self) -> str | None:
        """ISO time of its last change (MemoryLine's `updated_at`); a bad one is named by
        the export's own field (InvalidInputError)."""
        name = "updated_at" if self.updated_at is not None else "created_at"
        when = getattr(self, name)
        if when is None:
            return None
        if isinstance(when, str):
            when = parse_datetime(when, name)
        if not EPOCH_SECONDS_RANGE[0] <= when < EPOCH_SECONDS_RANGE[1]:
            raise InvalidInputError(name, f"{shown(when)} is not a time between 1970 and 9000")
        return iso(when)

    def memory_line(self, scope: str) -> MemoryLine:
        digest = self.content_hash or hashlib.sha256(self.content.encode()).hexdigest()
        origin = {"imported_from": FORMAT, "content_hash": digest}
        if self.memory_type:
            origin["memory_type"] = self.memory_type
        if self.export_source:
            origin["export_source"] = self.export_source
        return MemoryLine(
            key=KEY_PREFIX + digest,
            value=self.content,
            scope=scope,
            tags=self.tag_list(),
            metadata={**(self.metadata or {}), **origin},
            updated_at=self.written_at(),
        )


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'memory'}: {e['msg']}" for e in exc.errors()
    )


def read(path: Path, scope: str) -> tuple[list[tuple[int, MemoryLine]], list[str]]:
    """Every memory of the export, numbered from 1 in file order, or a message naming the
    memory and the field. A file that is not such an export at all is refused whole."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="strict"))
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "file",
            f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})",
        ) from exc
    entries = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise InvalidInputError(
            "file",
            f'{path}: not an mcp-memory-service export (expected {{"memories": [...]}} '
            "or a list of memories)",
        )
    memories: list[tuple[int, MemoryLine]] = []
    errors: list[str] = []
    for number, entry in enumerate(entries, start=1):
        try:
            memories.append((number, ExportedMemory.model_validate(entry).memory_line(scope)))
        except ValidationError as exc:
            errors.append(f"memory {number}: {_problems(exc)}")
        except InvalidInputError as exc:
            errors.append(f"memory {number}: {exc}")
    return memories, errors
