"""Moving a memory between scopes (store_memory with `from_scope`): a private finding
becomes the swarm's, or a swarm memory goes back to its owner's own. The memory keeps its
id, history and links; the move is a new version, written by the mover.

Who may move what follows the rules a store in the new scope would meet
(rules/permissions.py): the owner moves its own memory, the lead moves any swarm memory
(to its owner's agent scope); a worker may put in the swarm what it may store there — not
a `learning:` key, which is the lead's. A memory of that key in the new scope stops the
move (never a merge). Notes follow their files and task memories their task: neither
moves. To your session scope only your own memory goes (a session is the caller's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, NotFoundError
from memory_mcp.models import Caller, Scope, Source, UpsertOutcome
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService


async def change_scope(
    service: MemoryService, caller: Caller, key: str, from_scope: Scope, to_scope: Scope
) -> UpsertOutcome:
    """Move the memory store_memory(key, from_scope) by `caller` would update to
    `to_scope` (see the module doc)."""
    clean = v.clean_key(key)
    if from_scope is to_scope:
        raise InvalidInputError("from_scope", f"the memory is in {to_scope.value} scope already")
    record = await service.by_key(caller, clean, from_scope)
    if record is None:
        raise NotFoundError(
            f"no {from_scope.value} memory with key {v.shown(clean, 80)} is visible to you"
        )
    if record.source is Source.FILE_INDEX:
        raise InvalidInputError("from_scope", f"memory {record.id} mirrors a note: edit its file")
    if record.task is not None:
        raise InvalidInputError("from_scope", f"memory {record.id} is a working memory of a task")
    permissions.check(caller, Target.of(record), Change.UPDATE)
    if to_scope is Scope.SESSION and record.agent_id != caller.agent_id:
        raise InvalidInputError(
            "scope", f"memory {record.id} is agent {record.agent_id!r}'s: not for your session"
        )
    if record.agent_id == caller.agent_id:  # as a store of it in the new scope would be
        moved = Target(
            record.key,
            to_scope,
            record.source,
            caller.agent_id,
            f"key {record.key!r}",
            record.project,
        )
        permissions.check(caller, moved, Change.UPDATE)
    # Else the lead (the check above) moves another's swarm memory to that agent's own
    # scope: out of the swarm, as the lead may delete it, without deleting it.
    session = caller.session_id if to_scope is Scope.SESSION else ""
    now = service.clock()
    written = await service.gate.store.rescope(
        record.id, record.version, to_scope, session, caller.agent_id, now
    )
    return UpsertOutcome(record=written, created=False, changed=True)


__all__ = ["change_scope"]
