"""Issue 35, item 7: a search reports the same whatever other agents keep to themselves.

Before, FTS5's bm25() weighed a word by how many of ALL memories held it: worker w2's
search for its own rare word showed `explain.bm25` move 6.6027 → 5.9146 when w1 stored
ONE private memory with that word, and back when w1 deleted it. Now the keyword arm's
statistics count the swarm's memories and the caller's own (store/sqlite/fts5.py): another
agent's private memories change no score, no explanation and no order; a swarm memory,
which every agent sees, does count. FakeEmbedder: the vector arm's cosines depend on the
caller's candidates only, and are not what is judged here."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Connection

from memory_mcp.app.context import AppContext
from memory_mcp.models import Caller, Role, Scope, SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.store.sqlite import fts5
from tests.conftest import SQLITE_ONLY, UNSTAMP, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, SQLITE_ONLY]

W1 = Caller("w1", Role.WORKER, "s1")
W2 = Caller("w2", Role.WORKER, "s2")
QUERIES = ("Vandelayindustries", "latex importer", "vandelayindustries latex exporter")


async def _reports(app: AppContext) -> list[list[tuple[str, float | None, float, float]]]:
    """What w2 is told for each query: each result's key, raw BM25, keyword share and
    score, in order."""
    found = []
    for query in QUERIES:
        result = await app.service.search(W2, SearchRequest(query, limit=10))
        found.append(
            [
                (
                    hit.record.key,
                    hit.parts.bm25 if hit.parts else None,
                    (hit.parts.keyword or 0.0) if hit.parts else 0.0,
                    hit.score,
                )
                for hit in result.hits
            ]
        )
    return found


async def _store(app: AppContext, caller: Caller, key: str, value: str, scope: Scope) -> int:
    outcome = await app.service.store_memory(caller, StoreRequest(key, value, scope=scope))
    return outcome.record.id


async def _w2s_memories(app: AppContext) -> None:
    await _store(app, W2, "vandelay", "Vandelayindustries imports latex", Scope.AGENT)
    await _store(app, W2, "exporter", "The latex exporter ships on Fridays", Scope.AGENT)
    await _store(app, W2, "importer", "Our importer reads latex catalogues", Scope.AGENT)
    await _store(app, W1, "shared", "The team stand-up is at nine", Scope.SWARM)


@pytest.mark.parametrize("private", [Scope.AGENT, Scope.SESSION])
async def test_another_agents_private_memories_change_nothing_a_search_reports(
    make_settings: Callable[..., Settings], private: Scope
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        await _w2s_memories(app)
        before = await _reports(app)
        assert before[0][0][0] == "vandelay" and before[0][0][1] is not None

        # One memory with the rare word; many with one query word and not the other (the
        # order of a two-word search follows which word is rarer); long ones (the average
        # length).
        ids = [
            await _store(app, W1, "w1-secret", "Vandelayindustries is our cover", private),
            *[
                await _store(app, W1, f"w1-latex-{i}", f"latex gloves batch {i}", private)
                for i in range(12)
            ],
            await _store(app, W1, "w1-long", "a long private note " * 200, private),
        ]
        assert await _reports(app) == before

        await _store(app, W1, "w1-secret", "Vandelayindustries is our cover, updated", private)
        assert await _reports(app) == before

        for memory_id in ids:
            await app.service.deletes.delete(W1, memory_id)
        assert await _reports(app) == before


async def test_the_swarms_memories_count_as_the_callers_own(
    make_settings: Callable[..., Settings],
) -> None:
    """What every agent sees is part of every agent's statistics: a swarm memory with the
    rare word makes it less rare for w2 (the numbers are live, not frozen)."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        await _w2s_memories(app)
        before = await _reports(app)
        await _store(app, W1, "w1-public", "Vandelayindustries is a client", Scope.SWARM)
        after = await _reports(app)
        own = next(bm25 for key, bm25, _, _ in after[0] if key == "vandelay")
        assert own is not None and before[0][0][1] is not None and own < before[0][0][1]


async def test_the_counters_follow_every_write(make_settings: Callable[..., Settings]) -> None:
    """keyword_totals (size and length per owner, kept by triggers) equals a recount after
    stores, an update, a scope move, deletes, and in a store opened from before it."""

    async def recount(app: AppContext) -> dict[str, tuple[int, int]]:
        def read(conn: Connection) -> dict[str, tuple[int, int]]:
            kept = conn.exec_driver_sql(
                "SELECT owner, memories, chars FROM keyword_totals WHERE memories > 0"
            ).all()
            counted = conn.exec_driver_sql(
                "SELECT CASE WHEN scope = 'swarm' THEN '' ELSE agent_id END, count(*), "
                "sum(length(key) + length(value) + length(tags) + "
                "coalesce(length(context), 0)) FROM memories GROUP BY 1"
            ).all()
            assert sorted(map(tuple, kept)) == sorted(map(tuple, counted))
            return {row[0]: (row[1], row[2]) for row in kept}

        async with app.service.store._engines.reader.connect() as conn:
            return await conn.run_sync(read)

    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        await _w2s_memories(app)
        first = await _store(app, W1, "w1", "private words", Scope.AGENT)
        await _store(app, W1, "w1", "private words, longer now", Scope.AGENT)
        await _store(app, W1, "moved", "from agent to swarm", Scope.AGENT)
        totals = await recount(app)
        assert set(totals) == {"", "w1", "w2"} and totals["w2"][0] == 3
        await app.service.deletes.delete(W1, first)
        assert (await recount(app))["w1"][0] == 1

        def drop(conn: Connection) -> None:
            conn.exec_driver_sql("DROP TABLE keyword_totals")
            conn.exec_driver_sql(UNSTAMP)

        async with app.service.store._engines.write() as conn:
            await conn.run_sync(drop)
    async with opened(settings, FakeEmbedder()) as app:  # made again, and filled
        assert (await recount(app))["w2"][0] == 3


async def test_a_population_over_the_budget_counts_only_what_the_caller_may_see(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which terms a large store ranks is chosen by counts over the caller's population
    too: w1's private memories full of a word do not make it unaffordable for w2."""
    monkeypatch.setattr(fts5, "MATCH_BUDGET", 5)
    async with opened(make_settings(), FakeEmbedder()) as app:
        await _w2s_memories(app)
        for i in range(4):
            await _store(app, W2, f"w2-{i}", f"w2 filler note {i}", Scope.AGENT)
        before = await _reports(app)
        for i in range(10):
            await _store(app, W1, f"w1-{i}", f"latex Vandelayindustries {i}", Scope.AGENT)
        assert await _reports(app) == before
