"""The plan of a default search's keyword arm on a real PostgreSQL, as the search runs it
(EXPLAIN ANALYZE of its own statement, on its own connection, inside its transaction):
it reads the GIN index, never a scan of every memory, and ranks no more matches than the
budget. At 100k memories (bench scale) a query of eleven common-but-affordable words was
planned as a parallel scan of every row testing `@@`: 850 ms of a 1.2 s search
(docs/lab/postgres-at-scale.md); at test scale the planner prefers that scan too, so the
plan shape is checked here rather than the time."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from sqlalchemy import event

from memory_mcp.models import BatchItem, Caps, NewMemory, Scope, Source, Visibility
from memory_mcp.settings import Settings
from memory_mcp.store.postgres import tsvector
from tests.conftest import opened, pg_query

pytestmark = pytest.mark.anyio
WEIGHTS = (2.0, 1.0, 1.5, 0.7)
WORDS = ("harbour", "lantern", "meadow", "orchard", "glacier", "canyon")
PER_WORD = 60  # memories holding each word
BUDGET = 150  # two words' matches fit, three do not
# Memories without any of the words, so that reading the GIN index is the cheaper plan
# for the two affordable words (120 of 10,360 memories); main ranked all six (360), in a
# scan of every row. With 3,000 others the planner walked ix_memories_scope whole instead.
OTHERS = 10_000


@pytest.fixture
def db_backend() -> str:
    return "postgresql"


def _scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a JSON plan that reads the memories table, by any path."""
    found = [plan] if plan.get("Relation Name") == "memories" else []
    for child in plan.get("Plans", []):
        found += _scans(child)
    return found


def _index_names(plan: dict[str, Any]) -> set[str]:
    names = {plan["Index Name"]} if "Index Name" in plan else set()
    for child in plan.get("Plans", []):
        names |= _index_names(child)
    return names


async def test_the_keyword_arm_ranks_through_its_gin_index_within_the_budget(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, pg_server: object
) -> None:
    monkeypatch.setattr(tsvector, "MATCH_BUDGET", BUDGET)
    settings = make_settings()
    async with opened(settings) as app:
        store, caller, now = app.service.store, app.caller, app.service.clock()
        memories = [
            NewMemory(
                f"k{word}{i}", f"{word} note number {i}", Scope.AGENT, caller.agent_id, "",
                Source.MANUAL,
            )
            for word in WORDS
            for i in range(PER_WORD)
        ] + [
            NewMemory(f"other{i}", f"plain entry {i}", Scope.AGENT, caller.agent_id, "",
                      Source.MANUAL)
            for i in range(OTHERS)
        ]  # fmt: skip
        await store.upsert_many([BatchItem(m, now) for m in memories], cap=Caps())
    pg_query(pg_server, str(settings.db), "ANALYZE memories;")

    plans: list[dict[str, Any]] = []

    def explain(_c: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "ts_rank(" in statement and not statement.startswith("EXPLAIN"):
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
            plan = cursor.fetchall()[0][0]  # asyncpg decodes json; other drivers may not
            plans.append((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])

    async with opened(settings) as app:
        engine = app.service.store._engines.reader.sync_engine
        event.listen(engine, "before_cursor_execute", explain)
        try:
            vis = Visibility(caller=app.caller, now=2e9)
            hits = await app.service.store.keyword_search(list(WORDS), vis, 50, WEIGHTS)
        finally:
            event.remove(engine, "before_cursor_execute", explain)

    assert len(plans) == 1, "one ranking statement"
    scans = _scans(plans[0])
    assert [s["Node Type"] for s in scans if s["Node Type"] == "Seq Scan"] == []
    assert "ix_memories_search_text" in _index_names(plans[0])
    # The rarest words whose matches add up to the budget, not every word under it.
    ranked = sum(s["Actual Rows"] for s in scans)
    assert 0 < ranked <= BUDGET
    assert len(hits) == 50


MINE = 400  # the caller's project's memories, among OTHERS of another project


async def test_the_counts_of_a_read_within_a_project_read_its_index_alone(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, pg_server: object
) -> None:
    """Both arms count what a search within a project may see (up to the keyword budget,
    and to the vector arm's exact-ranking bound) from ix_memories_project_visible alone:
    every column of the visibility rule is in it. Without `quarantined` there, the count
    was planned as a scan of the table (bench scale, 100k memories in one project: 17.5k
    buffers where the index-only scan reads 1.3k); here, as an index scan visiting a heap
    page for each counted memory."""
    monkeypatch.setattr(tsvector, "MATCH_BUDGET", BUDGET)
    settings = make_settings()
    async with opened(settings) as app:
        store, caller, now = app.service.store, app.caller, app.service.clock()
        memories = [
            NewMemory(
                f"mine{i}", f"{WORDS[i % 6]} note number {i}", Scope.AGENT, caller.agent_id,
                "", Source.MANUAL, project="mine",
            )
            for i in range(MINE)
        ] + [
            NewMemory(f"other{i}", f"{WORDS[i % 6]} entry {i}", Scope.AGENT, caller.agent_id,
                      "", Source.MANUAL, project="elsewhere")
            for i in range(OTHERS)
        ]  # fmt: skip
        await store.upsert_many([BatchItem(m, now) for m in memories], cap=Caps())
    # As autovacuum leaves a live store: statistics and the visibility map.
    pg_query(pg_server, str(settings.db), "VACUUM ANALYZE memories;")

    plans: list[dict[str, Any]] = []

    def explain(_c: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if "count(*)" in statement and not statement.startswith("EXPLAIN"):
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters)
            plan = cursor.fetchall()[0][0]
            plans.append((json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"])

    async with opened(settings) as app:
        engine = app.service.store._engines.reader.sync_engine
        event.listen(engine, "before_cursor_execute", explain)
        try:
            vis = Visibility(caller=app.caller, now=2e9, projects=frozenset({"mine", "*"}))
            hits = await app.service.store.keyword_search(list(WORDS), vis, 50, WEIGHTS)
            query = np.zeros(384, dtype=np.float32)  # FakeEmbedder's dimension
            query[0] = 1.0
            await app.service.vectors.search.nearest(query, vis, 10)
        finally:
            event.remove(engine, "before_cursor_execute", explain)

    assert len(plans) == 2, "the keyword arm's count and the vector arm's"
    for plan in plans:
        scans = _scans(plan)
        assert [(s["Node Type"], s.get("Index Name")) for s in scans] == [
            ("Index Only Scan", "ix_memories_project_visible")
        ]
    assert len(hits) == 50 and all(h[0] <= MINE for h in hits)  # the first ids are mine
