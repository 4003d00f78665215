"""The vector arm on PostgreSQL runs in pgvector: the plan of the statement a search runs
uses the HNSW index of the query's dimension, and a meaning-only question finds its memory
with the real model through that arm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from mcp import Client
from sqlalchemy import event, text

from bench.locomo import load_conversation, run_locomo
from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.models import BatchItem, NewMemory, Scope, Source, Visibility
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from memory_mcp.store.postgres.pgvector_search import PgvectorSearch
from tests.bench.test_bench import TINY
from tests.conftest import call, opened

pytestmark = pytest.mark.anyio
MODEL = "explain-test-model"
ROWS = 3000  # enough that the planner prefers the index to reading every vector


@pytest.fixture
def db_backend() -> str:
    return "postgresql"


async def test_the_vector_query_uses_the_hnsw_index(
    make_settings: Callable[..., Settings],
) -> None:
    rng = np.random.default_rng(7)
    async with opened(make_settings()) as app:
        store, caller = app.service.store, app.caller
        now = app.service.clock()
        memories = [
            NewMemory(
                key=f"k{i}",
                value=f"memory {i}",
                scope=Scope.AGENT,
                agent_id=caller.agent_id,
                session_id="",
                source=Source.MANUAL,
            )
            for i in range(ROWS)
        ]
        await store.upsert_many([BatchItem(m, now) for m in memories], cap=0)
        vectors = rng.normal(size=(ROWS, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [r async for r in store.iter_records()]
        pairs = [(r.content_hash, v) for r, v in zip(records, vectors, strict=True)]
        await store.vectors.save(MODEL, pairs, now)
        engines: Any = store._engines
        async with engines.writer.begin() as conn:
            await conn.execute(text("ANALYZE"))

        ran: list[tuple[str, Any]] = []

        def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            if "<=>" in statement:
                ran.append((statement, parameters))

        event.listen(engines.reader.sync_engine, "before_cursor_execute", record)
        search = PgvectorSearch(engines, MODEL)
        vis = Visibility(caller=caller, now=now)
        hits = await search.nearest(vectors[42], vis, 10)
        event.remove(engines.reader.sync_engine, "before_cursor_execute", record)

        statement, parameters = ran[0]
        async with engines.reader.begin() as conn:
            await conn.execute(text("SET LOCAL hnsw.iterative_scan = strict_order"))
            plan = await conn.exec_driver_sql(f"EXPLAIN {statement}", parameters)
            plan_text = "\n".join(row[0] for row in plan)

    assert len(ran) == 1, "one statement: the index found k rows, no exact re-ranking"
    assert "ix_embeddings_hnsw_384" in plan_text
    assert hits[0][0] == records[42].id  # the memory itself is nearest to its own vector


async def test_a_small_project_is_ranked_exactly_through_its_own_rows(
    make_settings: Callable[..., Settings],
) -> None:
    """A search within a project holding few of the store's vectors (here 30 of 1,530:
    an HNSW scan's first 400 candidates would hold ~8 of them, k is 10) ranks that
    project's memories exactly, without the HNSW index: the same top k, in the same
    order, as every vector of the project scored in numpy, and never a memory of another
    project, although the query is one of theirs. Every project: the HNSW index."""
    rng = np.random.default_rng(9)
    sizes = {"big": 1_500, "small": 30}
    async with opened(make_settings()) as app:
        store, caller = app.service.store, app.caller
        now = app.service.clock()
        memories = [
            NewMemory(
                f"{project}-{i}", f"memory {i} of {project}", Scope.AGENT, caller.agent_id,
                "", Source.MANUAL, project=project,
            )
            for project, size in sizes.items()
            for i in range(size)
        ]  # fmt: skip
        await store.upsert_many([BatchItem(m, now) for m in memories], cap=0)
        records = [r async for r in store.iter_records()]
        vectors = rng.normal(size=(len(records), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        pairs = [(r.content_hash, v) for r, v in zip(records, vectors, strict=True)]
        await store.vectors.save(MODEL, pairs, now)
        engines: Any = store._engines
        async with engines.writer.begin() as conn:
            await conn.execute(text("ANALYZE"))  # the store's size, as autovacuum keeps it

        ran: list[tuple[str, Any]] = []

        def record(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
            if "<=>" in statement:
                ran.append((statement, parameters))

        search = PgvectorSearch(engines, MODEL)
        query = vectors[7]  # a memory of project `big`
        assert records[7].project == "big"
        event.listen(engines.reader.sync_engine, "before_cursor_execute", record)
        small = Visibility(caller=caller, now=now, projects=frozenset({"small"}))
        hits = await search.nearest(query, small, 10)
        every = await search.nearest(query, Visibility(caller=caller, now=now), 10)
        event.remove(engines.reader.sync_engine, "before_cursor_execute", record)
        plans = []
        async with engines.reader.begin() as conn:
            for statement, parameters in ran:
                plan = await conn.exec_driver_sql(f"EXPLAIN {statement}", parameters)
                plans.append("\n".join(row[0] for row in plan))

    in_small = [i for i, r in enumerate(records) if r.project == "small"]
    scores = vectors[in_small] @ query
    truth = [records[in_small[j]].id for j in np.argsort(-scores, kind="stable")[:10]]
    assert [i for i, _ in hits] == truth
    assert [s for _, s in hits] == pytest.approx(sorted(scores, reverse=True)[:10], abs=1e-5)
    assert len(plans) == 2, "one statement each: no HNSW scan first for the small project"
    # The small project's statement is the exact ranking's (no HNSW distance expression,
    # which the planner could still choose to run without the index), and its plan does
    # not read the index.
    assert "embedding::vector(384) <=>" not in ran[0][0]
    assert "embedding::vector(384) <=>" in ran[1][0]
    assert "ix_embeddings_hnsw_384" not in plans[0]
    assert "ix_embeddings_hnsw_384" in plans[1]
    assert every[0][0] == records[7].id  # every project: the query's own memory first


async def test_nearest_memories_found_beside_the_keyword_arm_are_not_searched_again(
    make_settings: Callable[..., Settings],
) -> None:
    """A search runs pgvector's nearest-neighbour query beside its keyword arm
    (`prepare`); `nearest` then only scores the keyword candidates, and gives the answer
    it gives without it. One prepared for another view is not used."""
    rng = np.random.default_rng(8)
    async with opened(make_settings()) as app:
        store, caller = app.service.store, app.caller
        now = app.service.clock()
        memories = [
            NewMemory(f"k{i}", f"memory {i}", Scope.AGENT, caller.agent_id, "", Source.MANUAL)
            for i in range(200)
        ]
        await store.upsert_many([BatchItem(m, now) for m in memories], cap=0)
        vectors = rng.normal(size=(200, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        records = [r async for r in store.iter_records()]
        pairs = [(r.content_hash, v) for r, v in zip(records, vectors, strict=True)]
        await store.vectors.save(MODEL, pairs, now)
        engines: Any = store._engines
        search = PgvectorSearch(engines, MODEL)
        vis = Visibility(caller=caller, now=now)
        also = [records[150].id, records[42].id]
        plain = await search.nearest(vectors[42], vis, 5, also)

        ran: list[str] = []
        pgvector: list[str] = []

        def record(_c: Any, _cursor: Any, statement: str, *_: Any) -> None:
            ran.append(statement)
            if "<=>" in statement:
                pgvector.append(statement)

        prepared = await search.prepare(vectors[42], vis, 5)
        event.listen(engines.reader.sync_engine, "before_cursor_execute", record)
        assert await search.nearest(vectors[42], vis, 5, also, None, prepared) == plain
        assert len(pgvector) == 1  # the keyword candidate's score only
        # With the candidates' vectors read beside (the keyword arm), checked for this
        # view as they were read: no trip to the database at all.
        known = await search.exact_vectors(also, vis)
        ran.clear()
        beside = await search.nearest(vectors[42], vis, 5, also, None, prepared, known)
        assert [i for i, _ in beside] == [i for i, _ in plain]
        assert [s for _, s in beside] == pytest.approx([s for _, s in plain], abs=1e-5)
        assert ran == []
        # Another view: neither the prepared answer nor the vectors checked for the
        # first view are trusted; the memories it may not see are not scored.
        other_view = Visibility(caller=caller, now=now, scope=Scope.SWARM)  # sees none
        assert await search.nearest(vectors[42], other_view, 5, also, None, prepared, known) == []
        assert ran  # it asked the store
        # Vectors that were not checked (a plain dict) are checked before they count.
        ran.clear()
        unchecked = dict(known)
        assert await search.nearest(vectors[42], other_view, 5, also, None, None, unchecked) == []
        assert dict(await search.exact_vectors(also, other_view)) == {}
        event.remove(engines.reader.sync_engine, "before_cursor_execute", record)
    assert plain[0][0] == records[42].id and plain[-1][0] == records[150].id


async def test_a_meaning_only_question_is_answered_through_pgvector(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        for key, value in {
            "snack": "The user's favourite snack is fresh mango slices.",
            "editor": "The team edits code in Neovim with the LSP configured.",
            "deploy": "Deploys go through the blue-green pipeline; never push to prod.",
        }.items():
            await call(client, "memory-store", key=key, value=value)
        found = await call(client, "memory-search", query="what fruit do they like?", limit=3)
    assert found["results"][0]["key"] == "snack"
    assert found["results"][0]["matched_by"] == "vector"


async def test_a_store_on_postgresql_searches_vectors_in_the_database(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        assert isinstance(app.service.vectors.search, PgvectorSearch)


async def test_the_locomo_harness_retrieves_alike_on_both_stores(
    pg_url: str, real_embedder: Embedder
) -> None:
    """The same conversation and questions on a SQLite file and in PostgreSQL (where the
    store is emptied first): the same evidence turns retrieved (small stores: both vector
    arms rank exactly; the keyword arms differ only in ts_rank vs BM25)."""
    conversation = load_conversation(TINY)
    on_sqlite = (await run_locomo([conversation], real_embedder)).summary()
    await run_locomo([conversation], real_embedder, db=pg_url)  # leaves a full store
    on_pg = (await run_locomo([conversation], real_embedder, db=pg_url)).summary()
    assert on_pg["turns"] == on_sqlite["turns"]
    assert on_pg["overall"]["recall@5"] == pytest.approx(on_sqlite["overall"]["recall@5"], abs=0.01)
    assert on_pg["overall"]["recall@10"] == pytest.approx(
        on_sqlite["overall"]["recall@10"], abs=0.01
    )
