"""PostgreSQL's keyword arm in a store over the match budget (store/postgres/tsvector.py),
on a real PostgreSQL: a word that ANALYZE's statistics put in more memories than the
budget is left out of the ts_rank ranking (as SQLite leaves out its commonest words), a
query of such words only gets the newest matching memories unranked, and a store within
the budget ranks every word, as before."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.models import StoreRequest, Visibility
from memory_mcp.settings import Settings
from memory_mcp.store.postgres import tsvector
from tests.conftest import opened, pg_query

pytestmark = pytest.mark.anyio
WEIGHTS = (2.0, 1.0, 1.5, 0.7)


@pytest.fixture
def db_backend() -> str:
    return "postgresql"


async def keyword_hits(settings: Settings, terms: list[str]) -> list[tuple[int, float]]:
    async with opened(settings) as app:
        vis = Visibility(caller=app.caller, now=2e9)
        return await app.service.store.keyword_search(terms, vis, 50, WEIGHTS)


async def filled(settings: Settings, count: int) -> dict[str, int]:
    """`count` memories holding "harbour", in order; k3 also holds "lighthouse"."""
    ids = {}
    async with opened(settings) as app:
        for i in range(count):
            extra = " lighthouse" if i == 3 else ""
            stored = await app.service.store_memory(
                app.caller, StoreRequest(f"k{i}", f"harbour note {i}{extra}"), embed_now=False
            )
            ids[f"k{i}"] = stored.record.id
    return ids


async def analysed(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    pg_server: object,
    budget: int,
) -> tuple[Settings, dict[str, int]]:
    """30 memories (`filled`) and ANALYZE's statistics of them, under a budget of `budget`."""
    monkeypatch.setattr(tsvector, "MATCH_BUDGET", budget)
    settings = make_settings()
    ids = await filled(settings, 30)
    pg_query(pg_server, str(settings.db), "ANALYZE memories;")
    return settings, ids


async def test_a_word_in_more_memories_than_the_budget_is_not_ranked(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, pg_server: object
) -> None:
    settings, ids = await analysed(make_settings, monkeypatch, pg_server, budget=8)
    hits = await keyword_hits(settings, ["harbour", "lighthouse"])
    # k3 and the few written after it, which hold "lighthouse" in their context words
    # (store/write_context.py); not the 25 others, which hold only "harbour".
    assert hits[0][0] == ids["k3"] and len(hits) < 10
    newest = await keyword_hits(settings, ["harbour"])  # nothing rarer to rank by
    assert [memory_id for memory_id, _ in newest] == [ids[f"k{i}"] for i in range(29, -1, -1)]
    assert {relevance for _, relevance in newest} == {0.0}


async def test_a_store_within_the_budget_ranks_every_word(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, pg_server: object
) -> None:
    settings, ids = await analysed(make_settings, monkeypatch, pg_server, budget=40)
    hits = await keyword_hits(settings, ["harbour", "lighthouse"])
    assert len(hits) == 30 and hits[0][0] == ids["k3"]


async def test_analyze_keeps_ten_thousand_common_lexemes(
    make_settings: Callable[..., Settings], pg_server: object
) -> None:
    """search_text's statistics target is 1,000 (store/postgres/ddl.py), so ANALYZE keeps
    up to 10,000 most common lexemes: with the default's 1,000, a word in ~9,900 of a
    million real texts counted as rare and was ranked (docs/VECTOR_INDEX.md)."""
    settings = make_settings()
    async with opened(settings):
        pass
    target = pg_query(
        pg_server,
        str(settings.db),
        "SELECT attstattarget FROM pg_attribute "
        "WHERE attrelid = 'memories'::regclass AND attname = 'search_text';",
    )
    assert "1000" in target
