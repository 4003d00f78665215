"""What a completed task leaves behind: one `task_completion` memory that says what was
done, so the next task finds it by searching (memory-complete-task archives the task's
working memories, which searches then skip).

Made without a model: the task's working memories as they were when it was completed, one
line each (key, then the start of the value), oldest first, bounded. A swarm memory of the
task's project, keyed by the task: completing it again (new working memories) rewrites it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memory_mcp.checks.validation import iso
from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import Caller, MemoryRecord, Scope, Source, StoreRequest

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService

log = logging.getLogger(__name__)

KEY_PREFIX = "task-completion:"
TAG = "task-completion"
LINE_CHARS = 200
MAX_LINES = 20
MAX_CHARS = 3_000


def _one_line(text: str, size: int = LINE_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= size else line[: size - 1] + "…"


def completion_request(
    task: str, project: str, working: Sequence[MemoryRecord], completed_by: str, now: float
) -> StoreRequest | None:
    """The memory of `task` completed by `completed_by` at `now`, from its `working`
    memories; None when it had none."""
    if not working:
        return None
    ordered = sorted(working, key=lambda r: (r.created_at, r.id))
    when = (iso(now) or "")[:16].replace("T", " ")
    lines = [
        f"Task {task} completed by {completed_by} ({when} UTC); "
        f"{len(ordered)} working memories, archived:"
    ]
    lines += [f"- {_one_line(r.key, 80)}: {_one_line(r.value)}" for r in ordered[:MAX_LINES]]
    if len(ordered) > MAX_LINES:
        lines.append(f"(+{len(ordered) - MAX_LINES} more)")
    value = "\n".join(lines)
    return StoreRequest(
        key=f"{KEY_PREFIX}{task}",
        value=value if len(value) <= MAX_CHARS else value[: MAX_CHARS - 1] + "…",
        scope=Scope.SWARM,
        tags=[TAG],
        metadata={"task": task, "memories": [r.id for r in ordered]},
        source=Source.TASK_COMPLETION,
        project=project,
    )


async def record_completion(
    service: MemoryService,
    caller: Caller,
    project: str,
    task: str,
    working: Sequence[MemoryRecord],
) -> None:
    """Store the memory of `task`'s completion (completion_request), as `caller`. A
    completion memory of the same task that another agent owns is left as it is: the
    task is completed all the same."""
    request = completion_request(task, project, working, caller.agent_id, service.clock())
    if request is None:
        return
    try:
        await service.store_memory(caller, request)
    except PermissionDeniedError as exc:
        log.info("task %s completed; its completion memory was not rewritten: %s", task, exc)


__all__ = ["completion_request", "record_completion"]
