"""A read by key (memory-get with `key`): the memory a caller may see under a key, in the
scope and project it names or in any it may read. A key can name several memories (an
agent memory and a swarm one, or one in the current project and one in `*`): then the
answer is an error that lists them and says which argument picks one, never a guess."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, NotFoundError
from memory_mcp.models import Caller, MemoryRecord, Scope, Visibility
from memory_mcp.rules.permissions import can_see, readable_projects

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

# More than a few memories under one key the caller can see is already a list to choose
# from; the error names this many.
MAX_LISTED = 10


async def one_by_key(
    store: MemoryStore,
    caller: Caller,
    key: object,
    scope: Scope | None,
    project: str | None,
    now: float,
) -> MemoryRecord:
    """The one memory `caller` may see under `key` (expired ones too, as a read by id),
    within `scope` (None: any) and `project` (a name or `*`: that project only; left
    out: the current project and `*`, as a search). Task working memories and archived
    ones are left out: a task's keys are its own key space (memory-list with `task`)."""
    if not isinstance(key, str):
        raise InvalidInputError("key", "must be a string")
    clean = v.clean_key(key)
    covered = readable_projects(caller, project)  # checks the name and the grant
    vis = Visibility(
        caller=caller,
        scope=scope,
        include_expired=True,
        now=now,
        projects=covered if project is None else frozenset({project.strip()}),
    )
    found = [r for r in await store.keyed(clean, vis, MAX_LISTED + 1) if can_see(caller, r)]
    if not found:
        where = f"{scope.value} " if scope is not None else ""
        raise NotFoundError(f"no {where}memory with key {v.shown(clean, 80)} is visible to you")
    if len(found) == 1:
        return found[0]
    raise InvalidInputError("key", _several(clean, found))


def _several(key: str, found: list[MemoryRecord]) -> str:
    """Which memories share the key, and the argument that tells them apart."""
    listed = ", ".join(
        f"memory {r.id} (scope {r.scope.value}, project {r.project})" for r in found[:MAX_LISTED]
    )
    more = " and more" if len(found) > MAX_LISTED else ""
    pickers = []
    if len({r.scope for r in found}) > 1:
        pickers.append("scope")
    if len({r.project for r in found}) > 1:
        pickers.append("project")
    pick = " and/or ".join(pickers) or "id"
    return (
        f"{v.shown(key, 80)} names {len(found)} memories you can see: {listed}{more}; "
        f"give {pick} to pick one (or read it by id)"
    )


__all__ = ["MAX_LISTED", "one_by_key"]
