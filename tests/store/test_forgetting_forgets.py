"""Forgetting forgets (store/write_context.py): a memory that stops holding — expired,
archived with its task, or superseded by a correction — lends its words to no neighbour's
write-time context from that moment, as a deleted one never did. (An archived one too:
store/writes.py's archive; a task's memories lend only to the same task's, archived with
them, so no search shows the difference.) Before, an expired
codename found its session's neighbours `context+vector` until the hourly purge. Through
the MCP tools on a real SQLite file, with the real model (the words are the point; the
vector arm finds something for any query, so what is judged is `matched_by`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import call

pytestmark = pytest.mark.anyio

NEIGHBOURS = (
    "The sprint review moved to Thursday afternoon.",
    "Alice owns the billing migration this quarter.",
    "The staging database is refreshed every night.",
    "Code review needs two approvals before merging.",
)


def by_words(results: dict[str, Any]) -> list[tuple[str, str]]:
    """The hits found by words: their own, or their context's."""
    return [
        (hit["key"], hit["matched_by"])
        for hit in results["results"]
        if hit["matched_by"] not in ("vector", "link")
    ]


async def _session(client: Client, secret: dict[str, Any]) -> None:
    """Neighbours written around the secret memory, in the same session."""
    for number, text in enumerate(NEIGHBOURS[:2]):
        await call(client, "memory-store", key=f"before-{number}", value=text)
    await call(client, "memory-store", **secret)
    for number, text in enumerate(NEIGHBOURS[2:]):
        await call(client, "memory-store", key=f"after-{number}", value=text)


async def test_an_expired_memory_lends_no_words_at_once(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        await _session(
            client,
            {"key": "codename", "value": "The project codename is Quetzalcoatl.", "ttl_seconds": 1},
        )
        alive = await call(client, "memory-search", query="Quetzalcoatl")
        codename = next(hit for hit in alive["results"] if hit["key"] == "codename")
        deadline = time.monotonic() + 30
        while not (await call(client, "memory-get", id=codename["id"]))["expired"]:
            assert time.monotonic() < deadline, "the memory did not expire"
            await anyio.sleep(0.1)
        gone = await call(client, "memory-search", query="Quetzalcoatl")
        still_stored = await call(client, "memory-get", id=codename["id"])

    # While it held, its neighbours borrowed the word (the rule, unchanged).
    assert ("codename", "both") in by_words(alive)
    assert any(matched == "context+vector" for _, matched in by_words(alive))
    # Expired, not purged yet: the word matches nothing by words or context.
    assert still_stored["expired"] is True
    assert by_words(gone) == []


async def test_a_superseded_memory_lends_no_words(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        await _session(
            client, {"key": "port", "value": "The gateway listens on port Kilimanjaro-8443."}
        )
        held = await call(client, "memory-search", query="Kilimanjaro")
        port = held["results"][0]
        await call(
            client,
            "memory-store",
            key="port-now",
            value="The gateway listens on port 9443 now.",
            supersedes=port["id"],
        )
        superseded = await call(client, "memory-search", query="Kilimanjaro")

    assert port["key"] == "port"
    assert any(matched == "context+vector" for _, matched in by_words(held))
    assert by_words(superseded) == []
