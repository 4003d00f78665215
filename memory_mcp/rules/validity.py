"""Facts that change: validity windows, corrections and reads "as of" a time.

Every memory has a window: it holds from `valid_from` (when it was stated, unless the
writer says from when) until `valid_to` (open while it is current). Two ways to say a
fact changed, and how each maps onto the store:

- **The same key, a new value** (store_memory on the key again): a new *version* of the
  same memory, as always (rules/versions.py). Its versions are windows inside the
  memory's: version k held from when it was written until version k+1 replaced it
  (memory_history's `replaced_at`). The memory stays current; only the replaced version
  is past. That is the right shape when the key names the slot ("deploy-target"): one
  memory, its history the record of the change.
- **A correction of another memory** (store_memory with `supersedes: <id>`): two
  memories, the new one current and the old one *closed*: its `valid_to` is when the
  correction holds from, `superseded_by` names it, and a `supersedes` link goes from the
  new one to it (memory-get shows it). That is the shape when the two were stated under
  different keys, or by different writers, or when an agent finds the contradiction
  later (the store answer's `conflicts` names the call: rules/conflicts.py).

A closed memory, like a replaced version, leaves the default reads: search, list, the
`<memories>` block, the similar check; and lends its words to no neighbour's write-time
context from that moment (store/write_context.py). `include_superseded` brings both back,
marked (`valid_to`, and `superseded_by` for a corrected memory); `as_of` answers with what
held at a time: the memories whose window covered it, each as the version current then.
memory-get reads any memory by id, closed or not; memory-history shows the versions'
windows. Storing a closed memory's key again with a new value opens its window again."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import (
    Caller,
    LinkOutcome,
    MemoryRecord,
    NewMemory,
    StoreRequest,
    memory_identity,
)
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target
from memory_mcp.search.past_versions import as_version
from memory_mcp.search.time_filters import parse_time

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

SUPERSEDES = "supersedes"  # the link a correction makes to the memory it closes


def window_of(new: NewMemory, request: StoreRequest) -> None:
    """The window a store asks for: from when it holds (None: from when it is written),
    and until when (an import of a closed memory; None: it holds)."""
    new.valid_from = v.clean_valid_from(request.valid_from)
    new.valid_to = v.clean_valid_from(request.valid_to, "valid_to")


async def corrected(
    store: MemoryStore, caller: Caller, new: NewMemory, given: Any
) -> MemoryRecord | None:
    """The memory `given` (store_memory's `supersedes`; None: none) names, checked before
    anything is written (a correction that cannot be made stores nothing): one `caller`
    may see and change, current, and not the one being stored."""
    if given is None:
        return None
    memory_id = v.clean_id(given, store.largest_id, "supersedes")
    record = await store.get(memory_id)
    if record is None or not permissions.can_see(caller, record):
        raise InvalidInputError("supersedes", f"there is no memory {memory_id} you can see")
    permissions.check(caller, Target.of(record), Change.UPDATE)
    same = memory_identity(
        record.key, record.scope, record.agent_id, record.session_id, record.project, record.task
    )
    if same == new.identity:
        raise InvalidInputError(
            "supersedes",
            f"memory {memory_id} is the one this call updates (same key): a new value under "
            "its key is already a new version; leave supersedes out",
        )
    if record.valid_to is not None:
        raise InvalidInputError(
            "supersedes",
            f"memory {memory_id} was already superseded by memory {record.superseded_by}; "
            "supersede that one instead",
        )
    return record


async def close(old: MemoryRecord, new: MemoryRecord, links: Any, caller: Caller) -> None:
    """`new` corrects `old`: `new` links to it (`supersedes`), which closes its window
    (follow_links)."""
    await links(caller, new.id, [(old.id, SUPERSEDES)], [])


async def follow_links(
    store: MemoryStore, caller: Caller, source: MemoryRecord, outcome: LinkOutcome
) -> None:
    """A `supersedes` link made closes its target's window from when the source holds
    (not before the target began), if `caller` may change the target (else it is a link
    only); one removed opens it again, if that link had closed it."""
    for link in outcome.added:
        if link.relation != SUPERSEDES:
            continue
        target = await store.get(link.target_id)
        if target is None or target.valid_to is not None:
            continue
        if permissions.decide(caller, Target.of(target), Change.UPDATE) is None:
            at = max(source.holds_from, target.holds_from)
            await store.close_window(target.id, source.id, at)
    for link in outcome.removed:
        if link.relation != SUPERSEDES:
            continue
        target = await store.get(link.target_id)
        if target is not None and target.superseded_by == source.id:
            await store.open_window(target.id)


def as_of_time(given: Any, now: float | None = None) -> float | None:
    """`as_of` as UNIX seconds: an ISO date-time or an age ("7d": a week ago)."""
    if given is None:
        return None
    return parse_time(given, "as_of", time.time() if now is None else now)


async def record_as_of(store: MemoryStore, record: MemoryRecord, at: float) -> MemoryRecord:
    """`record` as it held at `at` (memory-get's `as_of`); InvalidInputError if its window
    did not cover that time."""
    if record.holds_from > at:
        raise InvalidInputError(
            "as_of",
            f"memory {record.id} did not hold yet then (it holds from {v.iso(record.holds_from)})",
        )
    if record.valid_to is not None and record.valid_to <= at:
        raise InvalidInputError(
            "as_of",
            f"memory {record.id} no longer held then: memory {record.superseded_by} "
            f"superseded it at {v.iso(record.valid_to)}",
        )
    return (await records_as_of(store, [record], at))[0]


async def records_as_of(
    store: MemoryStore, records: list[MemoryRecord], at: float
) -> list[MemoryRecord]:
    """Each of `records` as the version current at `at` (memory-list's `as_of`)."""
    changed = [record.id for record in records if record.updated_at > at]
    versions = await store.versions_at(changed, at)
    return [
        as_version(record, versions[record.id]) if record.id in versions else record
        for record in records
    ]


__all__ = [
    "SUPERSEDES",
    "as_of_time",
    "close",
    "corrected",
    "follow_links",
    "record_as_of",
    "records_as_of",
    "window_of",
]
