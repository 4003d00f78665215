"""Arguments refused by name: an argument a tool does not take is named, with what was
probably meant and what the tool takes (the SDK dropped it silently), every missing
required argument is named, and nothing is stored. Descriptions reach the client
without the docstrings' source indentation."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error

pytestmark = pytest.mark.anyio

STORE_TAKES = (
    "memory-store takes: key (required), value (required), scope, tags, metadata, "
    "ttl_seconds, expires_at, source, confidence, pinned, expected_version, replace, "
    "project, task, supersedes, kind"
)
CASES: list[tuple[str, dict[str, object], str]] = [
    (
        "memory-store",
        {"key": "x", "text": "We use Neovim"},
        "unknown argument 'text' (did you mean 'value'?); missing required argument 'value'. "
        + STORE_TAKES,
    ),
    (
        "memory-store",
        {"key": "x", "value": "v", "agent_id": "someone-else"},
        "unknown argument 'agent_id' (Who you are comes from the server (its --agent-id, or "
        "your token), never from an argument.). " + STORE_TAKES,
    ),
    ("memory-store", {}, "missing required arguments 'key', 'value'. " + STORE_TAKES),
    (
        "memory-get",
        {"key": "x"},
        "unknown argument 'key' (did you mean 'id'? It takes a memory's id; to find a memory "
        "by its key, use memory-search.); missing required argument 'id'. "
        "memory-get takes: id (required), as_of",
    ),
    (
        "memory-search",
        {"q": "editor", "top_k": 3},
        "unknown argument 'q' (did you mean 'query'?); unknown argument 'top_k' (did you "
        "mean 'limit'?); missing required argument 'query'. memory-search takes: query "
        "(required), limit, scope, tags, source, include_expired, since, until, min_score, "
        "explain, expand, project, task, include_archived, include_superseded, as_of",
    ),
    (
        "memory-list",
        {"tgas": ["build"]},
        "unknown argument 'tgas' (did you mean 'tags'?). memory-list takes: scope, tags, "
        "source, agent_id, since, until, order, cursor, limit, include_expired, project, task, "
        "include_archived, include_superseded, as_of",
    ),
]


async def test_unknown_and_missing_arguments_are_named(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        for tool, arguments, expected in CASES:
            error = await call_error(client, tool, **arguments)
            assert error == f"Error executing tool {tool}: {expected}", error
        listed = await call(client, "memory-list")
    assert listed["memories"] == []  # nothing was stored by a refused call


async def test_delete_many_without_a_filter_blames_no_argument(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        error = await call_error(client, "memory-delete-many")
    assert error == (
        "Error executing tool memory-delete-many: invalid arguments: give at least one "
        "of tags, source and older_than (they combine): which memories to delete"
    )


async def test_descriptions_carry_no_source_indentation(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(
        build_server(make_settings(role="lead"), FakeEmbedder(), open_app=open_app)
    ) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 11
    for tool in tools:
        text = tool.description or ""
        assert "\n" in text or len(text) < 200, tool.name  # a real docstring
        indented = [line for line in text.splitlines() if line.startswith(" ")]
        assert indented == [], (tool.name, indented[:2])
