"""What the tool list costs every session: the characters a model reads for each tool
(name + description + inputSchema as JSON), the measure of issue 38. The worker's default
list cost 20,385 before it was cut (aliases unlisted, descriptions that say when to use a
tool, details in docs/TOOLS.md, schemas without pydantic's titles and nulls); the
reference knowledge-graph server's nine tools cost 3,966."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.mcp.tool_names import LEAD_ONLY
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder

pytestmark = pytest.mark.anyio

# 8,000 until issue 49 added what facts that change need: memory-store's `supersedes`,
# `include_superseded` and `as_of` on memory-search and memory-list, `as_of` on memory-get.
WORKER_BUDGET = 8_500


async def costs(settings: Settings) -> dict[str, int]:
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        tools = (await client.list_tools()).tools
    return {
        tool.name: len(tool.name) + len(tool.description or "") + len(json.dumps(tool.input_schema))
        for tool in tools
    }


async def test_the_worker_list_stays_within_its_budget(
    make_settings: Callable[..., Settings],
) -> None:
    worker = await costs(make_settings(role="worker", watch=False))
    assert sum(worker.values()) <= WORKER_BUDGET, worker


async def test_the_lead_pays_only_for_the_learning_tool_more(
    make_settings: Callable[..., Settings],
) -> None:
    worker = await costs(make_settings(role="worker", watch=False))
    lead = await costs(make_settings(role="lead", watch=False))
    assert set(lead) - set(worker) == {"memory-inject-learning"} == set(lead) & LEAD_ONLY
    assert {name: lead[name] for name in worker} == worker


async def test_schemas_carry_no_pydantic_noise(make_settings: Callable[..., Settings]) -> None:
    """No titles (the argument's name again) and no `null` offered beside a type: an
    optional argument is left out to say none."""
    async with Client(
        build_server(make_settings(role="lead", watch=False), FakeEmbedder(), open_app=open_app)
    ) as client:
        tools = (await client.list_tools()).tools
    for tool in tools:
        text = json.dumps(tool.input_schema)
        assert '"title"' not in text, tool.name
        assert '{"type": "null"}' not in text, tool.name
