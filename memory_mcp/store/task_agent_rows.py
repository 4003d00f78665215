"""The `task_agents` table: the agents of each task of a project (rules/task_agents.py
decides who they are and what they may do; this module only reads and writes rows)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, insert, select

from memory_mcp.store.engine import Engines
from memory_mcp.store.memories_table import M
from memory_mcp.store.schema import TaskAgentRow

T = TaskAgentRow


class TaskAgentRows:
    def __init__(self, engines: Engines) -> None:
        self._engines = engines

    async def agents(self, project: str, task: str) -> set[str]:
        """The named agents of `task` in `project`; a task from before they were named
        (none are): the owners of its memories."""
        return await self._engines.read(_agents, project, task)

    async def name(
        self, project: str, task: str, agents: Iterable[str], named_by: str, now: float
    ) -> set[str]:
        """Add `agents` to the task's (those from before included, see `agents`): all of
        them afterwards."""
        return await self._engines.run_write(
            _name, project, task, sorted(set(agents)), named_by, now
        )

    async def carry_over(
        self, project: str, task: str, to: str, named_by: str, now: float
    ) -> set[str]:
        """A hand-off: the agents of `task` become agents of `to` too (all of `to`'s)."""
        return await self._engines.run_write(_carry_over, project, task, to, named_by, now)


def _agents(conn: Connection, project: str, task: str) -> set[str]:
    named = conn.scalars(select(T.agent_id).where(T.project == project, T.task == task)).all()
    if named:
        return set(named)
    owners = conn.scalars(
        select(M.agent_id).where(M.project == project, M.task == task).distinct()
    ).all()
    return set(owners)


def _name(
    conn: Connection, project: str, task: str, agents: list[str], named_by: str, now: float
) -> set[str]:
    have = _agents(conn, project, task)
    for agent in sorted(have | set(agents)):
        found = conn.scalar(
            select(T.agent_id).where(T.project == project, T.task == task, T.agent_id == agent)
        )
        if found is None:
            by = named_by if agent in agents else agent
            conn.execute(
                insert(T).values(
                    project=project, task=task, agent_id=agent, named_by=by, named_at=now
                )
            )
    return have | set(agents)


def _carry_over(
    conn: Connection, project: str, task: str, to: str, named_by: str, now: float
) -> set[str]:
    return _name(conn, project, to, sorted(_agents(conn, project, task)), named_by, now)


__all__ = ["TaskAgentRows"]
