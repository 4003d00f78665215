"""The issue-11 search and store features on a real `memory-mcp serve` over stdio, with the
real embedding model: the tool list a worker gets, the old and new names, `similar` on a
paraphrase, and memory-search's time window and explain."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_mcp.mcp.tool_names import LEAD_ONLY
from tests.conftest import call
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio

MODEL_DEADLINE_SECONDS = 180.0


async def wait_for_the_model(client: Client) -> None:
    """Search until the answer is semantic (the model has loaded), within a deadline."""
    deadline = time.monotonic() + MODEL_DEADLINE_SECONDS
    while not (await call(client, "memory-search", query="warm up"))["semantic"]:
        assert time.monotonic() < deadline, "the embedding model did not load in time"
        await anyio.sleep(0.5)


async def test_search_and_store_features_over_stdio(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        await wait_for_the_model(client)
        first = await call(
            client,
            "memory-store",  # an earlier release's name, still answering
            key="test-command",
            value="Run the test suite with `make test`; it creates the .venv first.",
        )
        second = await call(
            client,
            "store_memory",
            key="how-to-test",
            value="To run the tests use make test, which sets up the virtualenv.",
        )
        recent = await call(
            client, "memory-search", query="how do I run the tests?", since="1h", explain=True
        )
        older = await call(client, "memory-search", query="how do I run the tests?", until="1h")

    assert names & LEAD_ONLY == set()
    assert {"store_memory", "memory-search"} <= names
    assert "memory-store" not in names  # unlisted, yet it answers (above)
    assert [m["id"] for m in second["similar"]] == [first["id"]]
    assert {hit["id"] for hit in recent["results"]} == {first["id"], second["id"]}
    assert all(hit["explain"]["cosine"] is not None for hit in recent["results"])
    assert older["results"] == []
