"""Moving a memory between scopes (store_memory with `from_scope`, rules/scopes.py): the
owner or the lead moves it, in place — id, history and links kept, a new version; a worker
may put in the swarm only what it may store there; a key taken in the new scope stops it.
In process with a fake embedder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.settings import Settings
from tests.conftest import call, call_error, client_of

pytestmark = pytest.mark.anyio


async def test_a_private_finding_becomes_the_swarms_and_keeps_its_history(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings(agent_id="w1")) as w1:
        first = await call(w1, "store_memory", key="flaky", value="test_x is flaky")
        await call(w1, "store_memory", key="flaky", value="test_x is flaky on CI only")
        other = await call(w1, "store_memory", key="ci", value="CI runs on two cores")
        await call(w1, "memory-link", id=other["id"], to=first["id"], relation="explains")
        moved = await call(w1, "store_memory", key="flaky", scope="swarm", from_scope="agent")
        history = await call(w1, "memory-history", id=first["id"])
        linked = await call(w1, "memory-get", id=first["id"])
        gone = await call_error(w1, "memory-get", key="flaky", scope="agent")
    async with client_of(settings(agent_id="w2")) as w2:
        seen = await call(w2, "memory-get", key="flaky")
    assert (moved["id"], moved["scope"], moved["version"]) == (first["id"], "swarm", 3)
    assert [v["value"] for v in history["versions"]][:2] == [
        "test_x is flaky",
        "test_x is flaky on CI only",
    ]
    assert "no agent memory with key 'flaky'" in gone
    assert (seen["id"], seen["value"]) == (first["id"], "test_x is flaky on CI only")
    assert [link["id"] for link in linked["links"]] == [other["id"]], "its links stay"


async def test_who_may_move_what(settings: Callable[..., Settings]) -> None:
    async with client_of(settings(agent_id="w1")) as w1:
        shared = await call(w1, "store_memory", key="style", value="tabs", scope="swarm")
        await call(w1, "store_memory", key="taken", value="mine")
        await call(w1, "store_memory", key="taken", value="ours", scope="swarm")
        clash = await call_error(w1, "store_memory", key="taken", scope="swarm", from_scope="agent")
        same = await call_error(w1, "store_memory", key="style", scope="swarm", from_scope="swarm")
        with_value = await call_error(
            w1, "store_memory", key="style", value="x", scope="agent", from_scope="swarm"
        )
    async with client_of(settings(agent_id="w2")) as w2:
        refused = await call_error(
            w2, "store_memory", key="style", scope="agent", from_scope="swarm"
        )
    async with client_of(settings(agent_id="boss", role="lead")) as lead:
        demoted = await call(lead, "store_memory", key="style", scope="agent", from_scope="swarm")
    assert "a swarm memory with key 'taken' is stored already" in clash
    assert "invalid from_scope: the memory is in swarm scope already" in same
    assert "invalid value: with from_scope, give key and scope only" in with_value
    assert "only its owner or the lead may update it" in refused
    # The lead moves a swarm memory back to its owner's own scope.
    assert (demoted["id"], demoted["scope"], demoted["agent_id"]) == (shared["id"], "agent", "w1")
