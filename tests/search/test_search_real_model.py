"""Retrieval with the real all-MiniLM-L6-v2: an exact identifier and a meaning-only match."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

NOTES = {
    "deploy": "Deploys go through the blue-green pipeline; never push straight to prod.",
    "incident": "The payment worker crashed with ERR_CONN_42 when Redis restarted.",
    "note-3": "The user's favourite snack is fresh mango slices.",
    "style": "Prefer small pull requests with one concern each.",
    "db": "Staging runs PostgreSQL 16 with pgvector enabled.",
    "editor": "The team edits code in Neovim with the LSP configured.",
}


async def test_finds_exact_identifier_and_meaning_only(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        for key, value in NOTES.items():
            await call(client, "store_memory", key=key, value=value)

        exact = (await call(client, "memory-search", query="ERR_CONN_42", limit=3))["results"]
        assert exact[0]["key"] == "incident"
        assert exact[0]["matched_by"] in ("keyword", "both")

        # No word in common with the memory (nor its key): only the vector arm can find it.
        meaning = await call(
            client, "memory-search", query="which fruit do they enjoy eating?", limit=3
        )
        top = meaning["results"][0]
        assert top["key"] == "note-3"
        assert top["matched_by"] == "vector"
        assert "notices" not in meaning

        database = await call(client, "memory-search", query="which database do we use", limit=2)
        assert database["results"][0]["key"] == "db"


async def test_handshake_and_keyword_search_do_not_wait_for_the_model(
    make_settings: Callable[..., Settings],
) -> None:
    """An embedder that never becomes ready (FAKE): the server still answers initialize,
    stores, and finds by words at once, and says semantic search is warming up."""
    never_ready = FakeEmbedder(ready=False)
    settings = make_settings(watch=False, search_model_wait_seconds=0.2)
    async with Client(build_server(settings, never_ready, open_app=open_app)) as client:
        stored = await call(client, "store_memory", key="k", value="quokka habitat notes")
        found = await call(client, "memory-search", query="quokka")
        assert [r["id"] for r in found["results"]] == [stored["id"]]
        assert found["results"][0]["matched_by"] == "keyword"
        assert "warming up" in found["notices"][0]
        assert found["semantic"] is False


async def test_a_narrow_filter_and_an_unanswerable_search_say_what_they_found(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    """Issue 35: a narrow tag filter returned nothing while the description promised "up to
    `limit`", and other searches listed rows of cosine 0.02. The rule, as memory-search's
    description and TOOLS.md now say: a result shares a word with the query or relates in
    meaning; a search about nothing stored lists its closest memories scored near 0."""
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        for key, value in {
            "coffee": "The office coffee machine is on floor 3.",
            "lunch": "Lunch is served at noon in the cafeteria.",
        }.items():  # first in the session: nothing lends them words
            await call(client, "store_memory", key=key, value=value, tags=["kitchen"])
        for key, value in NOTES.items():
            await call(client, "store_memory", key=key, value=value)
        narrow = await call(
            client, "memory-search", query="blue-green deploys", tags=["kitchen"], explain=True
        )
        far = await call(client, "memory-search", query="quantum chromodynamics on a lattice")
        cut = await call(
            client, "memory-search", query="quantum chromodynamics on a lattice", min_score=0.2
        )
    description = listed["memory-search"].description or ""
    assert "still returns up to `limit`" not in description
    assert "may return fewer or none" in description
    found = narrow["results"]
    assert len(found) < 10 and {hit["key"] for hit in found} <= {"coffee", "lunch"}
    for hit in found:
        parts = hit["explain"]
        assert parts["keyword"] is not None or parts["cosine"] > 0, hit
    assert far["results"] and all(hit["score"] < 0.2 for hit in far["results"])
    assert cut["results"] == []
