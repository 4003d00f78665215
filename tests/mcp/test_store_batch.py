"""store_memory with `memories` (rules/batch.py, mcp/store_batch.py): several memories in
one call, one transaction — all stored or none — each answered with its id, created and
similar; a bad item is named by its place. In process with a fake embedder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.settings import Settings
from tests.conftest import call, call_error, client_of

pytestmark = pytest.mark.anyio


async def test_each_memory_is_answered_in_order(settings: Callable[..., Settings]) -> None:
    async with client_of(settings()) as client:
        first = await call(client, "store_memory", key="a", value="alpha fact")
        answer = await call(
            client,
            "store_memory",
            memories=[
                {"key": "a", "value": "alpha fact, corrected"},
                {"key": "b", "value": {"beta": ["x"]}, "tags": ["greek"], "scope": "swarm"},
                {"key": "c", "value": "gamma", "pinned": True, "ttl_seconds": 3600},
            ],
        )
        b = await call(client, "memory-get", key="b")
    stored = answer["stored"]
    assert set(answer) == {"stored"}
    assert [(m["key"], m["created"], m["version"]) for m in stored] == [
        ("a", False, 2),
        ("b", True, 1),
        ("c", True, 1),
    ]
    assert stored[0]["id"] == first["id"]
    assert all("similar" in m and "similar_checked" in m for m in stored)
    assert (b["value"], b["tags"], b["scope"]) == ({"beta": ["x"]}, ["greek"], "swarm")


async def test_one_bad_item_stores_nothing(settings: Callable[..., Settings]) -> None:
    good = [{"key": f"k{i}", "value": f"fact {i}"} for i in range(5)]
    async with client_of(settings()) as client:
        bad_scope = await call_error(
            client, "store_memory", memories=[*good, {"key": "x", "value": "v", "scope": "all"}]
        )
        unknown = await call_error(
            client, "store_memory", memories=[*good, {"key": "x", "value": "v", "colour": 1}]
        )
        twice = await call_error(client, "store_memory", memories=[*good, good[1]])
        empty = await call_error(client, "store_memory", memories=[])
        mixed = await call_error(client, "store_memory", key="k", memories=good)
        too_many = await call_error(
            client,
            "store_memory",
            memories=[{"key": f"m{i}", "value": "v"} for i in range(101)],
        )
        listed = await call(client, "memory-list")
    assert "invalid memories[5].scope" in bad_scope
    assert "invalid memories[5].colour: is not an argument of store_memory" in unknown
    assert "invalid memories[5].key: memories[1] has the same key 'k1'" in twice
    assert "invalid memories: give 1 to 100 memories, got 0" in empty
    assert "invalid key: with memories, give each memory's arguments inside it" in mixed
    assert "got 101" in too_many
    assert listed["memories"] == [], "nothing of any of them was stored"


async def test_a_refusal_by_the_store_rolls_the_batch_back(
    settings: Callable[..., Settings],
) -> None:
    """The ownership check runs on the row under the write lock: the items written before
    the refused one in the same transaction are undone."""
    async with client_of(settings(agent_id="w1")) as w1:
        await call(w1, "store_memory", key="shared", value="w1's", scope="swarm")
    async with client_of(settings(agent_id="w2")) as w2:
        refused = await call_error(
            w2,
            "store_memory",
            memories=[
                {"key": "mine-1", "value": "one"},
                {"key": "shared", "value": "w2's", "scope": "swarm"},
            ],
        )
        mine = await call(w2, "memory-list", scope="agent")
        shared = await call(w2, "memory-get", key="shared")
    assert "memories[1]" in refused and "agent 'w1'" in refused
    assert mine["memories"] == []
    assert shared["value"] == "w1's"


async def test_a_single_store_answers_as_before(settings: Callable[..., Settings]) -> None:
    async with client_of(settings()) as client:
        answer = await call(client, "store_memory", key="k", value="v")
        missing = await call_error(client, "store_memory", key="k")
    assert "stored" not in answer
    assert {"id", "key", "scope", "version", "created", "similar"} <= set(answer)
    assert "invalid value: is required" in missing
