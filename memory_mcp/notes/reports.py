"""What indexing a note produces: its memories (one per chunk) and the reports of a file, a
note and a folder. Plain data, so the ways in (the CLI, the hooks, the index-note tool) can
name them without importing the indexer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FileMemory:
    """One chunk of a file, as the indexer derives it: `key` is stable for the chunk.
    `earlier_key`: the key the chunk had when keys held the file's absolute path (a store
    indexed before then renames that memory to `key`: notes/file_memories.py)."""

    key: str
    value: str
    metadata: dict[str, Any]
    earlier_key: str | None = None


@dataclass
class FileIndexReport:
    file_path: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    refused: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # "key: kind at characters a-b"
    expired: bool = False  # the file is older than the file_index TTL: not indexed

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.removed)

    def describe(self) -> str:
        if self.expired:
            return f"{self.file_path}: not modified within the file_index TTL; not indexed"
        text = (
            f"{self.file_path}: {self.created} new, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.removed} removed"
        )
        text += f", {len(self.refused)} refused" if self.refused else ""
        return text + (f", {len(self.redacted)} secrets redacted" if self.redacted else "")


@dataclass
class NoteOutcome:
    path: str
    action: str  # "indexed", "removed", "skipped"
    detail: str = ""
    report: FileIndexReport | None = None

    def describe(self) -> str:
        if self.report is not None:
            return self.report.describe()
        return f"{self.path}: {self.action}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class ReconcileReport:
    indexed: int = 0  # files whose memories changed
    unchanged: int = 0
    removed: int = 0  # files whose memories were removed
    skipped: list[str] = field(default_factory=list)
