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

from tests.conftest import call
from tests.test_projects import repository

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
    return {item["key"] for item in result[name]}


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
