"""Tool names: the specified five listed under exactly those names, the earlier release's
names still answering as aliases (listed only with legacy_tool_names), and the lead-only
tool offered to the lead alone — per process over stdio (in process here), per request
over real HTTP (mcp/tool_names.py, mcp/sdk_patches.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.mcp.tool_names import ALIASES, LEAD_ONLY
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error
from tests.http.team_server import TRANSPORTS, running, token_add

pytestmark = pytest.mark.anyio

SPECIFIED = {"store_memory", "memory-search", "memory-get", "memory-delete", "inject-learning"}


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


async def tool_list(settings: Settings) -> dict[str, object]:
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        return {tool.name: tool for tool in (await client.list_tools()).tools}


async def test_the_specified_names_are_listed(make_settings: Callable[..., Settings]) -> None:
    """The two odd ones are the specified names; every other tool is `memory-<verb>`."""
    tools = await tool_list(make_settings(role="lead"))
    assert set(tools) >= SPECIFIED
    assert all(name.startswith("memory-") for name in set(tools) - SPECIFIED)


async def test_aliases_are_not_listed_by_default(
    make_settings: Callable[..., Settings],
) -> None:
    """Listed, each alias costs every session its tool's whole description again."""
    for role in ("worker", "lead"):
        tools = await tool_list(make_settings(role=role))
        assert set(tools) & set(ALIASES) == set(), role


async def test_with_the_flag_aliases_are_listed_with_the_same_arguments(
    make_settings: Callable[..., Settings],
) -> None:
    tools = await tool_list(make_settings(role="lead", legacy_tool_names=True))
    for alias, name in ALIASES.items():
        old, new = tools[alias], tools[name]
        assert old.description.startswith(f"Alias of `{name}`")  # type: ignore[attr-defined]
        assert old.input_schema == new.input_schema  # type: ignore[attr-defined]
        assert old.output_schema == new.output_schema  # type: ignore[attr-defined]


async def test_the_earlier_store_name_writes_the_same_memory(
    make_settings: Callable[..., Settings],
) -> None:
    """Unlisted by default, the earlier names still answer (a client configured with them)."""
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        old = await call(client, "memory-store", key="k", value="first")
        new = await call(client, "store_memory", key="k", value="second")
    assert (new["id"], new["version"]) == (old["id"], 2)


async def test_the_earlier_learning_name_still_works_for_the_lead(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(
        build_server(make_settings(role="lead"), FakeEmbedder(), open_app=open_app)
    ) as client:
        old = await call(
            client, "memory-inject-learning", learning="Pin versions", category="preference"
        )
        new = await call(client, "inject-learning", learning="Pin versions", category="preference")
    assert new["id"] == old["id"]


async def test_a_worker_is_not_offered_the_lead_only_tool(
    make_settings: Callable[..., Settings],
) -> None:
    tools = await tool_list(make_settings(role="worker"))
    assert set(tools) & LEAD_ONLY == set()


async def test_the_lead_is_offered_it(make_settings: Callable[..., Settings]) -> None:
    tools = await tool_list(make_settings(role="lead", legacy_tool_names=True))
    assert set(tools) >= LEAD_ONLY


async def test_a_worker_calling_it_anyway_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(
        build_server(make_settings(role="worker"), FakeEmbedder(), open_app=open_app)
    ) as client:
        error = await call_error(client, "inject-learning", learning="x", category="preference")
    assert "inject-learning is for the lead agent" in error


async def names_per_token(server: object, tokens: dict[str, str]) -> dict[str, set[str]]:
    seen = {}
    for agent, token in tokens.items():
        async with server.client(token) as client:  # type: ignore[attr-defined]
            seen[agent] = {tool.name for tool in (await client.list_tools()).tools}
    return seen


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_over_http_each_token_sees_its_own_list(tmp_path: Path, transport: str) -> None:
    """One server process, two agents: the list follows the request's token (the earlier
    names listed too, so that both lead-only names are seen)."""
    db = tmp_path / "team.db"
    tokens = {"boss": token_add(db, "boss", "lead"), "w1": token_add(db, "w1", "worker")}
    with running(tmp_path, transport, db, "--legacy-tool-names") as server:
        seen = anyio.run(names_per_token, server, tokens)
    assert seen["boss"] & LEAD_ONLY == LEAD_ONLY
    assert seen["w1"] & LEAD_ONLY == set()
    assert seen["boss"] - LEAD_ONLY == seen["w1"]
