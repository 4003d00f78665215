"""The knowledge-graph profile's writes (issue 35, item 10): a call is written whole or not
at all, names are told apart as the reference tells them apart (or refused), and an
update keeps what the graph does not hold. In-process, the FAKE embedder: these are about
what is written, not about meaning (tests/mcp/test_graph_profile.py runs the real
processes beside the reference server)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.models import Scope, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error, opened

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def lead_and_worker(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[Client, Client]]:
    """A lead and a worker on one swarm graph."""

    def server(agent: str, role: str) -> Client:
        settings = make_settings(
            agent_id=agent, role=role, watch=False, profile="knowledge-graph", graph_scope="swarm"
        )
        return Client(build_server(settings, FakeEmbedder(), open_app=open_app))

    async with server("lead", "lead") as lead, server("w1", "worker") as w1:
        await call(
            lead,
            "create_entities",
            entities=[{"name": "Payments", "entityType": "team", "observations": ["owns refunds"]}],
        )
        await call(
            w1,
            "create_entities",
            entities=[
                {"name": "Carol", "entityType": "person", "observations": ["on call"]},
                {"name": "Dan", "entityType": "person", "observations": []},
            ],
        )
        yield lead, w1


# Each write of the worker that mixes its own entities (allowed) with the lead's (refused).
MIXED: dict[str, dict[str, Any]] = {
    "delete_entities": {"entityNames": ["Carol", "Payments"]},
    "add_observations": {
        "observations": [
            {"entityName": "Carol", "contents": ["moved to Lisbon"]},
            {"entityName": "Payments", "contents": ["disbanded"]},
        ]
    },
    "delete_observations": {
        "deletions": [
            {"entityName": "Carol", "observations": ["on call"]},
            {"entityName": "Payments", "observations": ["owns refunds"]},
        ]
    },
    "create_relations": {
        "relations": [
            {"from": "Carol", "to": "Dan", "relationType": "mentors"},
            {"from": "Payments", "to": "Carol", "relationType": "employs"},
        ]
    },
}


async def test_a_call_mixing_allowed_and_refused_items_writes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    """Issue 35: `delete_entities ["Carol","Payments"]` answered with an error after
    deleting Carol."""
    async with lead_and_worker(make_settings) as (lead, w1):
        before = await call(lead, "read_graph")
        for tool, arguments in MIXED.items():
            error = await call_error(w1, tool, **arguments)
            assert "'lead'" in error and "Payments" in error, (tool, error)
            assert await call(lead, "read_graph") == before, f"{tool} wrote part of the call"
        # The lead's relation between two of the worker's... and the worker's own between
        # its entities: a mixed delete_relations is refused whole too.
        await call(
            lead,
            "create_relations",
            relations=[{"from": "Payments", "to": "Carol", "relationType": "employs"}],
        )
        await call(
            w1,
            "create_relations",
            relations=[{"from": "Carol", "to": "Dan", "relationType": "mentors"}],
        )
        linked = await call(lead, "read_graph")
        error = await call_error(
            w1,
            "delete_relations",
            relations=[
                {"from": "Carol", "to": "Dan", "relationType": "mentors"},
                {"from": "Payments", "to": "Carol", "relationType": "employs"},
            ],
        )
        assert "'lead'" in error
        assert await call(lead, "read_graph") == linked
        # The same calls without the refused item go through.
        await call(w1, "delete_entities", entityNames=["Dan"])
        assert [e["name"] for e in (await call(lead, "read_graph"))["entities"]] == [
            "Payments",
            "Carol",
        ]


async def test_a_padded_name_is_refused_and_never_overwrites_the_entity(
    make_settings: Callable[..., Settings],
) -> None:
    """Issue 35: `create_entities` with "Frank " replaced "Frank" and its observations.
    The reference keeps them apart (test_graph_profile.py pins that); a memory key has no
    surrounding spaces, so the padded name is refused and Frank is left as he was."""
    settings = make_settings(watch=False, profile="knowledge-graph")
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        frank = {"name": "Frank", "entityType": "person", "observations": ["likes jazz"]}
        await call(client, "create_entities", entities=[frank])
        error = await call_error(
            client,
            "create_entities",
            entities=[
                {"name": "Gina", "entityType": "person", "observations": []},
                {"name": "Frank ", "entityType": "robot", "observations": ["beeps"]},
            ],
        )
        graph = await call(client, "read_graph")
        lookup = await call(client, "open_nodes", names=["Frank "])
    assert "name" in error and "'Frank '" in error and "spaces" in error
    assert graph["entities"] == [frank], "nothing of the refused call was written"
    assert lookup == {"entities": [], "relations": []}, "names are matched exactly"


async def test_an_entity_update_keeps_what_the_graph_does_not_hold(
    make_settings: Callable[..., Settings],
) -> None:
    """Item 1's rule in the graph profile: adding an observation rewrites the entity's
    value, its type tag and its name in metadata, and keeps a tag, metadata and the pin
    that store_memory gave the same memory."""
    settings = make_settings(watch=False, profile="knowledge-graph")
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await call(
            client,
            "create_entities",
            entities=[{"name": "Frank", "entityType": "person", "observations": ["likes jazz"]}],
        )
    async with opened(settings) as app:
        record = await app.service.by_key(app.caller, "entity:Frank", Scope.AGENT)
        assert record is not None
        await app.service.store_memory(
            app.caller,
            StoreRequest(
                key=record.key,
                value=record.value,
                tags=[*record.tags, "vip"],
                metadata={**record.metadata, "ticket": "ABC-1"},
                pinned=True,
            ),
        )
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await call(
            client,
            "add_observations",
            observations=[{"entityName": "Frank", "contents": ["plays bass"]}],
        )
        graph = await call(client, "read_graph")
    async with opened(settings) as app:
        after = await app.service.by_key(app.caller, "entity:Frank", Scope.AGENT)
    assert graph["entities"][0]["observations"] == ["likes jazz", "plays bass"]
    assert after is not None and after.version == 3
    assert after.tags == ["entity", "person", "vip"]
    assert after.metadata == {"entity": "Frank", "entity_type": "person", "ticket": "ABC-1"}
    assert after.pinned, "the rest of its memory is kept (pinned, expiry...)"
