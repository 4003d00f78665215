"""The keyword arm: query terms, and the bound on FTS5's cost in large stores (the bound is
lowered here so that a handful of memories exercises it). FakeEmbedder: only the keyword
arm is judged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import SearchRequest, StoreRequest, Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.keyword import affordable_terms, query_terms
from memory_mcp.store.sqlite import fts5
from memory_mcp.store.sqlite.match import match_any
from memory_mcp.store.write_context import CONTEXT_AFTER
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, FakeEmbedder, opened

pytestmark = BOTH_BACKENDS


def test_query_terms_drop_stopwords_and_keep_identifiers() -> None:
    assert query_terms("What did we decide about the ERR_CONN_42 error?") == [
        "decide",
        "err_conn_42",
        "error",
    ]
    assert query_terms("what is it") == ["what", "is", "it"]  # nothing else left
    assert match_any(["a.b", "c"]) == '"a.b" OR "c"'


def test_affordable_terms_keep_the_rarest_within_budget() -> None:
    matches = {"common": 900, "rare": 3, "mid": 100, "absent": 0}
    assert affordable_terms(matches, 1_000) == ["rare", "mid"]
    assert affordable_terms(matches, 2_000) == ["rare", "mid", "common"]
    assert affordable_terms({"common": 900}, 500) == []


@SQLITE_ONLY  # FTS5's cost budget
@pytest.mark.anyio
async def test_a_large_store_ranks_by_its_rarer_terms(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "zanzibar" is in the target's own words and in the context of the CONTEXT_AFTER
    # notes written before it (store/write_context.py): 5 matches, within the budget.
    monkeypatch.setattr(fts5, "MATCH_BUDGET", 1 + CONTEXT_AFTER)
    async with opened(make_settings(), FakeEmbedder()) as app:
        for i in range(6):
            await app.service.store_memory(
                app.caller, StoreRequest(f"note-{i}", f"shared word, note {i}")
            )
        await app.service.store_memory(
            app.caller, StoreRequest("target", "shared word and zanzibar")
        )
        vis = Visibility(caller=app.caller, now=app.service.clock())
        store = app.service.store

        hits = await store.keyword_search(["shared", "zanzibar"], vis, 10, KEYWORD_COLUMN_WEIGHTS)
        keys = [await key(app, i) for i, _ in hits]  # "shared" is over budget
        assert keys[0] == "target"
        assert set(keys[1:]) == {f"note-{i}" for i in range(6 - CONTEXT_AFTER, 6)}

        # Every term over budget: the newest matching memories, all scored alike.
        hits = await store.keyword_search(["shared"], vis, 3, KEYWORD_COLUMN_WEIGHTS)
        assert [await key(app, i) for i, _ in hits] == ["target", "note-5", "note-4"]
        assert {score for _, score in hits} == {0.0}

        result = await app.service.search(app.caller, SearchRequest("shared", limit=3))
        assert len(result.hits) == 3


@SQLITE_ONLY  # FTS5's cost budget
@pytest.mark.anyio
async def test_term_counts_stop_just_past_the_budget(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a common term whole cost milliseconds at 100k memories; past the budget
    the number decides nothing, so each count stops at MATCH_BUDGET + 1."""
    monkeypatch.setattr(fts5, "MATCH_BUDGET", 3)
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        for i in range(6):
            await app.service.store_memory(app.caller, StoreRequest(f"n{i}", f"shared word {i}"))
        await app.service.store_memory(app.caller, StoreRequest("z", "zanzibar and shared"))
        engines = app.service.store._engines
        assert engines.sync_reader is not None
        with engines.sync_reader.connect() as conn:
            population = fts5.Population.of(conn, Visibility(app.caller))
            counts = fts5._counts(conn, ["shared", "zanzibar", "absent"], population)
    assert population.memories == 7
    # (in its own words, in its context): "shared" is in 7 of each, counted to 4;
    # "zanzibar" in z's own words and lent to the 4 written before it.
    assert counts == [(4, 4), (1, 4), (0, 0)]


@pytest.mark.anyio
async def test_filters_apply_before_the_keyword_cut(
    make_settings: Callable[..., Settings],
) -> None:
    """A filter that hides most of the best matches must still return every visible
    match."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        for i in range(60):
            await app.service.store_memory(app.caller, StoreRequest(f"n{i}", f"deploy notes {i}"))
        await app.service.store_memory(
            app.caller,
            StoreRequest("tagged", "deploy checklist, long and detailed and wordy", tags=["ops"]),
        )
        result = await app.service.search(
            app.caller, SearchRequest("deploy", tags=["ops"], limit=5)
        )
    assert [hit.record.key for hit in result.hits] == ["tagged"]


async def key(app: AppContext, memory_id: int) -> str:
    record = await app.service.store.get(memory_id)
    assert record is not None
    return record.key
