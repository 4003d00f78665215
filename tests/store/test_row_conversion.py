"""Rows to records: the search's quick conversions (RankFacts from six columns, records
through a namedtuple copy) read a stored row exactly as the plain conversion does, and
call the same rows damaged."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from memory_mcp.errors import DamagedMemoryError
from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.store.memories_table import (
    MEMORIES,
    RANK_COLUMNS,
    M,
    rank_facts_from_row,
    record_from_row,
)
from tests.conftest import SQLITE_ONLY, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, SQLITE_ONLY]

# Each makes the one stored row unreadable in a way SQLite lets through.
DAMAGE = {
    "unknown source": "source = 'rumour'",
    "source is a blob": "source = x'00'",
    "updated_at is text": "updated_at = 'yesterday'",
    "updated_at past 9999": "updated_at = 1e15",
    "last_accessed_at is text": "last_accessed_at = 'never'",
    "last_accessed_at before year 1": "last_accessed_at = -1e12",
    "access_count is fractional": "access_count = 1.5",
    "access_count is text": "access_count = 'many'",
    "confidence over 1": "confidence = 7",
    "confidence is text": "confidence = 'sure'",
}


async def _stored_row_db(make_settings: Callable[..., Settings]) -> Path:
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        request = StoreRequest("k", "otter notes", tags=["t"], metadata={"a": 1}, pinned=True)
        await app.service.store_memory(app.caller, request)
    assert settings.db is not None
    return Path(settings.db)


def _rows(db: Path) -> tuple[Any, Any]:
    engine = create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            whole = conn.execute(select(MEMORIES)).one()
            facts = conn.execute(select(*RANK_COLUMNS)).one()
    finally:
        engine.dispose()
    return whole, facts


async def test_a_good_row_gives_the_same_facts_both_ways(
    make_settings: Callable[..., Settings],
) -> None:
    whole, facts_row = _rows(await _stored_row_db(make_settings))
    record = record_from_row(whole)
    facts = rank_facts_from_row(facts_row)
    assert facts is not None
    assert facts == (
        record.id,
        record.source,
        record.pinned,
        record.updated_at,
        record.last_accessed_at,
        record.access_count,
        record.confidence,
    )


async def test_the_namedtuple_copy_reads_every_field_as_the_row_does(
    make_settings: Callable[..., Settings],
) -> None:
    """record_from_row copies a whole row into a namedtuple first; a plain object with the
    same attributes (no `_fields`, so no copy) must give the same record."""
    whole, _ = _rows(await _stored_row_db(make_settings))

    class Plain:
        pass

    plain = Plain()
    for name, value in whole._mapping.items():
        setattr(plain, name, value)
    assert record_from_row(whole) == record_from_row(plain)
    assert record_from_row(whole).tags == ["t"]


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=list(DAMAGE))
async def test_a_damaged_row_is_damaged_both_ways(
    make_settings: Callable[..., Settings], damage: str
) -> None:
    db = await _stored_row_db(make_settings)
    with sqlite3.connect(db) as conn:
        assert conn.execute(f"UPDATE memories SET {damage}").rowcount == 1
    whole, facts_row = _rows(db)
    with pytest.raises(DamagedMemoryError):
        record_from_row(whole)
    assert rank_facts_from_row(facts_row) is None


def test_rank_columns_are_in_the_order_the_conversion_unpacks() -> None:
    assert [c.key for c in RANK_COLUMNS] == [
        M.id.key,
        "source",
        "pinned",
        "updated_at",
        "last_accessed_at",
        "access_count",
        "confidence",
    ]
