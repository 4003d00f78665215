"""Links never reveal a memory its reader may not see, and only who may update a memory
may change its links (permissions.decide, Change.LINK).

Three agents on one store (workers w1 and w2, a lead), each with private and swarm
memories, linked across the visibility line: w1's swarm memory links to w1's private
one, the lead's swarm memory to the lead's private one, w1's private memory to the
lead's swarm memory. Then each agent reads through every path that shows links
(memory-get, memory-related at every depth, memory-history, memory-search with expand,
the knowledge-graph tools, `memory-mcp export --to memory-json`) and none may show an id
or key of a memory it cannot see."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app import root as app_module
from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

ROLES = {"w1": "worker", "w2": "worker", "lead": "lead"}
# key -> (owner, scope); every value holds WORD, so one search reaches all of them.
WORD = "quokka"
MEMORIES = {
    "w1-private": ("w1", "agent"),
    "w1-session": ("w1", "session"),
    "w1-shared": ("w1", "swarm"),
    "lead-shared": ("lead", "swarm"),
    "lead-private": ("lead", "agent"),
    "w2-private": ("w2", "agent"),
}
# (who links, from key, to key, relation)
LINKS = [
    ("w1", "w1-shared", "w1-private", "details_in"),
    ("w1", "w1-shared", "w1-session", "noted_in"),
    ("w1", "w1-private", "lead-shared", "about"),
    ("lead", "lead-shared", "lead-private", "details_in"),
    ("lead", "lead-shared", "w1-shared", "see_also"),
    ("w2", "w2-private", "lead-shared", "about"),
]


def may_see(agent: str, key: str) -> bool:
    owner, scope = MEMORIES[key]
    return scope == "swarm" or owner == agent


@asynccontextmanager
async def clients(make_settings: Callable[..., Settings]) -> AsyncIterator[dict[str, Client]]:
    async with AsyncExitStack() as stack:
        yield {
            agent: await stack.enter_async_context(
                Client(
                    build_server(
                        make_settings(agent_id=agent, role=role, session_id="s1", watch=False),
                        FakeEmbedder(),
                        open_app=open_app,
                    )
                )
            )
            for agent, role in ROLES.items()
        }


async def seed(by: dict[str, Client]) -> dict[str, int]:
    ids = {}
    for key, (owner, scope) in MEMORIES.items():
        result = await call(by[owner], "memory-store", key=key, value=f"{WORD} {key}", scope=scope)
        ids[key] = result["id"]
    for agent, source, target, relation in LINKS:
        await call(by[agent], "memory-link", id=ids[source], to=ids[target], relation=relation)
    return ids


def hidden_from(agent: str, ids: dict[str, int]) -> dict[str, int]:
    return {key: memory_id for key, memory_id in ids.items() if not may_see(agent, key)}


def ids_in(value: Any) -> set[int]:
    """Every memory id a result names: the `id`, `to` and `via` fields at any depth."""
    found: set[int] = set()
    if isinstance(value, dict):
        for name, item in value.items():
            if name in ("id", "to", "via") and isinstance(item, int):
                found.add(item)
            else:
                found |= ids_in(item)
    elif isinstance(value, list):
        for item in value:
            found |= ids_in(item)
    return found


def assert_hides(agent: str, ids: dict[str, int], what: str, result: Any) -> None:
    hidden = hidden_from(agent, ids)
    text = json.dumps(result)
    leaked_keys = [key for key in hidden if key in text]
    leaked_ids = ids_in(result) & set(hidden.values())
    assert not leaked_keys and not leaked_ids, f"{agent}: {what} shows {leaked_keys} {leaked_ids}"


async def test_no_read_path_shows_a_link_to_a_memory_its_reader_cannot_see(
    make_settings: Callable[..., Settings],
) -> None:
    async with clients(make_settings) as by:
        ids = await seed(by)
        for agent, client in by.items():
            visible = [key for key in MEMORIES if may_see(agent, key)]
            for key in visible:
                memory_id = ids[key]
                got = await call(client, "memory-get", id=memory_id)
                assert_hides(agent, ids, f"memory-get {key}", got)
                for depth in (1, 2, 3):
                    related = await call(client, "memory-related", id=memory_id, depth=depth)
                    assert_hides(agent, ids, f"memory-related {key} depth {depth}", related)
                history = await call(client, "memory-history", id=memory_id)
                assert_hides(agent, ids, f"memory-history {key}", history)
            found = await call(
                client, "memory-search", query=WORD, limit=50, expand=True, explain=True
            )
            assert_hides(agent, ids, "memory-search expand", found)
            # and the links it may see are all there (the test can fail the other way)
            shown = {
                (link["relation"], link["id"])
                for key in visible
                for link in (await call(client, "memory-get", id=ids[key])).get("links", [])
                if link["direction"] == "out"
            }
            expected = {
                (relation, ids[target])
                for _, source, target, relation in LINKS
                if may_see(agent, source) and may_see(agent, target)
            }
            assert shown == expected, agent


async def test_a_worker_links_from_its_own_memories_only(
    make_settings: Callable[..., Settings],
) -> None:
    async with clients(make_settings) as by:
        ids = await seed(by)
        w2, lead = by["w2"], by["lead"]
        refused = await call_error(
            w2, "memory-link", id=ids["lead-shared"], to=ids["w1-shared"], relation="x"
        )
        unlink = await call_error(
            w2,
            "memory-link",
            id=ids["lead-shared"],
            to=ids["w1-shared"],
            relation="see_also",
            remove=True,
        )
        hidden_target = await call_error(
            w2, "memory-link", id=ids["w2-private"], to=ids["w1-private"], relation="x"
        )
        hidden_source = await call_error(
            lead, "memory-link", id=ids["w1-private"], to=ids["lead-shared"], relation="x"
        )
        by_lead = await call(
            lead, "memory-link", id=ids["w1-shared"], to=ids["lead-shared"], relation="reviewed_by"
        )
        still = await call(by["w1"], "memory-get", id=ids["lead-shared"])
    assert "only its owner or the lead may link or unlink it" in refused
    assert "only its owner or the lead may link or unlink it" in unlink
    assert f"memory {ids['w1-private']} not found" in hidden_target
    assert f"memory {ids['w1-private']} not found" in hidden_source
    assert by_lead["changed"] is True  # a lead may change another agent's swarm memory
    assert ("see_also", ids["w1-shared"]) in {(x["relation"], x["id"]) for x in still["links"]}


async def test_a_deleted_private_target_stays_hidden_in_link_history(
    make_settings: Callable[..., Settings],
) -> None:
    """The link row outlives its target; who may see it is decided from what the link
    kept of the target (its scope and owner)."""
    async with clients(make_settings) as by:
        ids = await seed(by)
        await call(by["w1"], "memory-delete", id=ids["w1-private"])
        for agent in ("w2", "lead"):
            history = await call(by[agent], "memory-history", id=ids["w1-shared"])
            assert ids["w1-private"] not in ids_in(history), agent
        own = await call(by["w1"], "memory-history", id=ids["w1-shared"])
    removed = [x for x in own["links"] if x["id"] == ids["w1-private"]]
    assert removed and removed[0]["current"] is False


GRAPH_READS: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}),
    ("search_nodes", {"query": WORD}),
    ("open_nodes", {"names": list(MEMORIES)}),
]


async def test_the_graph_tools_and_export_show_no_hidden_entity_or_relation(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The same memories as entities (`entity:<key>`, tagged entity) in every scope, the
    same links as relations; each agent reads the graph of each scope through the
    knowledge-graph profile and through `export --to memory-json`."""
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    async with clients(make_settings) as by:
        ids = {}
        for key, (owner, scope) in MEMORIES.items():
            stored = await call(
                by[owner],
                "memory-store",
                key=f"entity:{key}",
                value=f"{key}\n- {WORD}",
                scope=scope,
                tags=["entity"],
                metadata={"entity": key, "entity_type": ""},
            )
            ids[key] = stored["id"]
        for agent, source, target, relation in LINKS:
            await call(by[agent], "memory-link", id=ids[source], to=ids[target], relation=relation)
    seen: dict[tuple[str, str], set[str]] = {}
    for agent, role in ROLES.items():
        for scope in ("agent", "session", "swarm"):
            settings = make_settings(
                agent_id=agent,
                role=role,
                session_id="s1",
                watch=False,
                profile="knowledge-graph",
                graph_scope=scope,
            )
            async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as graph:
                for tool, arguments in GRAPH_READS:
                    result = await call(graph, tool, **arguments)
                    assert_hides(agent, ids, f"{tool} in {scope} scope", result)
                    if tool == "read_graph":
                        seen[agent, scope] = {e["name"] for e in result["entities"]}
            db = str(settings.db)
            argv = ["export", "--to", "memory-json", "--db", db, "--agent-id", agent]
            argv += ["--session-id", "s1", "--scope", scope]
            assert await anyio.to_thread.run_sync(main, argv) == 0
            assert_hides(agent, ids, f"export of {scope} scope", capsys.readouterr().out)
    # and each sees its own (the test can fail the other way)
    assert seen["w1", "agent"] == {"w1-private"}
    assert seen["w1", "session"] == {"w1-session"}
    assert seen["w2", "swarm"] == seen["lead", "swarm"] == {"w1-shared", "lead-shared"}
