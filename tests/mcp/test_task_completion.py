"""Completing a task leaves one `task_completion` memory that says what was done (its
working memories, one line each, no model), found by the next task's search; handing a
task off leaves none."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call

pytestmark = pytest.mark.anyio


async def test_completing_a_task_records_what_was_done(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await call(
            client,
            "memory-store",
            key="plan",
            value="Migrate billing to the Quixotic ledger.",
            task="t1",
        )
        await call(
            client,
            "memory-store",
            key="result",
            value="Exporter converted; 14 tests pass.",
            task="t1",
        )
        await call(
            client, "memory-store", key="plan", value="Draft the Lisbon audit memo.", task="t2"
        )
        done = await call(client, "memory-complete-task", task="t2", handoff_to="t3")
        assert done["handed_off"] == 1
        done = await call(client, "memory-complete-task", task="t1")
        assert done["archived"] == 2

        found = await call(client, "memory-search", query="Quixotic ledger exporter", limit=5)
        keys = [hit["key"] for hit in found["results"]]
        assert keys[0] == "task-completion:t1", keys
        (completion,) = [hit for hit in found["results"] if hit["key"] == "task-completion:t1"]
        memory = await call(client, "memory-get", id=completion["id"])
        assert memory["source"] == "task_completion"
        assert memory["scope"] == "swarm"
        assert memory.get("task") is None, "a memory of the project, not of the task"
        value = memory["value"]
        assert value.startswith("Task t1 completed by ")
        assert "- plan: Migrate billing to the Quixotic ledger." in value
        assert "- result: Exporter converted; 14 tests pass." in value
        assert "Lisbon" not in value
        listed = await call(client, "memory-list", tags=["task-completion"])
        assert [m["key"] for m in listed["memories"]] == ["task-completion:t1"], "none for t2"
