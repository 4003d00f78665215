"""Where a memory lives: its project, and the task tier — a task's working memories (swarm
scope, a task id), archived or handed to another task when the task is complete, and moves
between projects. Each change is decided by rules/permissions.py (`check_task`, Change.MOVE)
before anything is written; the memories are read through the gate (rules/gate.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller, MemoryRecord, Placement
from memory_mcp.rules import permissions, project_moves, task_agents
from memory_mcp.rules.task_completions import record_completion

if TYPE_CHECKING:
    from memory_mcp.rules.gate import Gate
    from memory_mcp.rules.service import MemoryService


class TaskService:
    """`memories`: where a completed task's record is stored, as any memory is."""

    def __init__(self, gate: Gate, memories: MemoryService) -> None:
        self.gate = gate
        self.memories = memories

    async def complete_task(
        self, caller: Caller, task: Any, handoff_to: Any = None, project: str | None = None
    ) -> Placement:
        """Archive the working memories of `task` in `project` (None: the current one, else
        `*`), or move them to task `handoff_to` (all or none: refused, naming the keys, if
        it holds one of those keys). A task's agents complete it; a lead any
        (rules/task_agents.py)."""
        name, to = task_id(task), task_argument(handoff_to, "handoff_to")
        if to == name:
            raise InvalidInputError("handoff_to", "is the task being completed; name another")
        where = permissions.written_project(caller, project)
        store = self.gate.store
        await task_agents.check_complete(store, caller, where, name, to)
        records = await store.task_records(where, name)
        working = [r.id for r in records if r.archived_at is None]
        if to is None:
            await store.archive(working, self.gate.clock())
            done = [r for r in records if r.archived_at is None]
            await record_completion(self.memories, caller, where, name, done)
            return Placement(where, archived=working)
        moved = await store.place(working, task=to, field="handoff_to")
        await task_agents.after_handoff(store, caller, where, name, to, self.gate.clock())
        return Placement(where, moved=moved)

    async def move_to_project(
        self, caller: Caller, records: Sequence[MemoryRecord], to: str, *, dry_run: bool = False
    ) -> Placement:
        """Move `records` (read by `caller`) to project `to`: rules/project_moves.py."""
        return await project_moves.move_to_project(
            self.gate.store, caller, records, to, self.gate.clock, dry_run=dry_run
        )

    async def project_counts(self, caller: Caller) -> dict[str, int]:
        """How many memories `caller` may read in each project (`*` too), by id's rule."""
        return await self.gate.store.project_counts(self.gate.by_id(caller, include_expired=True))


def task_argument(task: Any, field: str = "task") -> str | None:
    """A task filter or target as a caller gave it (None: none), checked."""
    return None if task is None else task_id(task, field)


def task_id(task: Any, field: str = "task") -> str:
    if not isinstance(task, str):
        raise InvalidInputError(field, "must be a task id (text), e.g. 'issue-36'")
    return v.clean_key(task, field)


__all__ = ["TaskService", "task_argument", "task_id"]
