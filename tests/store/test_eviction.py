"""The caps (store/eviction.py): `max_memories_per_agent` and `max_entries_per_project`;
past one the least recently used memory is archived — reads count as use, pinned memories
and the lead's learnings never go — the store's answer names it, and history, export and
a new store of it keep and restore it. In process with a fake embedder."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.settings import Settings
from tests.conftest import call, call_error, client_of

pytestmark = pytest.mark.anyio


async def test_the_project_cap_counts_every_agents_memories_of_the_project(
    settings: Callable[..., Settings],
) -> None:
    caps = {"max_entries_per_project": 3, "project": "acme/app"}
    async with client_of(settings(agent_id="w1", **caps)) as w1:
        first = await call(w1, "store_memory", key="w1-a", value="w1 fact a")
        await call(w1, "store_memory", key="w1-b", value="w1 fact b")
        elsewhere = await call(w1, "store_memory", key="w1-x", value="other", project="other")
    async with client_of(settings(agent_id="w2", **caps)) as w2:
        await call(w2, "store_memory", key="w2-a", value="w2 fact a")
        over = await call(w2, "store_memory", key="w2-b", value="w2 fact b")
    assert over["evicted"] == [first["id"]], "the project's least recently used, any owner"
    assert "evicted" not in elsewhere


async def test_the_leads_learnings_are_never_evicted(settings: Callable[..., Settings]) -> None:
    async with client_of(settings(agent_id="boss", role="lead", max_memories_per_agent=2)) as lead:
        learning = await call(
            lead, "inject-learning", learning="Pin the versions", category="best-practice"
        )
        note = await call(lead, "store_memory", key="note", value="a note of the lead")
        newer = await call(lead, "store_memory", key="newer", value="newer", pinned=True)
        full = await call_error(lead, "store_memory", key="third", value="x", pinned=True)
    assert newer["evicted"] == [note["id"]], "the learning is older, yet stays"
    assert learning["id"] not in newer["evicted"]
    assert "pinned or the lead's learnings" in full


async def test_an_evicted_memory_is_kept_and_comes_back_when_stored_again(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings(max_memories_per_agent=2)) as client:
        old = await call(client, "store_memory", key="old", value="first version")
        await call(client, "store_memory", key="old", value="second version")
        await call(client, "store_memory", key="mid", value="middle")
        over = await call(client, "store_memory", key="new", value="newest")
        archived = await call(client, "memory-get", id=old["id"])
        history = await call(client, "memory-history", id=old["id"])
        hidden = await call(client, "memory-list")
        shown = await call(client, "memory-list", include_archived=True)
        back = await call(client, "store_memory", key="old", value="second version")
    assert over["evicted"] == [old["id"]]
    assert "archived_at" in archived
    assert [v["value"] for v in history["versions"]] == ["first version", "second version"]
    assert "old" not in {m["key"] for m in hidden["memories"]}
    assert "old" in {m["key"] for m in shown["memories"]}
    # Stored again: live again (its id and history kept), and the cap archives another.
    assert (back["id"], back["version"]) == (old["id"], 3)
    assert len(back["evicted"]) == 1 and back["evicted"] != [old["id"]]
