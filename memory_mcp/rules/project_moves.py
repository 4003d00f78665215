"""Moving memories to another project (`memory-mcp projects move`): which memories a move
may choose from, and the move itself, in batches.

Where a move chooses: in one project, named (`--from`) or the current one, never in every
project unless asked for by name (`--every-project`): a selector such as `--key deploy`
or `--source manual` run in one repository must not reach the memories of the others.
Ids are explicit, so `--id` alone chooses wherever the memory is.

How it moves: every memory is decided first (rules/permissions.py, where it is and where
it goes) and every key checked for a clash there, then the memories move in batches of
MOVE_BATCH, each its own short write transaction. A store's writers queue for one write
lock (store/engine.py) and give up after BUSY_TIMEOUT_MS (30 s, docs/GUIDE.md); one
transaction for 40,000 memories held every other writer for 105 s; a batch of 100 holds
them for 0.3 s on a quiet machine (3 ms a memory, 40,002 in 116 s at load 1.4: its row,
its links, its history, the write-time context around it), and about 3 s at load 11 on two
cores. A key that clashes only after the check (another writer stored it meanwhile) stops
the move at its batch: what moved before stays moved and the error says how many. Each
memory moved to another project gets a new version (its history keeps the one before; the
new one's metadata names `moved_from` and `moved_at`: store/writes.py). A note's memory
whose chunk the project it goes to holds already (indexed there after the work tree was
renamed) is not a clash: it is a stale copy, dropped into the one there, its links carried
over (rules/note_arrivals.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import anyio

from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller, MemoryRecord, Placement
from memory_mcp.rules import note_arrivals, permissions
from memory_mcp.rules.permissions import Change, Target
from memory_mcp.store.repository import MemoryStore

MOVE_BATCH = 100
# Between two batches: long enough for another process waiting on the write lock's file
# lock to be woken and take it before this process asks again (flock is not a queue).
PAUSE_BETWEEN_BATCHES = 0.02


async def move_to_project(
    store: MemoryStore,
    caller: Caller,
    records: Sequence[MemoryRecord],
    to: str,
    now: Callable[[], float],
    *,
    dry_run: bool = False,
    batch: int = MOVE_BATCH,
) -> Placement:
    """Move `records` (read by `caller`) to project `to`, keeping ids, links and history
    (a new version records the move): each decided as a change where it is and where it
    goes, and every key checked there, before the first batch moves."""
    target = permissions.written_project(caller, to)
    for record in records:
        permissions.check(caller, Target.of(record), Change.MOVE)
        permissions.check(caller, replace(Target.of(record), project=target), Change.MOVE)
    landing = await note_arrivals.arrival(store, records, target)
    if landing.clashes:
        keys = ", ".join(repr(key) for key in sorted(set(landing.clashes))[:20])
        raise InvalidInputError(
            "to", f"a memory in project {target!r} has the same key already: {keys}"
        )
    ids = [record.id for record in landing.moves]
    merges = [(gone.id, kept.id) for gone, kept in landing.merges]
    if dry_run:
        return Placement(target, moved=ids, merged=dict(merges))
    moved: list[int] = []
    for start in range(0, len(ids), batch):
        if start:
            await anyio.sleep(PAUSE_BETWEEN_BATCHES)
        try:
            moved += await store.place(
                ids[start : start + batch],
                project=target,
                field="to",
                moved_by=caller.agent_id,
                now=now(),
            )
        except InvalidInputError as exc:
            if not moved:
                raise
            raise InvalidInputError(
                "to", f"{exc.problem}; {len(moved)} of {len(ids)} had moved before it"
            ) from None
    merged: list[int] = []
    for start in range(0, len(merges), batch):
        if moved or start:
            await anyio.sleep(PAUSE_BETWEEN_BATCHES)
        merged += await store.merge_note_copies(merges[start : start + batch])
    kept = dict(merges)
    return Placement(target, moved=moved, merged={gone: kept[gone] for gone in merged})


__all__ = ["MOVE_BATCH", "move_to_project"]
