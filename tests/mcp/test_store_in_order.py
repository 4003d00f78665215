"""A conversation stored one memory at a time through `store_memory`, one server process per
session as an agent's arrive, gets what the benchmark's import path gets
(bench/locomo.run_conversation): the same results for every question, so the same
recall, because both give each memory the write-time context of its session
(store/write_context.py). Real model, real SQLite file, the tools over MCP."""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import pytest
from mcp import Client

from bench.locomo import load_conversation, recall_at, run_conversation
from bench.settings import BenchSettings
from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.models import Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.store.keyword import query_terms
from tests.conftest import call, opened

pytestmark = pytest.mark.anyio

TINY = Path(__file__).parent.parent / "data" / "locomo_tiny.json"


def settings_for(directory: Path, session: str) -> BenchSettings:
    # The benchmark's settings (none of the user's), the same agent, its own session.
    return BenchSettings(db=str(directory / "memory.db"), data_dir=directory, session_id=session)


async def test_memory_store_in_order_gets_the_import_paths_recall(
    tmp_path: Path, real_embedder: Embedder
) -> None:
    conversation = load_conversation(TINY)
    (tmp_path / "import").mkdir()
    imported = await run_conversation(conversation, real_embedder, tmp_path / "import")

    through_tools = tmp_path / "tools"
    through_tools.mkdir()
    for session, turns in groupby(conversation.turns, key=lambda turn: turn.session):
        server = build_server(
            settings_for(through_tools, session), real_embedder, open_app=open_app
        )
        async with Client(server) as client:
            for turn in turns:
                await call(client, "store_memory", key=turn.key, value=turn.value)

    asker = settings_for(through_tools, "questions")
    async with Client(build_server(asker, real_embedder, open_app=open_app)) as client:
        for expected in imported.results:
            found = await call(client, "memory-search", query=expected.question, limit=10)
            keys = [hit["key"] for hit in found["results"]]
            assert keys == expected.retrieved, expected.question
            for k in (5, 10):
                assert recall_at(expected.evidence, keys, k) == expected.recall[k]

    # And the context is there: D1:2's sailboat is in the words of the three after it in
    # its session (D1:3-D1:5) and of the one before it (D1:1), not in D1:6 nor in the
    # next session's first turn.
    async with opened(asker, real_embedder) as app:
        vis = Visibility(caller=app.caller, now=0.0)
        hits = await app.service.store.keyword_search(
            query_terms("sailboat grandfather"), vis, 20, KEYWORD_COLUMN_WEIGHTS
        )
        records = await app.service.store.fetch_many([memory_id for memory_id, _ in hits])
    assert sorted(records[memory_id].key for memory_id, _ in hits) == [
        "D1:1",
        "D1:2",
        "D1:3",
        "D1:4",
        "D1:5",
    ]
