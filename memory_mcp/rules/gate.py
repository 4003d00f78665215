"""The gate: the one read of a memory by id and the one write of a memory, which every
subject of the rules goes through — the memories themselves (rules/service.py), their links
(rules/links.py), tasks and projects (rules/tasks.py), a note's memories
(rules/note_memories.py). Each subject is handed the gate; none holds the store's write.

A read by id (`read`) answers "not found" for a memory the caller may not see, the same
answer as for a missing one (permissions.visible_or_not_found). A write (`write`) is
decided once (permissions.check_write): refused, naming the owner, or allowed with the
answer the store applies, under its write lock, to a memory another agent holds. The time
of a write is read once, by the subject that builds the memory, and handed in (`now`): the
expiry it computed, the row's times and the vector's are the same instant.

The vectors: while the write's transaction commits, the semantic layer embeds the text
(semantic/vectors.py, WriteEmbedding); the gate writes inside its first step and runs the
near-duplicate check inside its second, while the vector is saved. The semantic layer
computes vectors; the gate decides and writes."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.models import Caller, MemoryRecord, NewMemory, UpsertOutcome, Visibility
from memory_mcp.rules import permissions
from memory_mcp.rules.conflicts import conflicts_of
from memory_mcp.rules.permissions import Origin
from memory_mcp.semantic.similar import find_similar

if TYPE_CHECKING:  # types only: the composition root hands them in
    from memory_mcp.rules.policy import Policy
    from memory_mcp.semantic.similar_check import SimilarCheck
    from memory_mcp.semantic.vectors import Vectors
    from memory_mcp.store.repository import MemoryStore

log = logging.getLogger(__name__)


class Gate:
    def __init__(
        self,
        store: MemoryStore,
        policy: Policy,
        vectors: Vectors,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.policy = policy
        self.vectors = vectors  # embedding, storing and searching vectors
        self.clock = clock

    # -- the one read by id -------------------------------------------------------------------

    async def read(self, caller: Caller, given_id: Any, field: str = "id") -> MemoryRecord:
        """The memory of an id as a caller gave it (checked here, named `field` in an
        error: every read and change by id comes through), if `caller` may see it."""
        memory_id = v.clean_id(given_id, self.store.largest_id, field)
        return permissions.visible_or_not_found(caller, memory_id, await self.store.get(memory_id))

    def by_id(self, caller: Caller, include_expired: bool = False) -> Visibility:
        """What a read by id shows (can_see): a memory of any project the caller may read,
        a task's working memories and archived ones too: a link's far end, a neighbour."""
        return Visibility(
            caller=caller,
            include_expired=include_expired,
            now=self.clock(),
            every_task=True,
            include_archived=True,
            include_superseded=True,
        )

    # -- the one write ------------------------------------------------------------------------

    async def write(
        self,
        caller: Caller,
        new: NewMemory,
        now: float,
        *,
        expected_version: int | None = None,
        embed_now: bool = True,
        origin: Origin = Origin.CALLER,
        take_over: bool = False,
    ) -> UpsertOutcome:
        """Upsert `new` (a memory a subject built and checked for `caller`) at `now`,
        evicting over the cap, embedding it meanwhile if the model is loaded (and
        `embed_now`: notes leave it to the background worker). `origin`: where its content
        comes from (rules/permissions.py). `take_over`: a memory another agent holds
        becomes the caller's (inject_learning)."""
        outcome, _ = await self._write(
            caller, new, now, expected_version, embed_now, origin, take_over, check=False
        )
        return outcome

    async def write_and_check(
        self, caller: Caller, new: NewMemory, now: float, *, expected_version: int | None = None
    ) -> tuple[UpsertOutcome, SimilarCheck]:
        """`write`, and the near-duplicate check of the memory written (`similar_to`): the
        index is caught up while the model runs and the check runs while the vector is
        saved, instead of after them. The memory-store tool's write."""
        outcome, check = await self._write(
            caller, new, now, expected_version, True, Origin.CALLER, False, check=True
        )
        assert check is not None
        return outcome, check

    async def similar_to(
        self, caller: Caller, record: MemoryRecord, now: float | None = None
    ) -> SimilarCheck:
        """The memories `caller` can see that closely resemble `record` (just written):
        memory-store's `similar` (semantic/similar.py), and of those the ones it may
        contradict, its `conflicts` (rules/conflicts.py)."""
        when = self.clock() if now is None else now
        similar = await find_similar(self.vectors, self.store, caller, record, when)
        similar.conflicts = await conflicts_of(self.store, record, similar)
        return similar

    async def _write(
        self,
        caller: Caller,
        new: NewMemory,
        now: float,
        expected_version: int | None,
        embed_now: bool,
        origin: Origin,
        take_over: bool,
        *,
        check: bool,
    ) -> tuple[UpsertOutcome, SimilarCheck | None]:
        may_overwrite_others = permissions.check_write(caller, new, origin)  # decided once
        similar: SimilarCheck | None = None
        if embed_now:
            embedding = self.vectors.embedding(new.value, now)
            async with embedding.beside_write(catch_up=check):
                outcome = await self._upsert(
                    new, now, expected_version, may_overwrite_others, take_over
                )
            async with embedding.saving():
                if check:
                    similar = await self.similar_to(caller, outcome.record, now)
        else:
            outcome = await self._upsert(
                new, now, expected_version, may_overwrite_others, take_over
            )
            if check:
                similar = await self.similar_to(caller, outcome.record, now)
        outcome.redactions = list(new.redactions)
        if outcome.evicted_ids:
            log.info("agent %s over its cap: evicted %s", new.agent_id, outcome.evicted_ids)
        return outcome, similar

    async def _upsert(
        self,
        new: NewMemory,
        now: float,
        expected_version: int | None,
        may_overwrite_others: bool,
        take_over: bool,
    ) -> UpsertOutcome:
        return await self.store.upsert(
            new,
            expected_version=expected_version,
            now=now,
            cap=self.policy.max_memories_per_agent,
            may_overwrite_others=may_overwrite_others,
            take_over=take_over,
        )


__all__ = ["Gate"]
