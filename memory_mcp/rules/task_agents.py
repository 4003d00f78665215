"""Who a task is: its agents. A task's working memories are read by every agent that names
the task (swarm scope), but written, updated and completed only by the task's agents and a
lead: writing into a task does not make it yours.

- The agent that writes first in a task is its first agent. A task from before agents were
  named has the owners of its memories as its agents.
- An agent of the task, or a lead, names others (`store_memory` with `task_agents`): they
  may then write in it and update any of its working memories (shared progress).
- Another agent's store into the task is refused, naming the task's agents; so is its
  `memory-complete-task` (rules/permissions.py's `check_task`, asked with the answer here).
- A hand-off (`memory-complete-task` with `handoff_to`) moves the memories into a task the
  caller is an agent of (or a new one); the agents of the old task become agents of the new.
- Storing into a completed task opens it again: its archived memories are working memories
  again, all of them, not only the one stored.

The agents are kept in the store's `task_agents` table (store/task_agent_rows.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from memory_mcp.models import Caller
from memory_mcp.rules import permissions

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

MAX_NAMED = 50


def clean_agents(agents: object) -> list[str]:
    """`task_agents` as a caller gave it: agent ids."""
    if not isinstance(agents, list) or len(agents) > MAX_NAMED:
        raise InvalidInputError(
            "task_agents", f"must be a list of at most {MAX_NAMED} agent ids, e.g. ['w2']"
        )
    return [v.clean_key(agent, "task_agents") for agent in agents]


def _named(agents: set[str]) -> str:
    return ", ".join(repr(agent) for agent in sorted(agents)[:10])


async def before_store(
    store: MemoryStore,
    caller: Caller,
    project: str,
    task: str,
    naming: Sequence[str],
    now: float,
) -> None:
    """Before `caller` stores into `task` of `project`: refused unless it is an agent of
    the task (the first writer becomes one) or a lead; `naming` (task_agents) adds agents;
    a completed task is opened again."""
    agents = await store.task_agents.agents(project, task)
    if agents and caller.agent_id not in agents and not caller.is_lead:
        raise PermissionDeniedError(
            f"task {task!r} of project {project!r} is agent {_named(agents)}'s: only its "
            "agents and the lead write in it (one of them may name you with task_agents); "
            "read it by naming the task, or store in a task of your own"
        )
    if not agents or naming or (caller.is_lead and caller.agent_id not in agents):
        # The lead writing in it is one of its agents from now on, as a first writer is.
        named = [caller.agent_id, *naming]
        await store.task_agents.name(project, task, named, caller.agent_id, now)
    records = await store.task_records(project, task)
    archived = [r.id for r in records if r.archived_at is not None]
    if archived and all(r.archived_at is not None for r in records):
        await store.reopen(archived)


async def is_agent(store: MemoryStore, caller: Caller, project: str, task: str) -> bool:
    """Whether `caller` is one of the task's agents (may update any of its memories)."""
    return caller.agent_id in await store.task_agents.agents(project, task)


async def check_complete(
    store: MemoryStore, caller: Caller, project: str, task: str, handoff_to: str | None
) -> None:
    """May `caller` complete `task` (archive it, or hand it to `handoff_to`)? An unknown
    task is not found; a worker must be an agent of the task, and of the task it hands
    off to if that one has agents."""
    agents = await store.task_agents.agents(project, task)
    if not agents and not await store.task_records(project, task):
        raise NotFoundError(
            f"no task {task!r} in project {project!r} (`memory-mcp tasks` lists them)"
        )
    permissions.check_task(caller, project, task, caller.agent_id in agents)
    if handoff_to is None:
        return
    theirs = await store.task_agents.agents(project, handoff_to)
    if theirs and caller.agent_id not in theirs and not caller.is_lead:
        raise PermissionDeniedError(
            f"task {handoff_to!r} of project {project!r} is agent {_named(theirs)}'s: hand "
            "off to a task of yours, or a new one"
        )


async def after_handoff(
    store: MemoryStore, caller: Caller, project: str, task: str, to: str, now: float
) -> None:
    """The agents of `task` are agents of `to` too."""
    await store.task_agents.carry_over(project, task, to, caller.agent_id, now)


__all__ = ["after_handoff", "before_store", "check_complete", "clean_agents", "is_agent"]
