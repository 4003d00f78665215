"""The task tier as workers and a lead meet it over real stdio servers in one git work tree
(made by the real `git`), on one SQLite store: a completed task's memories are found with
`include_archived` alone, and `memory-mcp tasks` lists the task ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import call, call_error
from tests.rules.test_projects import repository

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))
ALPHA = "acme/alpha"


class Tree:
    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "store.db")
        self.home = tmp_path / "home"
        self.alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")

    def variables(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "xdg"),
            "MEMORY_MCP_MEMORY_DIR": str(self.home / "notes"),
            "HF_HUB_OFFLINE": "1",
        }

    @asynccontextmanager
    async def server(self, agent: str, *args: str) -> AsyncIterator[Client]:
        argv = ["serve", "--db", self.db, "--agent-id", agent, "--no-watch", *args]
        params = StdioServerParameters(
            command=EXE, args=argv, env=self.variables(), cwd=str(self.alpha)
        )
        async with Client(params, read_timeout_seconds=180) as client:
            yield client

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [EXE, *args, "--db", self.db, "--agent-id", "w1"],
            cwd=self.alpha,
            env=self.variables(),
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return done.stdout


def keys(result: dict[str, Any], name: str) -> set[str]:
    """The keys found, but a completed task's own record (rules/task_completions.py)."""
    return {item["key"] for item in result[name] if not item["key"].startswith("task-completion:")}


async def test_a_completed_tasks_memories_are_found_with_include_archived(
    tmp_path: Path,
) -> None:
    tree = Tree(tmp_path)
    async with tree.server("w1") as w1:
        await call(w1, "memory-store", key="plan", value="Split the migration", task="t1")
        await call(w1, "memory-store", key="rows", value="Batches of ten thousand rows", task="t1")
        await call(w1, "memory-store", key="other", value="Unrelated migration notes")
        await call(w1, "memory-complete-task", task="t1")
        query = {"query": "migration batches rows"}
        found = await call(w1, "memory-search", **query, include_archived=True)
        listed = await call(w1, "memory-list", include_archived=True)
        assert {"plan", "rows"} <= keys(found, "results")
        assert {"plan", "rows", "other"} == keys(listed, "memories")
        archived = [m for m in listed["memories"] if m["key"] == "plan"][0]
        assert archived["task"] == "t1" and archived["archived_at"] is not None
        # Without it, none of them.
        assert keys(await call(w1, "memory-list"), "memories") == {"other"}
    tasks = json.loads(tree.cli("tasks", "--json"))
    assert [(t["task"], t["working"], t["archived"], t["agents"]) for t in tasks] == [
        ("t1", 0, 2, ["w1"])
    ]
    assert "t1\tacme/alpha\t0 working\t2 archived\tw1" in tree.cli("tasks")


async def test_a_task_is_its_agents_not_whoever_writes_in_it(tmp_path: Path) -> None:
    """Items 11, 7 and 14: wA's task cannot be taken over by wA2 storing into it; an
    agent of the task names a second worker, who then updates its progress, also after a
    hand-off; a task with scope agent is refused; storing into a completed task opens it
    again, every memory of it."""
    tree = Tree(tmp_path)
    async with (
        tree.server("wa") as wa,
        tree.server("wa2") as wa2,
        tree.server("w2") as w2,
        tree.server("lead", "--role", "lead") as lead,
    ):
        await call(wa, "memory-store", key="plan", value="Split the migration", task="T1")
        await call(wa, "memory-store", key="progress", value="step 1 of 4", task="T1")
        # wA2 may read T1 but not write in it, so it cannot hand it into its own task.
        assert keys(await call(wa2, "memory-list", task="T1"), "memories") >= {"plan"}
        error = await call_error(wa2, "memory-store", key="mine", value="x", task="T1")
        assert "task 'T1' of project 'acme/alpha' is agent 'wa''s" in error
        await call(wa2, "memory-store", key="own", value="my own task", task="wa2-own")
        error = await call_error(wa2, "memory-complete-task", task="T1", handoff_to="wa2-own")
        assert "you are not one of its agents" in error
        # Nor can wA hand its task into wA2's.
        error = await call_error(wa, "memory-complete-task", task="T1", handoff_to="wa2-own")
        assert "task 'wa2-own'" in error
        assert (await call(wa, "memory-get", id=(await _id(wa, "T1", "plan"))))["task"] == "T1"

        # A task's memories are swarm; another scope asked for is refused, not changed.
        error = await call_error(wa, "memory-store", key="n", value="x", task="T1", scope="agent")
        assert "invalid scope" in error and "swarm" in error

        # wA names w2: w2 updates the progress wA wrote.
        await call(wa, "memory-store", key="plan", value="Split it", task="T1", task_agents=["w2"])
        updated = await call(w2, "memory-store", key="progress", value="step 2 of 4", task="T1")
        assert (updated["version"], updated["task"]) == (2, "T1")
        # After a hand-off to T2 the agents carry over: w2 goes on.
        done = await call(wa, "memory-complete-task", task="T1", handoff_to="T2")
        assert done["handed_off"] == 2
        again = await call(w2, "memory-store", key="progress", value="step 3 of 4", task="T2")
        assert again["version"] == 3

        # Completed, then stored into: the task is open again, every memory of it.
        await call(lead, "memory-complete-task", task="T2")
        assert keys(await call(w2, "memory-list", task="T2"), "memories") == set()
        await call(w2, "memory-store", key="progress", value="step 4 of 4", task="T2")
        assert {"plan", "progress"} <= keys(await call(w2, "memory-list", task="T2"), "memories")

        # An unknown task is not "yours to complete": it is not there.
        error = await call_error(wa, "memory-complete-task", task="no-such-task")
        assert "no task 'no-such-task'" in error


async def _id(client: Client, task: str, key: str) -> int:
    listed = await call(client, "memory-list", task=task)
    return int(next(m["id"] for m in listed["memories"] if m["key"] == key))
