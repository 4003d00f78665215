"""Quarantine: memories stored but not served until the lead or the user approves them.

A memory is the next session's context: text copied from outside, or an agent's guess
that reads like orders to a model, is stored prompt injection waiting for a reader. The
`injection_policy` setting decides what happens to a memory whose text the injection
detector flags (checks/injection.py: instruction-like, remote images, hidden characters)
when it comes from a low-trust source (rules/trust.LOW_TRUST: agent_inferred, recalled,
external), and to every memory from `external`:

- `quarantine` (the default): stored, held. No read serves it — searches (both arms),
  lists, reads by id, the `<memories>` block, the knowledge graph, links, exports — to
  any agent, its writer included (store/visibility.py's condition, the vector index,
  permissions.can_see), until the lead approves it (`memory-mcp quarantine`, the web
  view); approving keeps its history. Storing it again from a trusted source with clean
  text releases it too.
- `reject`: the flagged text from a low-trust source is refused, naming the rule; a clean
  external memory is still held.
- `flag`: stored and served with its flags, as every other source's flagged text is.

Flagged text from the other sources keeps today's rule: stored and served, its flags
shown to every reader."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, MemoryNotFoundError
from memory_mcp.models import Caller, MemoryRecord, Source
from memory_mcp.rules import permissions
from memory_mcp.rules.browsing import DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, check_limit
from memory_mcp.rules.permissions import Change, Target
from memory_mcp.rules.trust import LOW_TRUST

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

InjectionPolicy = Literal["flag", "quarantine", "reject"]
POLICIES: tuple[InjectionPolicy, ...] = ("flag", "quarantine", "reject")


def held(source: Source, flags: list[str], policy: str) -> bool:
    """Whether a memory of `source` whose text got `flags` is quarantined under `policy`;
    InvalidInputError (naming the rule) where the policy refuses it."""
    flagged = bool(flags) and source in LOW_TRUST
    if policy == "flag":
        return False
    if flagged and policy == "reject":
        raise InvalidInputError(
            "value",
            f"reads like instructions to a model ({', '.join(flags)}) and its source is "
            f"{source.value}: refused by injection_policy=reject (store what it says in "
            "your own words, or ask the user to confirm it as user_stated)",
        )
    return flagged or source is Source.EXTERNAL


class Quarantine:
    """The memories held for approval, as a lead reviews them (MemoryService.quarantine):
    list, approve (served from now on, nothing else changed) and discard (deleted, as a
    delete does). Who may: permissions.check_reviewer and Change.APPROVE, a lead only, on
    the memories it could see were they served."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def held(self, caller: Caller, limit: int = DEFAULT_LIST_LIMIT) -> list[MemoryRecord]:
        """Those `caller` may review, oldest first."""
        permissions.check_reviewer(caller)
        records = await self.store.quarantined_records(check_limit(limit, MAX_LIST_LIMIT))
        return [record for record in records if permissions.may_review(caller, record)]

    async def approve(self, caller: Caller, memory_id: Any) -> MemoryRecord:
        record = await self._held_record(caller, memory_id)
        permissions.check(caller, Target.of(record), Change.APPROVE)
        await self.store.release([record.id])
        record.quarantined = False
        return record

    async def discard(self, caller: Caller, memory_id: Any) -> MemoryRecord:
        record = await self._held_record(caller, memory_id)
        permissions.check(caller, Target.of(record), Change.APPROVE)
        await self.store.delete([record.id])
        return record

    async def _held_record(self, caller: Caller, given_id: Any) -> MemoryRecord:
        """A memory held for approval that `caller` could see were it served (any other
        is "not found", as a read by id answers)."""
        memory_id = v.clean_id(given_id, self.store.largest_id)
        record = await self.store.get(memory_id)
        if record is None or not record.quarantined:
            raise MemoryNotFoundError(memory_id)
        seen = (record.scope, record.agent_id, record.session_id, record.project)
        if not permissions.can_see_memory_of(caller, *seen):
            raise MemoryNotFoundError(memory_id)
        return record


__all__ = ["POLICIES", "InjectionPolicy", "Quarantine", "held"]
