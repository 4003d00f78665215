"""Readers for other memory servers' files (`memory-mcp import --from FORMAT FILE`): each
turns a file into the same checked lines as our own JSONL export (jsonl.MemoryLine), so
the import path is one (cli/imports.py: whole-file check, batches, idempotent re-runs).

A reader reports every bad entry by its place and field, and the import then stores
nothing; the memories it makes get stable keys derived from the source (an entity's
name, a content hash), so importing the same file again writes nothing new."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory_mcp.transfer.importers import mcp_memory_service, memory_json
from memory_mcp.transfer.jsonl import MemoryLine, read_lines


@dataclass(frozen=True)
class ReadFile:
    """A file read whole: its memories by place number, and one message per bad entry."""

    lines: list[tuple[int, MemoryLine]]
    errors: list[str]
    unit: str  # what a place number counts, for messages: "line 3", "memory 3"
    units: str  # its plural: "3 bad lines", "3 bad memories"


@dataclass(frozen=True)
class Format:
    read: Callable[[Path, str], tuple[list[tuple[int, MemoryLine]], list[str]]]
    unit: str
    units: str
    takes_scope: bool  # False: each entry names its own scope (our JSONL)


def _own_jsonl(path: Path, _scope: str) -> tuple[list[tuple[int, MemoryLine]], list[str]]:
    return read_lines(path)


FORMATS: dict[str, Format] = {
    "jsonl": Format(_own_jsonl, "line", "lines", takes_scope=False),
    "memory-json": Format(memory_json.read, "line", "lines", takes_scope=True),
    "mcp-memory-service": Format(mcp_memory_service.read, "memory", "memories", takes_scope=True),
}


def read_file(path: Path, format_name: str, scope: str = "agent") -> ReadFile:
    source = FORMATS[format_name]
    lines, errors = source.read(path, scope)
    return ReadFile(lines, errors, source.unit, source.units)
