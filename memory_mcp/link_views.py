"""Links as their reader sees them (linking.py computes them; link_results.py shows them):
a link with its direction and far end, a memory's link history, memory-related's walk.
Plain data, so what shows them needs nothing of the service."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memory_mcp.models import Link, MemoryRecord

Direction = Literal["out", "in"]
Directions = Literal["out", "in", "both"]


@dataclass(frozen=True)
class LinkedMemory:
    """One link as its reader sees it from `near` (the memory asked about): the link, its
    direction from there, and the memory at its far end."""

    link: Link
    direction: Direction
    near: int
    far: MemoryRecord


@dataclass(frozen=True)
class Neighbour:
    """A memory reached from the start of memory-related: `depth` links away, the last of
    them `via` (seen from the memory it was reached from)."""

    memory: MemoryRecord
    depth: int
    via: LinkedMemory


@dataclass
class Related:
    start: MemoryRecord
    neighbours: list[Neighbour] = field(default_factory=list)
    truncated: bool = False  # a bound (limit, fan-out) left some out


@dataclass(frozen=True)
class LinkEvent:
    """A link in a memory's link history (current or removed), as its reader may see it."""

    link: Link
    direction: Direction


__all__ = ["Direction", "Directions", "LinkEvent", "LinkedMemory", "Neighbour", "Related"]
