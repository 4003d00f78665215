"""The five tools the product was specified with, over a real `memory-mcp serve` on stdio:
listed under exactly those names (a worker's four, the lead's five), each answering by that
name with structured content that its listed output schema accepts, and the earlier
release's `memory-store` still answering for clients configured with it
(mcp/tool_names.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client

from tests.conftest import call
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio

WORKER_TOOLS = {"store_memory", "memory-search", "memory-get", "memory-delete"}


async def listed(client: Client) -> dict[str, Any]:
    return {tool.name: tool for tool in (await client.list_tools()).tools}


async def checked(client: Client, tools: dict[str, Any], name: str, **arguments: Any) -> Any:
    """Call `name` and check its answer against the output schema tools/list gave for it."""
    data = await call(client, name, **arguments)
    jsonschema.validate(data, tools[name].output_schema)
    return data


async def test_the_specified_names_are_listed_and_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with spawned(tmp_path, "--agent-id", "w1") as worker:
        tools = await listed(worker)
        assert set(tools) >= WORKER_TOOLS
        assert {"inject-learning", "memory-store", "memory-inject-learning"} & set(tools) == set()
        stored = await checked(
            worker, tools, "store_memory", key="deploy-day", value="Deploys happen on Tuesdays"
        )
        found = await checked(worker, tools, "memory-search", query="Tuesdays deploy")
        assert [hit["id"] for hit in found["results"]] == [stored["id"]]
        read = await checked(worker, tools, "memory-get", id=stored["id"])
        assert read["value"] == "Deploys happen on Tuesdays"
        # A client configured with the earlier name: the same tool, the same memory.
        again = await call(worker, "memory-store", key="deploy-day", value="Deploys: Tuesdays")
        assert (again["id"], again["version"]) == (stored["id"], 2)
        deleted = await checked(worker, tools, "memory-delete", id=stored["id"])
        assert deleted == {"deleted": True, "id": stored["id"]}
    async with spawned(tmp_path, "--agent-id", "lead", "--role", "lead") as lead:
        tools = await listed(lead)
        assert set(tools) >= WORKER_TOOLS | {"inject-learning"}
        assert {"memory-store", "memory-inject-learning"} & set(tools) == set()
        learning = await checked(
            lead,
            tools,
            "inject-learning",
            learning="Run the migrations before the API tests",
            category="best-practice",
        )
        assert learning["scope"] == "swarm"
    # Called by a name it lists, the SDK validates every answer itself (the earlier names
    # were unlisted: "not listed by server, cannot validate any structured content").
    unvalidated = [r.getMessage() for r in caplog.records if "cannot validate" in r.getMessage()]
    assert len(unvalidated) == 1
    assert "memory-store" in unvalidated[0]
