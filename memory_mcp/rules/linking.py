"""Links, the rules (the shapes their reader sees are rules/links.py's): who may make or
remove a link, and which links a reader sees. Every memory is read through the gate
(rules/gate.py), so a memory the caller may not see is "not found" here as everywhere.

A link is its source memory's, changed as an update of it is (permissions.decide with
Change.LINK), and seen by whoever may see both of its ends: a memory's links to or from
memories its reader may not see are left out everywhere (memory-get, memory-related, a
search's expansion, the knowledge-graph tools, exports), never counted, never named. Links
have their own history: a removed link stays as a row with who removed it and when (its
target deleted: removed by nobody), and making or removing a link writes no new version of
the memory (its text did not change)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.safety import refuse_secret_name
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller, Link, LinkOutcome, MemoryRecord
from memory_mcp.rules import permissions, validity
from memory_mcp.rules.links import (
    DEFAULT_FAN_OUT,
    DEFAULT_RELATED_LIMIT,
    MAX_DEPTH,
    MAX_FAN_OUT,
    MAX_LINK_HISTORY,
    MAX_RELATED_LIMIT,
    MAX_SHOWN_LINKS,
    WAYS,
    Direction,
    LinkedMemory,
    LinkEvent,
    Neighbour,
    Related,
    bounded,
    far_end,
    near_end,
    over_fan_out,
    parse_direction,
    within_fan_out,
)
from memory_mcp.rules.permissions import Change, Target, can_see, can_see_memory_of

if TYPE_CHECKING:
    from memory_mcp.rules.gate import Gate

MAX_LINKS_PER_MEMORY = 1_000
_ID_BATCH = 500  # memory ids in one statement


class LinkService:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    # -- changing links (a write: permissions.decide) -------------------------------------

    async def link(
        self, caller: Caller, memory_id: Any, to: Any, relation: Any, *, remove: bool = False
    ) -> LinkOutcome:
        """Link memory `memory_id` to memory `to` with `relation` (or remove that link).
        Both must be visible to `caller`; `memory_id` must be one `caller` may update."""
        change = [(to, relation)]
        if remove:
            return await self.change_links(caller, memory_id, [], change)
        return await self.change_links(caller, memory_id, change)

    async def change_links(
        self,
        caller: Caller,
        memory_id: Any,
        adds: Sequence[tuple[Any, Any]],
        removes: Sequence[tuple[Any, Any]] = (),
    ) -> LinkOutcome:
        """Add and remove links of one memory at once (all or nothing). Asks the one
        decision (rules/permissions.py) as for an update of that memory; every target must be
        visible to `caller` (else "not found", as for a missing one)."""
        source = await self.gate.read(caller, memory_id)
        permissions.check(caller, Target.of(source), Change.LINK)
        cleaned_adds = [await self._checked_end(caller, source, to, rel) for to, rel in adds]
        for _, relation in cleaned_adds:  # a name, shown to whoever sees both ends
            refuse_secret_name(relation, "relation", "relation")
        cleaned_removes = [await self._checked_end(caller, source, to, rel) for to, rel in removes]
        # Whether the store may go ahead if another agent holds the source when it writes
        # (only a swarm memory can be; the decision's answer for "someone else's").
        held_by_another = replace(Target.of(source), owner=None)
        outcome = await self.gate.store.links.change(
            source.id,
            cleaned_adds,
            cleaned_removes,
            writer=caller.agent_id,
            now=self.gate.clock(),
            may_change_others=permissions.decide(caller, held_by_another, Change.LINK) is None,
            max_links=MAX_LINKS_PER_MEMORY,
        )
        # A `supersedes` link closes (its removal opens) a window (rules/validity.py).
        await validity.follow_links(self.gate.store, caller, source, outcome)
        return outcome

    async def _checked_end(
        self, caller: Caller, source: MemoryRecord, to: Any, relation: Any
    ) -> tuple[int, str]:
        target = await self.gate.read(caller, to, "to")
        if target.id == source.id:
            raise InvalidInputError("to", f"memory {source.id} cannot link to itself")
        return target.id, v.clean_relation(relation)

    # -- reading links (only those whose both ends the caller may see) ----------------------

    async def links_of(
        self, caller: Caller, record: MemoryRecord, limit: int = MAX_SHOWN_LINKS
    ) -> tuple[list[LinkedMemory], bool]:
        """The current links out of and into `record` (which `caller` has read) whose far
        end `caller` may see (expired ones too, as memory-get shows them), newest first,
        at most `limit` each way; and whether some were left out by that bound."""
        vis = self.gate.by_id(caller, include_expired=True)
        shown: list[LinkedMemory] = []
        more = False
        for direction in ("out", "in"):
            links = await self.gate.store.links.current([record.id], direction, vis, limit + 1)
            more = more or len(links) > limit
            shown += await self._with_far_ends(caller, links[:limit], direction)
        return shown, more

    async def related(
        self,
        caller: Caller,
        memory_id: Any,
        *,
        depth: Any = 1,
        direction: Any = "both",
        relation: Any = None,
        limit: Any = DEFAULT_RELATED_LIMIT,
        fan_out: Any = DEFAULT_FAN_OUT,
        include_expired: bool = False,
    ) -> Related:
        """The memories linked to `memory_id`, then to those, up to `depth` links away,
        breadth first (nearest first; newest link first at each memory), each once, at
        most `fan_out` links followed from one memory each way and `limit` in all."""
        start = await self.gate.read(caller, memory_id)
        depth = bounded(depth, "depth", MAX_DEPTH)
        limit = bounded(limit, "limit", MAX_RELATED_LIMIT)
        fan_out = bounded(fan_out, "fan_out", MAX_FAN_OUT)
        ways = WAYS[parse_direction(direction)]
        wanted = None if relation is None else v.clean_relation(relation)
        vis = self.gate.by_id(caller, include_expired=include_expired)
        result = Related(start)
        seen, frontier, full = {start.id}, [start.id], False
        for level in range(1, depth + 1):
            reached: list[tuple[Link, Direction]] = []
            for way in ways:
                links = await self.gate.store.links.current(frontier, way, vis, fan_out + 1, wanted)
                result.truncated |= over_fan_out(links, way, fan_out)
                reached += [(link, way) for link in within_fan_out(links, way, fan_out)]
            steps: list[tuple[Link, Direction]] = []
            for link, way in sorted(reached, key=lambda item: -item[0].id):
                far_id = far_end(link, way)
                if far_id in seen:
                    continue
                if len(result.neighbours) + len(steps) >= limit:
                    result.truncated = full = True
                    break
                seen.add(far_id)
                steps.append((link, way))
            records = await self.gate.store.fetch_many([far_end(link, way) for link, way in steps])
            for link, way in steps:
                far = records.get(far_end(link, way))
                if far is not None and can_see(caller, far):
                    near = near_end(link, way)
                    via = LinkedMemory(link, way, near, far)
                    result.neighbours.append(Neighbour(far, level, via))
            frontier = [step.memory.id for step in result.neighbours if step.depth == level]
            if not frontier or full:
                break
        return result

    async def links_among(self, caller: Caller, memory_ids: Sequence[int]) -> list[Link]:
        """The current links between memories of `memory_ids` (which `caller` has read;
        unexpired ends only), oldest first: a knowledge graph's relations (graph/profile.py)."""
        vis = self.gate.by_id(caller)
        wanted, found = set(memory_ids), []
        ids = list(memory_ids)
        for start in range(0, len(ids), _ID_BATCH):
            chunk = ids[start : start + _ID_BATCH]
            found += await self.gate.store.links.current(chunk, "out", vis, MAX_LINKS_PER_MEMORY)
        return sorted((link for link in found if link.target_id in wanted), key=lambda x: x.id)

    async def link_history(
        self, caller: Caller, memory_id: Any, limit: int = MAX_LINK_HISTORY
    ) -> list[LinkEvent]:
        """Every link out of or into a memory `caller` may read, current and removed,
        newest first, whose far end `caller` may see (or, gone, could have seen)."""
        record = await self.gate.read(caller, memory_id)
        links = await self.gate.store.links.history(record.id, limit)
        sources = await self.gate.store.fetch_many(
            [link.source_id for link in links if link.target_id == record.id]
        )
        events = []
        for link in links:
            if link.source_id == record.id:
                if can_see_memory_of(
                    caller,
                    link.target_scope,
                    link.target_owner,
                    link.target_session,
                    link.target_project,
                ):
                    events.append(LinkEvent(link, "out"))
            else:
                source = sources.get(link.source_id)
                if source is not None and can_see(caller, source):
                    events.append(LinkEvent(link, "in"))
        return events

    async def _with_far_ends(
        self, caller: Caller, links: list[Link], direction: Direction
    ) -> list[LinkedMemory]:
        records = await self.gate.store.fetch_many([far_end(link, direction) for link in links])
        shown = []
        for link in links:
            far = records.get(far_end(link, direction))
            if far is None or not can_see(caller, far):
                continue  # deleted meanwhile (or damaged)
            near = near_end(link, direction)
            shown.append(LinkedMemory(link, direction, near, far))
        return shown


__all__ = ["MAX_LINKS_PER_MEMORY", "LinkService"]
