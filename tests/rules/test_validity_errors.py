"""Bad input to what facts that change added (rules/validity.py) is a tool error naming
the argument, and nothing is stored half-way: a correction of a memory that cannot be
corrected stores nothing. Through the tools on a real SQLite file; the embedder is a fake
(named so): the answers are the point, not meaning."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error

pytestmark = pytest.mark.anyio


async def test_a_correction_that_cannot_be_made_stores_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(watch=False)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        old = await call(client, "memory-store", key="port", value="8080")
        missing = await call_error(
            client, "memory-store", key="new-1", value="9090", supersedes=9999
        )
        itself = await call_error(
            client, "memory-store", key="port", value="9090", supersedes=old["id"]
        )
        new = await call(client, "memory-store", key="new-2", value="9090", supersedes=old["id"])
        again = await call_error(
            client, "memory-store", key="new-3", value="7070", supersedes=old["id"]
        )
        listed = await call(client, "memory-list", include_superseded=True)
    async with Client(
        build_server(make_settings(watch=False, agent_id="bob"), FakeEmbedder(), open_app=open_app)
    ) as bob:
        private = await call_error(
            bob, "memory-store", key="mine", value="6060", supersedes=new["id"]
        )
        bobs = await call(bob, "memory-list")

    assert "supersedes" in missing and "9999" in missing
    assert "supersedes" in itself and "same key" in itself
    assert "supersedes" in again and f"memory {new['id']}" in again
    assert "supersedes" in private  # another agent's private memory: not one it can see
    keys = sorted(memory["key"] for memory in listed["memories"])
    assert keys == ["new-2", "port"]  # new-1, new-3 and a second version of port: none
    assert bobs["memories"] == []


async def test_a_time_that_is_no_time_is_named(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings(watch=False)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        stored = await call(client, "memory-store", key="k", value="v")
        search = await call_error(client, "memory-search", query="v", as_of="soonish")
        listing = await call_error(client, "memory-list", as_of="soonish")
        before = await call_error(client, "memory-get", id=stored["id"], as_of="2001-01-01")

    assert "as_of" in search and "as_of" in listing
    assert "as_of" in before and "did not hold yet" in before
