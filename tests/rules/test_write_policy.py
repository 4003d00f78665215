"""Write criteria (rules/write_policy.py) through memory-store in process: off by default;
on, the seed's table keeps facts and preferences, refuses intermediate reasoning, failed
tool calls and speculative inferences, and refuses kinds it does not list (default deny),
each refusal naming the rule; `write_kinds` changes the table per kind. The FAKE embedder:
this is about what is stored, not meaning."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error

pytestmark = pytest.mark.anyio


def client(settings: Settings) -> Client:
    return Client(build_server(settings, FakeEmbedder(), open_app=open_app))


async def test_off_by_default_every_kind_is_stored(
    make_settings: Callable[..., Settings],
) -> None:
    async with client(make_settings(watch=False)) as tools:
        for kind in ("intermediate_reasoning", "whatever", None):
            arguments = {"key": f"k-{kind}", "value": "v"} | ({"kind": kind} if kind else {})
            assert (await call(tools, "memory-store", **arguments))["created"]


async def test_on_it_keeps_what_the_table_keeps_and_denies_the_rest(
    make_settings: Callable[..., Settings],
) -> None:
    async with client(make_settings(watch=False, write_policy=True)) as tools:
        stored = await call(tools, "memory-store", key="tz", value="UTC+1", kind="preference")
        refused = await call_error(
            tools, "memory-store", key="r", value="maybe x, then y", kind="intermediate_reasoning"
        )
        unknown = await call_error(tools, "memory-store", key="u", value="v", kind="gossip")
        unsaid = await call_error(tools, "memory-store", key="n", value="v")
        listed = (await call(tools, "memory-list"))["memories"]
    assert stored["created"]
    assert "write_kinds: intermediate_reasoning = false" in refused and "kind" in refused
    assert "'gossip' is not in the write policy" in unknown and "default deny" in unknown
    assert "say what kind of memory" in unsaid
    assert [m["key"] for m in listed] == ["tz"]


async def test_write_kinds_changes_the_table_per_kind(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(
        watch=False, write_policy=True, write_kinds='{"hypothesis": true, "conversation": false}'
    )
    async with client(settings) as tools:
        kept = await call(tools, "memory-store", key="h", value="v", kind="hypothesis")
        refused = await call_error(tools, "memory-store", key="c", value="v", kind="conversation")
    assert kept["created"]
    assert "write_kinds: conversation = false" in refused


def test_write_kinds_are_checked(make_settings: Callable[..., Settings]) -> None:
    for bad in ('{"Bad Kind": true}', '{"note": "yes"}', "[]"):
        with pytest.raises(ValueError, match="write_kinds"):
            make_settings(write_kinds=bad)
