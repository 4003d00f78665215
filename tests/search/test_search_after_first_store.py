"""A search right after the first store finds that memory by meaning, or says it could
not: a memory stored while the model loads has no vector (memory-store answers
`similar_checked: false`), and the search that follows, once the model is loaded, embeds it
before it looks (semantic/vectors.py, `embed_stored_while_loading`).

Over a real `memory-mcp serve` on a fresh store, as a user meets it; and in this process
with the real model behind a gate that holds it "loading" until the store is done (named a
fake below: the model is real, only its readiness is held), so the store surely comes
first."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from mcp import Client, StdioServerParameters

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.semantic import vectors as vectors_module
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import call, opened
from tests.mcp.test_stdio_e2e import EXE, server_env

pytestmark = pytest.mark.anyio

RULE = "Deploys to production are allowed on Tuesdays and Thursdays only."
QUESTION = "when are we allowed to ship to prod?"  # no word of the rule but "allowed"
OTHER = "The office cat is called Miso and sleeps on the printer."


async def test_a_search_at_once_after_the_first_store_finds_it_by_meaning(
    tmp_path: Path,
) -> None:
    env = {**server_env(tmp_path), "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "120"}
    params = StdioServerParameters(
        command=EXE, args=["serve", "--db", str(tmp_path / "fresh.db"), "--no-watch"], env=env
    )
    async with Client(params, read_timeout_seconds=180) as client:
        await call(client, "memory-store", key="cat", value=OTHER)
        await call(client, "memory-store", key="deploy-days", value=RULE)
        found = await call(client, "memory-search", query=QUESTION.replace("allowed", "let"))
    assert found["semantic"] is True
    keys = [hit["key"] for hit in found["results"]]
    assert keys and keys[0] == "deploy-days", found


class HeldLoading:
    """FAKE readiness around the real model: "loading" until `release()`."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.model_name = model.model_name
        self.released = anyio.Event()

    def is_ready(self) -> bool:
        return self.released.is_set()

    async def wait_ready(self) -> None:
        await self.released.wait()

    def release(self) -> None:
        self.released.set()

    async def embed(self, texts: list[str]) -> np.ndarray:
        return await self.model.embed(texts)


async def test_the_memory_stored_while_the_model_loaded_is_embedded_first(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    held = HeldLoading(real_embedder)
    settings = Settings(
        db=str(tmp_path / "memory.db"),
        data_dir=tmp_path / "data",
        memory_dir=tmp_path / "notes",
        search_model_wait_seconds=0,
    )
    async with opened(settings, held) as app:
        service = app.service
        stored, similar = await service.store_and_check(app.caller, StoreRequest("d", RULE))
        assert not similar.checked  # stored before the model: no vector
        keyword_only = await service.search(app.caller, SearchRequest(query=QUESTION))
        assert keyword_only.semantic is False and keyword_only.notices
        held.release()
        found = await service.search(app.caller, SearchRequest(query="shipping days for prod"))
        assert found.semantic is True
        assert [hit.record.id for hit in found.hits] == [stored.record.id]
        assert found.hits[0].matched_by == "vector"
        assert found.notices == []


async def test_more_than_a_search_embeds_are_named(
    tmp_path: Path, real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors_module, "SEARCH_EMBEDS", 1)
    held = HeldLoading(real_embedder)
    settings = Settings(
        db=str(tmp_path / "memory.db"), data_dir=tmp_path / "data", memory_dir=tmp_path / "n"
    )
    async with opened(settings, held) as app:
        for key, value in (("d", RULE), ("c", OTHER), ("e", "Standups are at ten.")):
            await app.service.store_memory(app.caller, StoreRequest(key, value))
        held.release()
        first = await app.service.search(app.caller, SearchRequest(query=QUESTION))
        assert any("2 memories stored while the embedding model loaded" in n for n in first.notices)
        await app.service.search(app.caller, SearchRequest(query=QUESTION))
        third = await app.service.search(app.caller, SearchRequest(query=QUESTION))
        assert third.notices == []
