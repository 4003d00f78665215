"""Where a memory lives: its project, and the task tier — a task's working memories (swarm
scope, a task id), archived or handed to another task when the task is complete, and moves
between projects. Each change is decided by rules/permissions.py (`check_task`, Change.MOVE)
before anything is written; the memories are read through the gate (rules/gate.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller, MemoryRecord, Placement
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target
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
        it holds one of those keys). A worker completes a task it wrote in; a lead any."""
        name, to = task_id(task), task_argument(handoff_to, "handoff_to")
        if to == name:
            raise InvalidInputError("handoff_to", "is the task being completed; name another")
        where = permissions.written_project(caller, project)
        records = await self.gate.store.task_records(where, name)
        wrote_in = any(caller.agent_id in (r.agent_id, r.updated_by) for r in records)
        permissions.check_task(caller, where, name, wrote_in)
        working = [r.id for r in records if r.archived_at is None]
        if to is None:
            await self.gate.store.archive(working, self.gate.clock())
            done = [r for r in records if r.archived_at is None]
            await record_completion(self.memories, caller, where, name, done)
            return Placement(where, archived=working)
        return Placement(
            where, moved=await self.gate.store.place(working, task=to, field="handoff_to")
        )

    async def move_to_project(
        self, caller: Caller, records: Sequence[MemoryRecord], to: str, *, dry_run: bool = False
    ) -> Placement:
        """Move `records` (read by `caller`) to project `to`, all or none, keeping ids,
        versions and links: each decided as a change where it is and where it goes."""
        target = permissions.written_project(caller, to)
        for record in records:
            permissions.check(caller, Target.of(record), Change.MOVE)
            permissions.check(caller, replace(Target.of(record), project=target), Change.MOVE)
        ids = [record.id for record in records if record.project != target]
        moved = ids if dry_run else await self.gate.store.place(ids, project=target, field="to")
        return Placement(target, moved=moved)

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
