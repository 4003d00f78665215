"""The search read path: a repeated query text is embedded once, and reading the keyword
candidates while the query is embedded changes no result."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import SQLITE_ONLY, CountingEmbedder, FakeEmbedder, opened

pytestmark = pytest.mark.anyio


async def test_the_same_query_is_embedded_once(make_settings: Callable[..., Settings]) -> None:
    embedder = CountingEmbedder()
    async with opened(make_settings(), embedder) as app:
        await app.service.store_memory(app.caller, StoreRequest("deploys", "we deploy on fridays"))
        embedder.texts.clear()
        first = await app.service.search(app.caller, SearchRequest("when do we deploy"))
        second = await app.service.search(app.caller, SearchRequest("when do we deploy"))
        assert embedder.texts == ["when do we deploy"]
        assert [h.record.key for h in second.hits] == [h.record.key for h in first.hits]


async def test_both_arms_find_records_with_their_current_values(
    make_settings: Callable[..., Settings],
) -> None:
    """One memory found by its words (read with the keyword arm), one only by its vector
    (read after the scan): both come back whole and current."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        await service.store_memory(caller, StoreRequest("a", "the lemur migration plan"))
        await service.store_memory(caller, StoreRequest("b", "lemur"))
        await service.store_memory(caller, StoreRequest("a", "the lemur migration plan, revised"))
        result = await service.search(caller, SearchRequest("lemur migration"))
        values = {hit.record.key: hit.record.value for hit in result.hits}
        assert values == {"a": "the lemur migration plan, revised", "b": "lemur"}


async def test_a_vector_not_yet_copied_to_its_pgvector_column_is_skipped(
    tmp_path: Path, pg_url: str
) -> None:
    """PostgreSQL: a vector is saved as bytes, then copied to the pgvector column in a
    second transaction; a search in between meets a NULL there and must not fail on it
    (it did: float(None), an internal error)."""
    settings = Settings(db=pg_url, data_dir=tmp_path / "data", memory_dir=tmp_path / "memory")
    async with opened(settings, FakeEmbedder()) as app:
        await app.service.store_memory(app.caller, StoreRequest("k", "lemur migration"))
        engine = create_async_engine(pg_url)
        try:
            async with engine.begin() as conn:
                await conn.execute(text("UPDATE embeddings SET embedding = NULL"))
        finally:
            await engine.dispose()
        result = await app.service.search(app.caller, SearchRequest("lemur migration"))
        assert [hit.record.key for hit in result.hits] == ["k"]


@SQLITE_ONLY  # damages a row by hand, through sqlite3
async def test_a_result_whose_record_cannot_be_read_is_replaced_by_the_next(
    make_settings: Callable[..., Settings],
) -> None:
    """Candidates are ranked on a few facts and read whole only once they are results: a
    record that turns out damaged then is passed over, and the next candidate fills its
    place, so a search still returns `limit` results when enough good ones exist."""
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        for i in range(6):
            await service.store_memory(caller, StoreRequest(f"k{i}", f"otter sighting {i}"))
        everything = await service.search(caller, SearchRequest("otter sighting", limit=6))
        top_two = [hit.record.key for hit in everything.hits[:2]]
        assert settings.db is not None
        with sqlite3.connect(settings.db) as conn:
            for key in top_two:
                conn.execute("UPDATE memories SET tags = '[\"unclosed' WHERE key = ?", (key,))
        result = await service.search(caller, SearchRequest("otter sighting", limit=3))
        keys = [hit.record.key for hit in result.hits]
        assert keys == [hit.record.key for hit in everything.hits[2:5]]
