"""The entry the seeds describe (RFC-0015's `memory.get(agent_id, key)`, a JSON value, batch
upserts, promotion to the swarm, caps with LRU eviction), each over a real
`memory-mcp serve` on stdio, the way an agent's client runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import spawned
from tests.mcp.test_stdio_search_write import wait_for_the_model

pytestmark = pytest.mark.anyio


async def test_get_by_key(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        mine = await call(client, "store_memory", key="deploy-day", value="Tuesdays")
        read = await call(client, "memory-get", key="deploy-day")
        shared = await call(
            client, "store_memory", key="deploy-day", value="Tuesdays, team-wide", scope="swarm"
        )
        several = await call_error(client, "memory-get", key="deploy-day")
        picked = await call(client, "memory-get", key="deploy-day", scope="swarm")
    assert (read["id"], read["value"]) == (mine["id"], "Tuesdays")
    assert f"memory {mine['id']}" in several and f"memory {shared['id']}" in several
    assert "give scope to pick one" in several
    assert (picked["id"], picked["value"]) == (shared["id"], "Tuesdays, team-wide")


async def test_json_values_round_trip_and_are_found_by_their_words(tmp_path: Path) -> None:
    service = {"owner": "Annika", "checks": ["flake8", "mypy"], "port": 8080, "live": True}
    steps = ["compile the wheel", {"then": "upload to the artifactory"}]
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        stored = await call(client, "store_memory", key="billing-service", value=service)
        listed = await call(client, "store_memory", key="release-steps", value=steps)
        text = await call(client, "store_memory", key="quoted", value='{"owner": "Bo"}')
        by_id = await call(client, "memory-get", id=stored["id"])
        by_key = await call(client, "memory-get", key="release-steps")
        quoted = await call(client, "memory-get", id=text["id"])
        owner = await call(client, "memory-search", query="Annika", limit=3)
        upload = await call(client, "memory-search", query="artifactory", limit=3)
    assert by_id["value"] == service
    assert (by_key["id"], by_key["value"]) == (listed["id"], steps)
    assert quoted["value"] == '{"owner": "Bo"}', "a string that reads as JSON stays a string"
    assert owner["results"][0]["id"] == stored["id"]
    assert owner["results"][0]["value"] == service
    assert upload["results"][0]["value"] == steps


async def test_a_batch_of_50_is_stored_whole_or_not_at_all(tmp_path: Path) -> None:
    batch = [
        {"key": f"fact-{i:02}", "value": f"Fact {i}: the pelican count at pier {i} is {i * 3}"}
        for i in range(50)
    ]
    bad = [*batch[:30], {"key": "fact-bad", "value": "   "}, *batch[30:49]]
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        await wait_for_the_model(client)  # the batch's texts are embedded with it
        refused = await call_error(client, "store_memory", memories=bad)
        before = await call(client, "memory-list", limit=100)
        answer = await call(client, "store_memory", memories=batch)
        after = await call(client, "memory-list", limit=100)
        found = await call(client, "memory-search", query="pelican pier 17", limit=1)
    assert "invalid memories[30].value: must not be empty" in refused
    assert before["memories"] == [], "one bad item: nothing stored"
    stored = answer["stored"]
    assert [m["key"] for m in stored] == [m["key"] for m in batch]
    assert all(m["created"] and m["similar_checked"] for m in stored)
    assert len({m["id"] for m in stored}) == 50
    assert len(after["memories"]) == 50
    assert found["results"][0]["key"] == "fact-17"


async def test_lru_eviction_spares_pins_and_counts_reads(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1", "--max-memories-per-agent", "3") as client:
        pinned = await call(client, "store_memory", key="p", value="pinned otter", pinned=True)
        a = await call(client, "store_memory", key="a", value="alpha otter")
        b = await call(client, "store_memory", key="b", value="beta otter")
        await call(client, "memory-get", id=a["id"])  # a read: a is now used after b
        c = await call(client, "store_memory", key="c", value="gamma otter")
        d = await call(client, "store_memory", key="d", value="delta otter")
        found = await call(client, "memory-search", query="otter", limit=10)
        archived = await call(client, "memory-get", id=b["id"])
    assert c["evicted"] == [b["id"]], "the least recently used, though a is older"
    assert d["evicted"] == [a["id"]], "then a; never the pinned one, older than both"
    assert {hit["key"] for hit in found["results"]} == {"p", "c", "d"}
    assert pinned["id"] not in c["evicted"] + d["evicted"]
    assert archived["archived_at"], "evicted means archived: still readable by id"


async def test_a_private_finding_is_promoted_to_the_swarm(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as w1:
        found = await call(w1, "store_memory", key="rate-limit", value="The API allows 5 rps")
        promoted = await call(
            w1, "store_memory", key="rate-limit", scope="swarm", from_scope="agent"
        )
        history = await call(w1, "memory-history", id=found["id"])
    async with spawned(tmp_path, "--agent-id", "w2") as w2:
        seen = await call(w2, "memory-get", key="rate-limit")
        hits = await call(w2, "memory-search", query="API rps", limit=3)
    assert (promoted["id"], promoted["scope"], promoted["version"]) == (found["id"], "swarm", 2)
    assert [v["version"] for v in history["versions"]] == [1, 2]
    assert (seen["id"], seen["scope"], seen["agent_id"]) == (found["id"], "swarm", "w1")
    assert hits["results"][0]["id"] == found["id"]
