"""`Engines.read`, the search's read path: on a SQLite file its statements run through a
synchronous engine in a worker thread (one hop, no aiosqlite round trip per statement), on
PostgreSQL through the async reader; either way in one snapshot, seeing every commit made
before it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Connection, event, select

from memory_mcp.models import KeywordQuery, SearchRequest, StoreRequest, Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.memories_table import M
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


def _keys_and_thread(conn: Connection) -> tuple[list[str], str]:
    keys = [row[0] for row in conn.execute(select(M.key).order_by(M.id))]
    return keys, threading.current_thread().name


async def test_a_read_sees_every_write_committed_before_it(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        engines = app.service.store._engines
        for i in range(3):
            await app.service.store_memory(app.caller, StoreRequest(f"k{i}", f"value {i}"))
            keys, _ = await engines.read(_keys_and_thread)
            assert keys == [f"k{j}" for j in range(i + 1)]


@SQLITE_ONLY  # PostgreSQL's reads stay on the event loop's async driver
async def test_a_read_on_a_sqlite_file_runs_in_a_worker_thread(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        _, thread = await app.service.store._engines.read(_keys_and_thread)
        assert thread != threading.main_thread().name


@SQLITE_ONLY  # PostgreSQL's writes run on the event loop's async driver
async def test_a_store_on_a_sqlite_file_writes_in_one_worker_thread_trip(
    make_settings: Callable[..., Settings],
) -> None:
    """A memory's upsert (identity lookup, revision, context, insert, FTS, cap, the
    record read back) and its vector's save run on the synchronous writers in a worker
    thread, not as one aiosqlite round trip per statement (issue 26)."""
    async with opened(make_settings(synchronous="full"), FakeEmbedder()) as app:
        engines = app.service.store._engines
        assert engines.sync_writer is not None and engines.sync_lazy_writer is not None
        seen: dict[str, list[str]] = {"aiosqlite": [], "sync": []}

        def on(name: str) -> Callable[..., None]:
            def record(*_: Any) -> None:
                seen[name].append(threading.current_thread().name)

            return record

        listeners = [
            (engines.writer.sync_engine, on("aiosqlite")),
            (engines.sync_writer, on("sync")),
            (engines.sync_lazy_writer, on("sync")),
        ]
        for engine, listener in listeners:
            event.listen(engine, "before_cursor_execute", listener)
        try:
            outcome = await app.service.store_memory(
                app.caller, StoreRequest("deploys", "Deploys run on Fridays at noon.")
            )
        finally:
            for engine, listener in listeners:
                event.remove(engine, "before_cursor_execute", listener)
        assert outcome.created
        vectors = app.service.vectors
        assert await vectors.rows.has(vectors.model, outcome.record.content_hash)
        assert seen["aiosqlite"] == []
        assert len(seen["sync"]) >= 5
        assert threading.main_thread().name not in seen["sync"]


async def test_the_keyword_arm_reads_hits_exact_candidates_and_their_records_at_once(
    make_settings: Callable[..., Settings],
) -> None:
    """One read answers all of a search's keyword questions: BM25 hits, the memory keyed by
    the query, the holders of a rare identifier, and the records of each of them, current."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        await service.store_memory(caller, StoreRequest("deploy-day", "we deploy on fridays"))
        await service.store_memory(caller, StoreRequest("errors", "ERR_CONN_42 means retry"))
        await service.store_memory(caller, StoreRequest("deploy-day", "we deploy on mondays"))
        query = KeywordQuery(
            terms=("deploy",),
            limit=10,
            column_weights=KEYWORD_COLUMN_WEIGHTS,
            key="DEPLOY-DAY",
            identifiers=("ERR_CONN_42",),
            key_limit=5,
            identifier_limit=5,
            records_for_holders_up_to=4,
        )
        finds = await service.store.keyword_finds(query, Visibility(caller=caller, now=1e12))
        by_key = {record.key: record.id for record in finds.records.values()}
        # "errors" holds "deploy" only in its context: the rewritten deploy-day is now the
        # memory written just after it (store/write_context.py). With two memories BM25's
        # IDF is flat, so which of the two ranks first is not the point here.
        assert sorted(memory_id for memory_id, _ in finds.hits) == sorted(by_key.values())
        assert finds.exact_ids == [by_key["deploy-day"], by_key["errors"]]
        assert finds.holding == [[by_key["errors"]]]
        assert finds.records[by_key["deploy-day"]].value == "we deploy on mondays"


@SQLITE_ONLY  # PRAGMA data_version; pgvector searches in the database and keeps no index
async def test_the_index_reads_the_store_only_when_something_was_committed(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches over an unchanged store do not read it to catch up; a write by another
    connection (here: another store on the same file, as another process) is read at the
    next search, and found."""
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        await service.store_memory(caller, StoreRequest("first", "lemur migration notes"))
        rows = service.vectors.search.rows  # type: ignore[attr-defined]
        reads: list[int] = []
        changes_since = rows.changes_since

        async def counted(revision: int, model: str) -> Any:
            reads.append(revision)
            return await changes_since(revision, model)

        monkeypatch.setattr(rows, "changes_since", counted)
        await service.search(caller, SearchRequest("lemur"))
        before = len(reads)
        await service.search(caller, SearchRequest("lemur"))
        await service.search(caller, SearchRequest("migration"))
        assert len(reads) == before
        async with opened(settings, FakeEmbedder()) as other:
            await other.service.store_memory(other.caller, StoreRequest("second", "lemur diet"))
        result = await service.search(caller, SearchRequest("lemur diet"))
        assert len(reads) == before + 1
        assert "second" in [hit.record.key for hit in result.hits]
