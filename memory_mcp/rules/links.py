"""Links as their reader sees them (MemoryService computes them, results/links.py shows
them): a link with its direction and far end, a memory's link history, memory-related's
walk; and the walk's pure steps (directions, fan-out bounds). Plain data, so what shows
them needs nothing of the service."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.limits import LINK_DEPTH_MAX, RELATED_LIMIT_MAX
from memory_mcp.models import Link, MemoryRecord

Direction = Literal["out", "in"]
Directions = Literal["out", "in", "both"]

DIRECTIONS: tuple[Directions, ...] = ("both", "out", "in")
WAYS: dict[Directions, tuple[Direction, ...]] = {
    "both": ("out", "in"),
    "out": ("out",),
    "in": ("in",),
}
MAX_DEPTH = LINK_DEPTH_MAX
DEFAULT_RELATED_LIMIT = 20
MAX_RELATED_LIMIT = RELATED_LIMIT_MAX
# Links followed from one memory in one direction: a hub (an entity a thousand memories
# name) adds its newest ones only.
DEFAULT_FAN_OUT = 20
MAX_FAN_OUT = 100
MAX_SHOWN_LINKS = 50  # memory-get: per direction
MAX_LINK_HISTORY = 200


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


def far_end(link: Link, direction: Direction) -> int:
    return link.target_id if direction == "out" else link.source_id


def near_end(link: Link, direction: Direction) -> int:
    return link.source_id if direction == "out" else link.target_id


def parse_direction(direction: Any) -> Directions:
    if direction not in DIRECTIONS:
        raise InvalidInputError(
            "direction", f"{v.shown(direction)} is not one of {', '.join(DIRECTIONS)}"
        )
    result: Directions = direction
    return result


def bounded(value: Any, field_name: str, most: int) -> int:
    if not v.is_whole_number(value, 1, most):
        raise InvalidInputError(field_name, f"must be a whole number from 1 to {most}")
    return value


def over_fan_out(links: list[Link], direction: Direction, fan_out: int) -> bool:
    counts: dict[int, int] = {}
    for link in links:
        counts[near_end(link, direction)] = counts.get(near_end(link, direction), 0) + 1
    return any(count > fan_out for count in counts.values())


def within_fan_out(links: list[Link], direction: Direction, fan_out: int) -> list[Link]:
    """The newest `fan_out` links of each memory (the store sent one more, to tell)."""
    counts: dict[int, int] = {}
    kept = []
    for link in links:  # newest first
        near = near_end(link, direction)
        counts[near] = counts.get(near, 0) + 1
        if counts[near] <= fan_out:
            kept.append(link)
    return kept


__all__ = [
    "DIRECTIONS",
    "Direction",
    "Directions",
    "LinkEvent",
    "LinkedMemory",
    "Neighbour",
    "Related",
    "bounded",
    "far_end",
    "near_end",
    "over_fan_out",
    "parse_direction",
    "within_fan_out",
]
