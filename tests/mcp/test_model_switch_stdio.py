"""Switching an existing store to the multilingual model (`memory-mcp model use
e5-multilingual`) over real processes: a real `memory-mcp serve` on a real SQLite file
with MiniLM, the real CLI command, then the server again with e5, which embeds the store
again in the background while every search is answered, and then finds English facts
asked in German (MiniLM found half: docs/lab/retrieval-v4.md)."""

from __future__ import annotations

import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from bench.lab.multilingual import FACTS, QUESTIONS
from tests.conftest import call
from tests.mcp.test_stdio_e2e import EXE, server_env
from tests.mcp.test_stdio_search_write import wait_for_the_model

pytestmark = pytest.mark.anyio

EMBED_DEADLINE_SECONDS = 300.0


def environment(tmp_path: Path) -> dict[str, str]:
    return {**server_env(tmp_path), "MEMORY_MCP_CONFIG": str(tmp_path / "config.toml")}


@asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=EXE,
        args=["serve", "--db", str(tmp_path / "shared.db"), "--agent-id", "w1"],
        env=environment(tmp_path),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def found_at_top(client: Client) -> int:
    """How many of the German questions find their English fact first."""
    found = 0
    for i, question in enumerate(QUESTIONS["de"]):
        answer = await call(client, "memory-search", query=question, limit=1)
        found += [hit["key"] for hit in answer["results"]] == [f"en{i}"]
    return found


def models_of(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute("SELECT DISTINCT model FROM embeddings")}


async def test_switching_a_store_to_e5_reembeds_it_while_search_answers(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('# the user\'s own settings\nagent_id = "w1"\n')
    async with serving(tmp_path) as client:
        await wait_for_the_model(client)
        for i, fact in enumerate(FACTS["en"]):
            await call(client, "store_memory", key=f"en{i}", value=fact)
        with_minilm = await found_at_top(client)
    minilm_models = models_of(tmp_path / "shared.db")

    switched = subprocess.run(
        [EXE, "model", "use", "e5-multilingual"],
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert switched.returncode == 0, switched.stderr
    assert (tmp_path / "config.toml").read_text() == (
        '# the user\'s own settings\nagent_id = "w1"\nembedder = "e5-multilingual"\n'
    )

    async with serving(tmp_path) as client:
        # Every search is answered while the store is embedded again (keyword-only for
        # the texts e5 has not embedded yet, never MiniLM's vectors beside e5's).
        deadline = time.monotonic() + EMBED_DEADLINE_SECONDS
        while (with_e5 := await found_at_top(client)) < 9:
            assert time.monotonic() < deadline, f"e5 found {with_e5}/10 in time"
            await anyio.sleep(0.5)

    assert with_minilm <= 6, "MiniLM hardly finds English facts asked in German"
    models = models_of(tmp_path / "shared.db")
    assert len(minilm_models) == 1
    assert minilm_models < models, "the old model's vectors are kept: switching back is free"
    assert any("multilingual-e5" in model for model in models)
