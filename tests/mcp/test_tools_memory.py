"""The five tools end to end through an in-process MCP client: upserts, versions,
history, TTL, the cap and inject-learning. Retrieval quality is judged elsewhere (real model)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    """These tests are about the tools, not the notes folder: no watcher."""
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


TOOLS = {
    "store_memory",
    "memory-search",
    "memory-get",
    "memory-delete",
    "inject-learning",
    "memory-list",
    "memory-history",
    "memory-revert",
    "memory-delete-many",
    "memory-link",
    "memory-related",
    "memory-complete-task",
}


async def test_lists_the_tools_with_annotations(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(
        build_server(make_settings(role="lead"), FakeEmbedder(), open_app=open_app)
    ) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS  # the aliases answer, unlisted (test_tool_names.py)
    search_hints = tools["memory-search"].annotations
    get_hints = tools["memory-get"].annotations
    delete_hints = tools["memory-delete"].annotations
    assert search_hints is not None
    assert search_hints.read_only_hint is True
    assert get_hints is not None
    assert get_hints.read_only_hint is True
    assert delete_hints is not None
    assert delete_hints.destructive_hint is True
    for tool in tools.values():
        assert tool.description
        assert "Example" in tool.description


async def test_upsert_bumps_version_and_keeps_history(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(
        build_server(make_settings(agent_id="a1"), FakeEmbedder(), open_app=open_app)
    ) as client:
        first = await call(client, "store_memory", key="db", value="We use SQLite")
        assert first["version"] == 1
        assert first["created"] is True
        second = await call(client, "store_memory", key="db", value="We use PostgreSQL 16")
        assert second["id"] == first["id"]
        assert second["version"] == 2
        assert second["created"] is False
        same = await call(client, "store_memory", key="db", value="We use PostgreSQL 16")
        assert same["version"] == 2, "identical content must not create a version"
        other_scope = await call(client, "store_memory", key="db", value="x", scope="swarm")
        assert other_scope["id"] != first["id"], "another scope is another memory"
        got = await call(client, "memory-get", id=first["id"])
        assert got["value"] == "We use PostgreSQL 16"
        assert got["version"] == 2

    async with open_app(make_settings(), FakeEmbedder(), background=False) as app:
        history = await app.service.store.history(first["id"])
    assert [h["value"] for h in history] == ["We use SQLite"]


async def test_expected_version_conflict_states_current_version(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await call(client, "store_memory", key="plan", value="v1")
        await call(client, "store_memory", key="plan", value="v2")
        error = await call_error(client, "store_memory", key="plan", value="v3", expected_version=1)
        assert "current version is 2" in error
        ok = await call(client, "store_memory", key="plan", value="v3", expected_version=2)
        assert ok["version"] == 3
        assert "current version is 3" in await call_error(
            client, "store_memory", key="plan", value="v4", expected_version=0
        )
        missing = await call_error(
            client, "store_memory", key="nope", value="v", expected_version=4
        )
        assert "not found" in missing
        created = await call(client, "store_memory", key="new", value="v", expected_version=0)
        assert created["created"] is True
        got = await call(client, "memory-get", id=ok["id"])
        assert got["value"] == "v3"


async def test_ttl_default_by_source_and_explicit(make_settings: Callable[..., Settings]) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        manual = await call(client, "store_memory", key="m", value="forever")
        assert manual["expires_at"] is None
        task = await call(client, "store_memory", key="t", value="done", source="task_completion")
        summary = await call(client, "store_memory", key="s", value="sum", source="session_summary")
        explicit = await call(
            client, "store_memory", key="e", value="soon", expires_at="2099-01-01T00:00:00Z"
        )
    from datetime import datetime

    def days_from_now(iso: str) -> float:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
        return (when - time.time()) / 86400

    assert days_from_now(task["expires_at"]) == pytest.approx(7, abs=0.01)
    assert days_from_now(summary["expires_at"]) == pytest.approx(3, abs=0.01)
    assert explicit["expires_at"] == "2099-01-01T00:00:00Z"


async def test_expired_memories_leave_search_but_not_get(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    async with opened(settings) as app:
        now = [1_000_000.0]  # the service's clock, so a busy machine cannot expire it early
        app.service.clock = lambda: now[0]
        async with Client(build_server(settings, opened=app)) as client:
            short = await call(
                client, "store_memory", key="flash", value="ephemeral kiwi note", ttl_seconds=1
            )
            await call(client, "store_memory", key="stay", value="durable kiwi note")
            found = await call(client, "memory-search", query="kiwi")
            assert {r["key"] for r in found["results"]} == {"flash", "stay"}
            now[0] += 2
            found = await call(client, "memory-search", query="kiwi")
            assert [r["key"] for r in found["results"]] == ["stay"]
            with_expired = await call(client, "memory-search", query="kiwi", include_expired=True)
            assert len(with_expired["results"]) == 2
            got = await call(client, "memory-get", id=short["id"])
            assert got["expired"] is True
            assert got["value"] == "ephemeral kiwi note"


async def test_purge_removes_expired(make_settings: Callable[..., Settings]) -> None:
    from memory_mcp.models import Caller, Role

    settings = make_settings()
    caller = Caller("a1", Role.WORKER, "s1")
    async with open_app(settings, FakeEmbedder(), background=False) as app:
        now = [1_000_000.0]
        app.service.clock = lambda: now[0]
        old = await app.service.store_memory(
            caller, StoreRequest("old", "stale fact", ttl_seconds=10)
        )
        await app.service.store_memory(caller, StoreRequest("new", "fresh fact"))
        now[0] += 11
        assert await app.service.purge_expired() == 1
        assert await app.service.store.get(old.record.id) is None
        assert await app.service.store.count() == 1


async def test_cap_evicts_least_recently_used_but_never_pinned(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(agent_id="capped", max_memories_per_agent=3)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        pinned = await call(client, "store_memory", key="p", value="pinned walrus", pinned=True)
        a = await call(client, "store_memory", key="a", value="alpha walrus")
        b = await call(client, "store_memory", key="b", value="beta walrus")
        await call(client, "memory-get", id=a["id"])  # a is now more recent than b
        c = await call(client, "store_memory", key="c", value="gamma walrus")
        assert c["evicted"] == [b["id"]], "the answer says what was evicted"
        keys = {r["key"] for r in (await call(client, "memory-search", query="walrus"))["results"]}
        assert keys == {"p", "a", "c"}, "b was least recently used"
        assert "archived_at" in await call(client, "memory-get", id=b["id"]), "archived, kept"
        await call(client, "memory-get", id=pinned["id"])
        # Everything else pinned: the write is refused rather than evicting a pinned memory.
        for key in ("a", "c"):
            await call(client, "store_memory", key=key, value=f"{key} pinned", pinned=True)
        error = await call_error(client, "store_memory", key="d", value="one too many")
        assert "cap" in error
        assert "pinned" in error
        total = await call(client, "memory-search", query="pinned walrus", limit=50)
        assert len(total["results"]) == 3


async def test_inject_learning_is_lead_only_swarm_wide_and_idempotent(
    make_settings: Callable[..., Settings],
) -> None:
    worker = build_server(make_settings(agent_id="w1"), FakeEmbedder(), open_app=open_app)
    lead = build_server(
        make_settings(agent_id="boss", role="lead"), FakeEmbedder(), open_app=open_app
    )
    async with Client(worker) as w, Client(lead) as boss:
        refused = await call_error(
            w, "inject-learning", learning="Always rebase", category="best-practice"
        )
        assert "lead" in refused
        first = await call(
            boss,
            "inject-learning",
            learning="Run migrations before the API tests",
            category="mistake-pattern",
            agent_id="w1",
        )
        again = await call(
            boss,
            "inject-learning",
            learning="Run migrations before the API tests",
            category="mistake-pattern",
            agent_id="w1",
        )
        assert again["id"] == first["id"]
        assert again["version"] == 1
        spaced = await call(
            boss,
            "inject-learning",
            learning="Run  migrations before the API tests ",
            category="mistake-pattern",
            agent_id="w1",
        )
        assert spaced["id"] == first["id"], "whitespace does not make a new learning"
        found = await call(w, "memory-search", query="migrations", tags=["mistake-pattern"])
        assert [r["id"] for r in found["results"]] == [first["id"]]
        hit = found["results"][0]
        # The lead owns the learning; the worker it is about is only named.
        assert hit["scope"] == "swarm"
        assert hit["agent_id"] == "boss"
        assert hit["about_agent"] == "w1"
        assert hit["updated_by"] == "boss"
        got = await call(w, "memory-get", id=first["id"])
        assert (got["agent_id"], got["about_agent"]) == ("boss", "w1")
        assert "owner or the lead" in await call_error(w, "memory-delete", id=first["id"])
        assert "invalid key: keys starting with 'learning:' are the lead's" in await call_error(
            w, "store_memory", key=got["key"], value="Migrations are optional", scope="swarm"
        )
        after = await call(w, "memory-get", id=first["id"])
        assert (after["version"], after["value"]) == (got["version"], got["value"])
        bad = await call_error(boss, "inject-learning", learning="x", category="gossip")
        assert "category" in bad
