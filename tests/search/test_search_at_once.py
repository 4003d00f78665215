"""A client that starts the server and searches at once gets the same answer as one that
waits for the model: the handshake is answered before the store opens (app/background.py),
the first tool call waits for the store, and its search waits for the model (up to
`search_model_wait_seconds`, generous here so a busy machine cannot turn the test into a
race; `bench startup` counts keyword-only answers with the default bound). Real model,
real `memory-mcp serve` processes over stdio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memory_mcp.models import StoreRequest
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import call, opened
from tests.mcp.test_stdio_e2e import EXE, server_env

pytestmark = pytest.mark.anyio

MEMORIES = {
    "pets": "The office cat is called Miso and sleeps on the printer.",
    "deploys": "Releases go out on Thursday afternoons after the smoke tests pass.",
    "database": "Staging runs PostgreSQL 16; production is still on 14 until March.",
    "snack": "Dana keeps a stash of salted liquorice in the second drawer.",
    "printer": "The printer on the third floor jams with recycled paper.",
}
# Sharing no word with the memory it should find first.
QUESTION = "what is the name of our feline?"


async def _search_results(db: Path, tmp_path: Path, wait_for_model: bool) -> dict[str, Any]:
    env = {**server_env(tmp_path), "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "120"}
    params = StdioServerParameters(
        command=EXE, args=["serve", "--db", str(db), "--no-watch"], env=env
    )
    async with Client(params, read_timeout_seconds=180) as client:
        if wait_for_model:
            with anyio.fail_after(180):
                while not (await call(client, "memory-search", query="warm-up"))["semantic"]:
                    await anyio.sleep(0.2)
        return await call(client, "memory-search", query=QUESTION, limit=3)


async def test_a_search_sent_at_once_gets_the_answer_of_one_that_waits(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    db = tmp_path / "memory.db"
    settings = Settings(db=str(db), data_dir=tmp_path / "data", memory_dir=tmp_path / "notes")
    async with opened(settings, real_embedder) as app:
        for key, value in MEMORIES.items():
            await app.service.store_memory(app.caller, StoreRequest(key, value))
        while await app.service.vectors.embed_pending():
            pass
    at_once = await _search_results(db, tmp_path / "first", wait_for_model=False)
    waited = await _search_results(db, tmp_path / "second", wait_for_model=True)
    assert at_once["semantic"] is True
    assert [hit["key"] for hit in at_once["results"]][0] == "pets"
    assert [hit["key"] for hit in at_once["results"]] == [hit["key"] for hit in waited["results"]]
