"""memory-list, memory-history, memory-revert, memory-delete by key and memory-delete-many
through an in-process MCP client, on a SQLite file and on PostgreSQL. (The rules under
them: tests/rules/test_browse_service.py, tests/rules/test_revert_delete_service.py; a real stdio
process: tests/mcp/test_stdio_e2e.py, three agents on one file.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

NEW_TOOLS = ("memory-list", "memory-history", "memory-revert", "memory-delete-many")


@pytest.fixture
def server(make_settings: Callable[..., Settings]) -> Callable[..., MCPServer[AppContext]]:
    def make(agent_id: str = "w1", role: str = "worker", **overrides: Any) -> Any:
        settings = make_settings(agent_id=agent_id, role=role, watch=False, **overrides)
        return build_server(settings, FakeEmbedder(), open_app=open_app)

    return make


async def test_the_new_tools_are_listed_with_hints_and_schemas(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(NEW_TOOLS) <= set(tools)
    hints = {name: tools[name].annotations for name in NEW_TOOLS}
    assert [getattr(hints[name], "read_only_hint", None) for name in NEW_TOOLS] == [
        True,
        True,
        False,
        False,
    ]
    assert getattr(hints["memory-revert"], "destructive_hint", None) is False
    assert getattr(hints["memory-delete-many"], "destructive_hint", None) is True
    for name in NEW_TOOLS:
        assert "Example" in (tools[name].description or ""), name
        assert tools[name].output_schema is not None, name


async def test_list_output_schema_names_the_cursor(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools["memory-list"].output_schema or {}
    assert set(schema["properties"]) == {"memories", "next_cursor"}


async def test_memory_list_pages_through_everything(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        for n in range(25):
            await call(client, "memory-store", key=f"fact-{n:02}", value=f"fact number {n}")
        keys: list[str] = []
        cursor = None
        pages = 0
        while True:
            arguments: dict[str, Any] = {"limit": 10}
            if cursor is not None:
                arguments["cursor"] = cursor
            page = await call(client, "memory-list", **arguments)
            keys += [m["key"] for m in page["memories"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert pages == 3
    assert sorted(keys) == [f"fact-{n:02}" for n in range(25)]


async def test_memory_list_cuts_long_values_like_search(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server(search_value_chars=100)) as client:
        await call(client, "memory-store", key="long", value="x" * 500)
        page = await call(client, "memory-list")
    listed = page["memories"][0]
    assert (len(listed["value"]), listed["truncated"], listed["full_length"]) == (100, True, 500)


async def test_memory_list_filters_by_tag_and_time(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        await call(client, "memory-store", key="a", value="v", tags=["build"])
        await call(client, "memory-store", key="b", value="v")
        tagged = await call(client, "memory-list", tags=["build"], since="1h")
        future = await call(client, "memory-list", since="2100-01-01")
    assert [m["key"] for m in tagged["memories"]] == ["a"]
    assert future["memories"] == []


async def test_memory_list_never_shows_another_agents_private_memory(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w2")) as w2:
        await call(w2, "memory-store", key="w2-private", value="mine alone")
        await call(w2, "memory-store", key="w2-shared", value="for all", scope="swarm")
    async with Client(server("w1")) as w1:
        seen = await call(w1, "memory-list", agent_id="w2", include_expired=True)
    async with Client(server("lead", "lead")) as lead:
        seen_by_lead = await call(lead, "memory-list", scope="agent", agent_id="w2")
    assert [m["key"] for m in seen["memories"]] == ["w2-shared"]
    assert seen_by_lead["memories"] == []


async def test_memory_list_bad_arguments_name_themselves(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        assert "invalid since" in await call_error(client, "memory-list", since="last week")
        assert "invalid cursor" in await call_error(client, "memory-list", cursor="nope")
        assert "invalid limit" in await call_error(client, "memory-list", limit=1000)
        assert "invalid order" in await call_error(client, "memory-list", order="random")


async def test_memory_history_shows_every_version_and_its_writer(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w1")) as w1, Client(server("lead", "lead")) as lead:
        first = await call(w1, "memory-store", key="rule", value="one", scope="swarm")
        await call(w1, "memory-store", key="rule", value="two", scope="swarm")
        await call(lead, "memory-store", key="rule", value="three", scope="swarm")
        history = await call(w1, "memory-history", id=first["id"])
    versions = history["versions"]
    assert [(h["version"], h["value"], h["written_by"]) for h in versions] == [
        (1, "one", "w1"),
        (2, "two", "w1"),
        (3, "three", "lead"),
    ]
    assert [h["current"] for h in versions] == [False, False, True]
    assert all(h["written_at"].endswith("Z") for h in versions)


async def test_memory_history_of_one_version_is_whole(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server(search_value_chars=100)) as client:
        first = await call(client, "memory-store", key="long", value="y" * 300)
        await call(client, "memory-store", key="long", value="short now")
        cut = await call(client, "memory-history", id=first["id"])
        whole = await call(client, "memory-history", id=first["id"], version=1)
        missing = await call_error(client, "memory-history", id=first["id"], version=9)
    assert cut["versions"][0]["truncated"] is True
    assert whole["versions"][0]["value"] == "y" * 300
    assert "versions 1 to 2, not 9" in missing


async def test_memory_history_pages_through_a_long_history(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        first = await call(client, "memory-store", key="status", value="step 1")
        for step in range(2, 6):
            await call(client, "memory-store", key="status", value=f"step {step}")
        newest = await call(client, "memory-history", id=first["id"], limit=2)
        older = await call(
            client, "memory-history", id=first["id"], limit=2, before=newest["earlier"]
        )
        oldest = await call(
            client, "memory-history", id=first["id"], limit=2, before=older["earlier"]
        )
        refused = await call_error(client, "memory-history", id=first["id"], before=1)
    assert [v["value"] for v in newest["versions"]] == ["step 4", "step 5"]
    assert [v["value"] for v in older["versions"]] == ["step 2", "step 3"]
    assert [v["value"] for v in oldest["versions"]] == ["step 1"]
    assert "earlier" not in oldest  # the first version reached: nothing to page back to
    assert "invalid before" in refused


async def test_memory_history_of_a_private_memory_is_not_found_for_others(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w2")) as w2:
        stored = await call(w2, "memory-store", key="diary", value="private")
    async with Client(server("lead", "lead")) as lead:
        error = await call_error(lead, "memory-history", id=stored["id"])
    assert "not found" in error


async def test_memory_revert_restores_and_keeps_the_history(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        first = await call(client, "memory-store", key="db", value="SQLite", tags=["storage"])
        await call(client, "memory-store", key="db", value="Oracle", tags=["mistake"])
        reverted = await call(client, "memory-revert", id=first["id"], version=1)
        got = await call(client, "memory-get", id=first["id"])
        history = await call(client, "memory-history", id=first["id"])
    assert (reverted["version"], reverted["reverted_to"], reverted["changed"]) == (3, 1, True)
    assert (got["value"], got["tags"]) == ("SQLite", ["storage"])
    assert [h["value"] for h in history["versions"]] == ["SQLite", "Oracle", "SQLite"]


async def test_memory_revert_refuses_a_stale_expected_version(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        first = await call(client, "memory-store", key="db", value="SQLite")
        await call(client, "memory-store", key="db", value="Oracle")
        error = await call_error(
            client, "memory-revert", id=first["id"], version=1, expected_version=1
        )
        got = await call(client, "memory-get", id=first["id"])
    assert "current version is 2" in error
    assert got["value"] == "Oracle"


async def test_a_worker_cannot_revert_another_agents_swarm_memory(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w1")) as w1, Client(server("w2")) as w2:
        first = await call(w1, "memory-store", key="rule", value="one", scope="swarm")
        await call(w1, "memory-store", key="rule", value="two", scope="swarm")
        error = await call_error(w2, "memory-revert", id=first["id"], version=1)
        got = await call(w2, "memory-get", id=first["id"])
    assert "only its owner or the lead" in error
    assert got["value"] == "two"


async def test_memory_delete_by_key(server: Callable[..., MCPServer[AppContext]]) -> None:
    async with Client(server()) as client:
        mine = await call(client, "memory-store", key="editor", value="vim")
        shared = await call(client, "memory-store", key="editor", value="vim", scope="swarm")
        deleted = await call(client, "memory-delete", key="editor", scope="swarm")
        still = await call(client, "memory-get", id=mine["id"])
        gone = await call_error(client, "memory-get", id=shared["id"])
    assert deleted == {"deleted": True, "id": shared["id"]}
    assert still["value"] == "vim"
    assert "not found" in gone


async def test_memory_delete_by_key_defaults_to_agent_scope(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        mine = await call(client, "memory-store", key="editor", value="vim")
        deleted = await call(client, "memory-delete", key="editor")
    assert deleted["id"] == mine["id"]


async def test_memory_delete_wants_an_id_or_a_key(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        stored = await call(client, "memory-store", key="editor", value="vim")
        neither = await call_error(client, "memory-delete")
        both = await call_error(client, "memory-delete", id=stored["id"], key="editor")
    assert "give id or key" in neither
    assert "give id or key" in both


async def test_memory_delete_by_key_never_finds_another_agents_private_memory(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w2")) as w2:
        await call(w2, "memory-store", key="editor", value="emacs")
    async with Client(server("lead", "lead")) as lead:
        error = await call_error(lead, "memory-delete", key="editor")
    assert "no agent memory with key 'editor'" in error
    assert "there is" not in error, "no hint of another agent's private memory"


async def test_memory_delete_by_key_names_the_scope_it_is_in(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    """Issue 35: by key on a swarm memory, the default scope (agent) said only "no agent
    memory with key ..."."""
    async with Client(server("w1")) as w1:
        stored = await call(w1, "memory-store", key="oncall", value="Ann", scope="swarm")
        error = await call_error(w1, "memory-delete", key="oncall")
        deleted = await call(w1, "memory-delete", key="oncall", scope="swarm")
    assert "no agent memory with key 'oncall'" in error
    assert f"there is a swarm one (memory {stored['id']}): scope='swarm'" in error
    assert deleted == {"deleted": True, "id": stored["id"]}


async def test_delete_many_dry_run_then_real(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        for n in range(4):
            await call(client, "memory-store", key=f"tmp-{n}", value="scratch", tags=["scratch"])
        await call(client, "memory-store", key="keep", value="important")
        preview = await call(client, "memory-delete-many", tags=["scratch"], dry_run=True)
        listed_before = await call(client, "memory-list")
        done = await call(client, "memory-delete-many", tags=["scratch"])
        listed_after = await call(client, "memory-list")
    assert (preview["dry_run"], preview["deleted"], preview["matched"]) == (True, 0, 4)
    assert len(listed_before["memories"]) == 5
    assert (done["deleted"], done["remaining"]) == (4, 0)
    assert [m["id"] for m in done["memories"]] == [m["id"] for m in preview["memories"]]
    assert [m["key"] for m in listed_after["memories"]] == ["keep"]


async def test_delete_many_respects_its_limit(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        for n in range(5):
            await call(client, "memory-store", key=f"t{n}", value="v", source="task_completion")
        first = await call(client, "memory-delete-many", source="task_completion", limit=3)
        second = await call(client, "memory-delete-many", source="task_completion", limit=3)
    assert (first["deleted"], first["remaining"]) == (3, 2)
    assert (second["deleted"], second["remaining"]) == (2, 0)


async def test_a_worker_bulk_delete_leaves_others_memories(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server("w2")) as w2:
        theirs = await call(w2, "memory-store", key="r", value="v", tags=["old"], scope="swarm")
    async with Client(server("w1")) as w1:
        done = await call(w1, "memory-delete-many", tags=["old"])
        still = await call(w1, "memory-get", id=theirs["id"])
    assert (done["deleted"], done["not_allowed"]) == (0, 1)
    assert still["key"] == "r"


async def test_delete_many_needs_something_to_match(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        error = await call_error(client, "memory-delete-many", dry_run=True)
        bad_age = await call_error(client, "memory-delete-many", older_than="ages")
    assert "give at least one of tags, source and older_than" in error
    assert "invalid tags" not in error  # no argument is to blame: one is missing
    assert "invalid older_than" in bad_age


async def test_delete_many_older_than_an_age(
    server: Callable[..., MCPServer[AppContext]],
) -> None:
    async with Client(server()) as client:
        await call(client, "memory-store", key="fresh", value="v", tags=["t"])
        done = await call(client, "memory-delete-many", older_than="1h")
        left = await call(client, "memory-list")
    assert done["deleted"] == 0
    assert [m["key"] for m in left["memories"]] == ["fresh"]
