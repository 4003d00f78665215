"""A match that came from a memory's write-time context says so (issue 35, item 3).

One session stores "PaymentService.refund lives in ..." then "The office coffee machine
is on floor 3."; a search for "refund" returned the coffee memory with matched_by "both",
and nothing said that the word was its predecessor's. Through the MCP tool, with the
real model (the vector arm's part of the label is judged), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, call

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


def by_key(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {hit["key"]: hit for hit in results}


async def test_a_match_by_the_context_is_named_and_its_lender_too(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        payments = await call(
            client,
            "store_memory",
            key="payments",
            value="A refund goes through PaymentService.refund in billing",
        )
        stored = await call(
            client, "store_memory", key="coffee", value="The office coffee machine is on floor 3."
        )
        plain = by_key((await call(client, "memory-search", query="refund"))["results"])
        explained = by_key(
            (await call(client, "memory-search", query="refund", explain=True))["results"]
        )
        coffee = by_key(
            (await call(client, "memory-search", query="coffee", explain=True))["results"]
        )

    # Its own words: keyword and meaning; the memory written after it lends no "refund".
    assert plain["payments"]["matched_by"] == "both"
    assert "context_from" not in explained["payments"]["explain"]
    # The coffee memory holds no "refund": the word is its predecessor's.
    assert plain["coffee"]["matched_by"] == "context+vector"
    lent = explained["coffee"]["explain"]
    assert lent["context_from"] == [{"id": payments["id"], "key": "payments"}]
    assert "only in its context" in lent["why"] and str(payments["id"]) in lent["why"]
    # Searched by its own word it is a plain match again, and the payments memory holds
    # "coffee" only in its context, lent by the memory written just after it.
    assert coffee["coffee"]["matched_by"] == "both"
    assert "context_from" not in coffee["coffee"]["explain"]
    assert coffee["payments"]["matched_by"] == "context+vector"
    after = coffee["payments"]["explain"]["context_from"]
    assert after == [{"id": stored["id"], "key": "coffee"}]


async def test_a_lender_is_named_only_to_who_may_see_it(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    """A swarm memory borrows only swarm memories' words, so whoever sees it sees its
    lenders: a worker of another agent is told which swarm memory lent the word, and a
    private memory written in between lends nothing and is never named."""
    await real_embedder.wait_ready()
    alice = make_settings(watch=False, agent_id="alice", session_id="s1")
    bob = make_settings(watch=False, agent_id="bob", session_id="s2")
    async with Client(build_server(alice, real_embedder, open_app=open_app)) as client:
        policy = await call(
            client,
            "store_memory",
            key="refunds-policy",
            value="Refunds over 500 EUR need a second approver",
            scope="swarm",
        )
        await call(client, "store_memory", key="private", value="My refund of the hotel bill")
        await call(
            client,
            "store_memory",
            key="coffee",
            value="The coffee machine is on floor 3.",
            scope="swarm",
        )
    async with Client(build_server(bob, real_embedder, open_app=open_app)) as client:
        found = by_key(
            (await call(client, "memory-search", query="refund", explain=True))["results"]
        )
    assert "private" not in found
    assert found["coffee"]["matched_by"] == "context+vector"
    assert found["coffee"]["explain"]["context_from"] == [
        {"id": policy["id"], "key": "refunds-policy"}
    ]
