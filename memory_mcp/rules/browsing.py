"""The shapes of browsing: the filters of a listing, a page with its cursor, one version of
a memory, what a bulk delete chose. MemoryService.list_memories / history / delete_many
apply the rules; the MCP tools, the CLI and the web view build these and read them.

A cursor is opaque to clients: URL-safe base64 of the order, the timestamp and the id of
the last memory on the page. The next page starts strictly after that point, so memories
written meanwhile (always newer) never shift a page or repeat a memory. In order
"updated", a memory updated while someone pages moves to the front: a listing taken
again from the start shows it there."""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field
from typing import Any, get_args

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import MemoryRecord, Order, Position, Scope, Source
from memory_mcp.rules.trust import TrustMarks
from memory_mcp.search.time_filters import parse_time, parse_time_range

ORDERS: tuple[Order, ...] = get_args(Order)
DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 100
DEFAULT_DELETE_MANY_LIMIT = 100
# A memory rewritten by a loop can have thousands of versions: a page keeps an agent's
# context small; `earlier` leads back through the rest.
DEFAULT_HISTORY_LIMIT = 50
MAX_HISTORY_LIMIT = 500
MAX_DELETE_MANY_LIMIT = 1_000
MAX_CURSOR_CHARS = 200
BAD_CURSOR = "is not a cursor from a listing; pass next_cursor back unchanged"


@dataclass(frozen=True)
class ListFilters:
    """What a listing shows, besides the visibility rule. `since`/`until` are UNIX
    seconds on the listing's order (updated_at or created_at), both ends included."""

    scope: Scope | None = None  # None: every scope the caller can see
    tags: tuple[str, ...] = ()  # all must match
    source: Source | None = None
    agent_id: str | None = None  # the owner
    since: float | None = None
    until: float | None = None
    include_expired: bool = False
    project: str | None = None  # asked (permissions.readable_projects); None: the default
    project_alone: bool = False  # `project` without `*`'s; `*` alone: the shared ones only
    task: str | None = None  # also this task's working memories
    include_archived: bool = False
    include_superseded: bool = False  # corrected memories too (rules/validity.py)
    as_of: float | None = None  # what held then, each as its version of that time

    @classmethod
    def parse(
        cls,
        *,
        now: float,
        scope: str = "all",
        tags: list[str] | tuple[str, ...] = (),
        source: str | None = None,
        agent_id: str | None = None,
        since: str | None = None,
        until: str | None = None,
        include_expired: bool = False,
        project: str | None = None,
        task: str | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: str | None = None,
        project_alone: bool = False,
    ) -> ListFilters:
        """From arguments as people and models give them: scope names, source names, ISO
        dates or ages ("7d"). Each bad one raises InvalidInputError naming it."""
        bounds = parse_time_range(since, until, now)
        return cls(
            scope=v.parse_scope(scope, allow_all=True),
            tags=tuple(v.clean_tags(list(tags))),
            source=None if source is None else v.parse_source(source, tuple(Source)),
            agent_id=None if agent_id in (None, "") else v.clean_key(agent_id, "agent_id"),
            since=bounds.since,
            until=bounds.until,
            include_expired=include_expired,
            project=project,
            project_alone=project_alone,
            task=None if task in (None, "") else v.clean_key(task, "task"),
            include_archived=include_archived,
            include_superseded=include_superseded,
            as_of=None if as_of is None else parse_time(as_of, "as_of", now),
        )


@dataclass
class MemoryPage:
    """One page of a listing, newest first; `next_cursor` is None on the last page."""

    records: list[MemoryRecord]
    next_cursor: str | None
    notices: list[str] = field(default_factory=list)  # e.g. a project with no memories


@dataclass(frozen=True)
class MemoryVersion:
    """One version of a memory: what it held, who wrote it and when (UNIX seconds)."""

    version: int
    value: str
    tags: list[str]
    metadata: dict[str, Any]
    source: Source
    written_by: str
    written_at: float
    current: bool
    # Its window (rules/validity.py): it held from written_at until valid_to, when the
    # next version replaced it or a correction closed the memory (None: it still holds).
    valid_to: float | None = None
    value_json: bool = False  # `value` is a JSON object or array (checks/json_values.py)


@dataclass
class HistoryPage:
    """Versions of one memory, oldest first. `earlier` is the `before` that pages back to
    the versions older than these; None when these go back to the first."""

    versions: list[MemoryVersion]
    earlier: int | None
    marks: TrustMarks | None = None  # the memory as it is now (rules/trust.py)


def check_before(before: object) -> int | None:
    """`before`: show versions older than this one (None: up to the current one)."""
    if before is None:
        return None
    if not v.is_whole_number(before, 2):
        raise InvalidInputError(
            "before",
            f"{v.shown(before)} is not a version number with versions before it (2 or more)",
        )
    return before


@dataclass
class DeleteManyResult:
    """What memory-delete-many chose, oldest first, and whether it deleted them.
    `matched`: every memory the caller may delete that matched (beyond `limit`, the rest
    stay for another call); `not_allowed`: matching memories it sees but may not delete."""

    records: list[MemoryRecord]
    matched: int
    not_allowed: int
    deleted: int
    dry_run: bool
    remaining: int = field(init=False)

    def __post_init__(self) -> None:
        chosen = self.deleted if not self.dry_run else len(self.records)
        self.remaining = max(self.matched - chosen, 0)


def parse_order(order: object) -> Order:
    if isinstance(order, str) and order.strip().lower() in ORDERS:
        return order.strip().lower()  # type: ignore[return-value]
    raise InvalidInputError("order", f"{v.shown(order)} is not one of {', '.join(ORDERS)}")


def check_limit(limit: object, maximum: int) -> int:
    if not (v.is_whole_number(limit) and limit <= maximum):
        raise InvalidInputError(
            "limit", f"{v.shown(limit)} is not a whole number from 1 to {maximum}"
        )
    return limit


def parse_older_than(older_than: str | None, now: float) -> float | None:
    return None if older_than is None else parse_time(older_than, "older_than", now)


def encode_cursor(order: Order, position: Position) -> str:
    raw = json.dumps([order, position.at, position.id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: object, order: Order, largest_id: int = v.MAX_WHOLE_NUMBER) -> Position:
    """The position a cursor holds; a cursor of another order is refused (its timestamp
    means something else), and so is one past the store's largest id (it would overflow
    the query)."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidInputError("cursor", BAD_CURSOR)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        made_for, at, memory_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError):
        raise InvalidInputError("cursor", BAD_CURSOR) from None
    valid = (
        made_for in ORDERS
        and isinstance(at, int | float)
        and not isinstance(at, bool)
        and math.isfinite(at)
        and v.is_whole_number(memory_id, 1, largest_id)
    )
    if not valid:
        raise InvalidInputError("cursor", BAD_CURSOR)
    if made_for != order:
        raise InvalidInputError(
            "cursor", f"was made for order={made_for!r}; list again with that order"
        )
    return Position(float(at), memory_id)


__all__ = [
    "DeleteManyResult",
    "ListFilters",
    "MemoryPage",
    "MemoryVersion",
    "decode_cursor",
    "encode_cursor",
    "parse_order",
]
