"""An update changes what it is given and keeps the rest (issue 35, item 1).

`memory-store {"key":"k","value":"v2 fixed typo"}` over a memory stored with tags,
metadata, pinned, confidence and source reset all of them and its expiry: the typo fix
unpinned the memory and took it out of tag filters. Now every write path keeps what it
was not given: memory-store (also the lead's update of a worker's swarm memory), an
import line over a stored memory, a revert, a note re-indexed, the knowledge-graph
profile (tests/mcp/test_graph_writes.py). A field is emptied only when the call says so
(`tags: []`, `metadata: {}`) and the whole memory rewritten only with `replace: true`.
Through the MCP tools in-process, the FAKE embedder (about what is stored, not meaning)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app import root as app_root
from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

FULL: dict[str, Any] = {
    "tags": ["build"],
    "metadata": {"ticket": "ABC-1"},
    "pinned": True,
    "confidence": 0.8,
    "source": "task_completion",  # 7 days by default, and so is the kind's (tool_result)
    "kind": "tool_result",
}
KEPT = ("tags", "metadata", "pinned", "confidence", "source", "expires_at", "kind")


@asynccontextmanager
async def agents(make_settings: Callable[..., Settings]) -> AsyncIterator[dict[str, Client]]:
    """A worker and the lead on one store."""

    def server(agent: str, role: str) -> Client:
        settings = make_settings(agent_id=agent, role=role, watch=False)
        return Client(build_server(settings, FakeEmbedder(), open_app=open_app))

    async with server("w1", "worker") as w1, server("lead", "lead") as lead:
        yield {"w1": w1, "lead": lead}


def fields(memory: dict[str, Any]) -> dict[str, Any]:
    return {name: memory.get(name) for name in KEPT}  # kind is left out when not said


async def test_a_value_only_update_keeps_every_other_field(
    make_settings: Callable[..., Settings],
) -> None:
    """The issue's own steps."""
    async with agents(make_settings) as by:
        stored = await call(by["w1"], "memory-store", key="k", value="v1", **FULL)
        before = await call(by["w1"], "memory-get", id=stored["id"])
        await call(by["w1"], "memory-store", key="k", value="v2 fixed typo")
        after = await call(by["w1"], "memory-get", id=stored["id"])
        tagged = await call(by["w1"], "memory-list", tags=["build"])
    assert before["expires_at"] is not None, "task_completion: 7 days"
    assert after["value"] == "v2 fixed typo" and after["version"] == 2
    assert fields(after) == fields(before)
    assert [m["key"] for m in tagged["memories"]] == ["k"]


# Each field given alone in an update, and the value it then has (None: as sent).
ALONE: list[tuple[dict[str, Any], str, Any]] = [
    ({"tags": ["deploy", "ops"]}, "tags", ["deploy", "ops"]),
    ({"metadata": {"ticket": "XYZ-2"}}, "metadata", {"ticket": "XYZ-2"}),
    ({"pinned": False}, "pinned", False),
    ({"confidence": 0.3}, "confidence", 0.3),
    ({"source": "session_summary"}, "source", "session_summary"),
    ({"expires_at": "2099-01-01T00:00:00Z"}, "expires_at", "2099-01-01T00:00:00Z"),
    ({"kind": "fact"}, "kind", "fact"),
    ({"tags": []}, "tags", []),
    ({"metadata": {}}, "metadata", {}),
]


@pytest.mark.parametrize(("given", "name", "expected"), ALONE)
async def test_an_update_changes_the_field_it_gives_and_only_that(
    make_settings: Callable[..., Settings], given: dict[str, Any], name: str, expected: Any
) -> None:
    async with agents(make_settings) as by:
        stored = await call(by["w1"], "memory-store", key="k", value="v1", **FULL)
        before = fields(await call(by["w1"], "memory-get", id=stored["id"]))
        await call(by["w1"], "memory-store", key="k", value="v1", **given)
        after = fields(await call(by["w1"], "memory-get", id=stored["id"]))
    assert after[name] == expected
    assert {k: v for k, v in after.items() if k != name} == {
        k: v for k, v in before.items() if k != name
    }


async def test_null_is_not_given_and_replace_rewrites_the_whole_memory(
    make_settings: Callable[..., Settings],
) -> None:
    """Clients that send null for every argument they did not fill keep the fields;
    `replace: true` gives a memory only what the call says (defaults for the rest)."""
    async with agents(make_settings) as by:
        stored = await call(by["w1"], "memory-store", key="k", value="v1", **FULL)
        before = fields(await call(by["w1"], "memory-get", id=stored["id"]))
        nulls = dict.fromkeys(("tags", "metadata", "pinned", "confidence", "source"))
        await call(by["w1"], "memory-store", key="k", value="v2", **nulls)
        kept = fields(await call(by["w1"], "memory-get", id=stored["id"]))
        await call(by["w1"], "memory-store", key="k", value="v3", tags=["new"], replace=True)
        replaced = await call(by["w1"], "memory-get", id=stored["id"])
    assert kept == before
    assert fields(replaced) == {
        "tags": ["new"],
        "metadata": {},
        "pinned": False,
        "confidence": None,
        "source": "manual",
        "expires_at": None,
        "kind": None,
    }
    assert replaced["version"] == 3


async def test_the_lead_updating_a_workers_swarm_memory_keeps_its_fields(
    make_settings: Callable[..., Settings],
) -> None:
    async with agents(make_settings) as by:
        stored = await call(
            by["w1"], "memory-store", key="oncall", value="Ann", scope="swarm", **FULL
        )
        before = await call(by["lead"], "memory-get", id=stored["id"])
        await call(by["lead"], "memory-store", key="oncall", value="Bo", scope="swarm")
        after = await call(by["w1"], "memory-get", id=stored["id"])
    assert (after["value"], after["agent_id"], after["updated_by"]) == ("Bo", "w1", "lead")
    assert fields(after) == fields(before)


def test_an_import_line_over_a_stored_memory_keeps_what_it_leaves_out(
    make_settings: Callable[..., Settings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-written line (key, value, one tag) updates and keeps the rest; a line as
    `export` writes it is the whole memory and restores it exactly."""
    monkeypatch.setattr(app_root, "embedder_from", lambda _settings: FakeEmbedder())
    settings = make_settings(agent_id="w1", watch=False)

    async def tool(name: str, **arguments: Any) -> dict[str, Any]:
        async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
            return await call(client, name, **arguments)

    stored = anyio.run(lambda: tool("memory-store", key="k", value="v1", **FULL))
    before = anyio.run(lambda: tool("memory-get", id=stored["id"]))
    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"key": "k", "value": "v2", "tags": ["ops"]}) + "\n")
    db = ["--db", str(settings.db), "--agent-id", "w1", "--data-dir", str(settings.data_dir)]
    assert main(["import", str(partial), *db]) == 0
    after = anyio.run(lambda: tool("memory-get", id=stored["id"]))
    assert after["value"] == "v2" and after["tags"] == ["ops"]
    assert {k: v for k, v in fields(after).items() if k != "tags"} == {
        k: v for k, v in fields(before).items() if k != "tags"
    }

    anyio.run(lambda: tool("memory-store", key="k", value="v3", tags=[], pinned=False))
    exported = tmp_path / "export.jsonl"
    assert main(["export", "-o", str(exported), *db]) == 0
    line = json.loads(exported.read_text())
    whole = tmp_path / "whole.jsonl"
    whole.write_text(json.dumps({**line, "tags": ["build"], "pinned": True}) + "\n")
    assert main(["import", str(whole), *db]) == 0
    restored = anyio.run(lambda: tool("memory-get", id=stored["id"]))
    assert restored["tags"] == ["build"] and restored["pinned"] is True
    assert restored["value"] == "v3"


async def test_a_revert_keeps_what_was_set_since(
    make_settings: Callable[..., Settings],
) -> None:
    """A revert writes an old version's value, tags, metadata and source, and keeps
    the memory's pinning, confidence and expiry as they are now."""
    async with agents(make_settings) as by:
        stored = await call(by["w1"], "memory-store", key="k", value="v1", tags=["a"])
        await call(by["w1"], "memory-store", key="k", value="v2", tags=["b"])
        await call(by["w1"], "memory-store", key="k", value="v2", pinned=True, confidence=0.9)
        await call(by["w1"], "memory-revert", id=stored["id"], version=1)
        after = await call(by["w1"], "memory-get", id=stored["id"])
    assert (after["value"], after["tags"], after["version"]) == ("v1", ["a"], 4)
    assert (after["pinned"], after["confidence"]) == (True, 0.9)


async def test_a_learning_injected_again_keeps_who_it_is_about_and_its_pin(
    make_settings: Callable[..., Settings],
) -> None:
    """The learning's own fields (text, category tags, metadata) are given on every
    inject; the agent it is about is given only when named, and a pin the lead added
    stays."""
    lesson = {"learning": "Run migrations before the API tests", "category": "mistake-pattern"}
    async with agents(make_settings) as by:
        first = await call(by["lead"], "memory-inject-learning", **lesson, agent_id="w1")
        key = first["key"]
        await call(
            by["lead"],
            "memory-store",
            key=key,
            value=lesson["learning"],
            scope="swarm",
            pinned=True,
        )
        await call(by["lead"], "memory-inject-learning", **lesson)
        after = await call(by["w1"], "memory-get", id=first["id"])
    assert (after["about_agent"], after["pinned"]) == ("w1", True)


async def test_a_kind_is_stored_shown_exported_and_a_bad_one_refused_by_name(
    make_settings: Callable[..., Settings],
) -> None:
    """A memory's kind (models.KINDS) is the writer's word for what it is: kept as given,
    shown by get/list/search, and a value that is not a short identifier is refused with
    the argument named, nothing stored."""
    async with agents(make_settings) as by:
        stored = await call(
            by["w1"], "memory-store", key="editor", value="Uses vim", kind="preference"
        )
        got = await call(by["w1"], "memory-get", id=stored["id"])
        listed = await call(by["w1"], "memory-list")
        error = await call_error(by["w1"], "memory-store", key="bad", value="x", kind="Not A Kind")
        plain = await call(by["w1"], "memory-store", key="plain", value="no kind given")
        plain_got = await call(by["w1"], "memory-get", id=plain["id"])
        keys = [m["key"] for m in (await call(by["w1"], "memory-list"))["memories"]]
    assert got["kind"] == "preference"
    assert [m.get("kind") for m in listed["memories"]] == ["preference"]
    assert "kind" in error and "identifier" in error
    assert "bad" not in keys
    assert "kind" not in plain_got, "left out when not said"
