"""The reads of whole records and of ranking facts by id (on SQLite as SQL text on the
connection's own cursor, store/rows_by_id.py), a search's keyword finds, a page of a memory's
history, and the expiry test: statements MemoryStore runs inside its connections."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, and_, select, text
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import (
    KeywordFinds,
    KeywordQuery,
    MemoryRecord,
    RankFacts,
    Source,
    Visibility,
)
from memory_mcp.store import write_context
from memory_mcp.store.keyword import KeywordIndex
from memory_mcp.store.memories_table import (
    MEMORIES,
    RANK_COLUMNS,
    M,
    MemoryColumns,
    rank_facts_from_row,
    readable_records,
    record_from_row,
    visible_to,
)
from memory_mcp.store.record_columns import RECORD_BY_ID_SQL, recent_sql
from memory_mcp.store.rows_by_id import ReadById
from memory_mcp.store.schema import MemoryHistoryRow

# The same SQL text store/sqlite/stdlib_reads.py runs on the standard library's sqlite3.
_RECORD_BY_ID = text(RECORD_BY_ID_SQL)


def history_page(memory_id: int, below: int | None, limit: int | None) -> Select[Any]:
    """A memory's replaced versions older than `below`, newest first, `limit` of them
    (None: no bound): walks ix_memory_history_versions instead of sorting them all."""
    history = MemoryHistoryRow.__table__.c
    older = () if below is None else (history.version < below,)
    return (
        select(
            history.version,
            history.value,
            history.tags,
            history.metadata,
            history.source,
            history.replaced_at,
            history.updated_by,
        )
        .where(history.memory_id == memory_id, *older)
        .order_by(history.version.desc())
        .limit(limit)
    )


def expired_by(now: float) -> ColumnElement[bool]:
    return and_(M.expires_at.is_not(None), M.expires_at <= now)


def any_expired(conn: Connection, now: float) -> bool:
    return conn.execute(select(M.id).where(expired_by(now)).limit(1)).first() is not None


def soonest_lender_expiry(conn: Connection) -> float | None:
    """When the first memory that lends its words expires (past or future; None: none
    will): write_context.forget_expired has work once it has passed. Walks ix on
    expires_at in order to the first lender."""
    return conn.scalar(
        select(M.expires_at)
        .where(
            M.expires_at.is_not(None),
            M.written_session.is_not(None),
            M.source != Source.FILE_INDEX.value,
        )
        .order_by(M.expires_at)
        .limit(1)
    )


def record_by_id(conn: Connection, memory_id: int) -> MemoryRecord | None:
    row = conn.execute(_RECORD_BY_ID, {"id": memory_id}).first()
    return record_from_row(row) if row else None


def recent(conn: Connection, vis: Visibility, limit: int) -> list[MemoryRecord]:
    sql, params = recent_sql(vis, limit)
    return readable_records(conn.execute(text(sql), params))


RANK_FACTS_BY_ID = ReadById(RANK_COLUMNS)
RECORDS_BY_ID = ReadById(list(MEMORIES.columns))


def rank_facts(conn: Connection, memory_ids: list[int]) -> dict[int, RankFacts]:
    if not memory_ids:
        return {}
    rows = RANK_FACTS_BY_ID.rows(conn, memory_ids)
    facts = (rank_facts_from_row(row) for row in rows)
    return {fact.id: fact for fact in facts if fact is not None}


def facts_and_records(
    conn: Connection, memory_ids: list[int], whole: list[int]
) -> tuple[dict[int, RankFacts], dict[int, MemoryRecord]]:
    return rank_facts(conn, memory_ids), records_by_id(conn, whole)


def records_by_id(conn: Connection, memory_ids: list[int]) -> dict[int, MemoryRecord]:
    if not memory_ids:
        return {}
    rows = map(MemoryColumns._make, RECORDS_BY_ID.rows(conn, memory_ids))
    return {record.id: record for record in readable_records(rows)}


def keyword_finds(
    conn: Connection, keywords: KeywordIndex, query: KeywordQuery, vis: Visibility
) -> KeywordFinds:
    hits: list[tuple[int, float]]
    own: set[int]
    hits, own = keywords.keyword_hits(conn, query.terms, vis, query.limit, query.column_weights)
    keyed: list[int] = []
    if query.key is not None:
        keyed = keywords.keyed(conn, query.key, vis, query.key_limit)
    holding: list[list[int]] = [
        keywords.holding_phrase(conn, identifier, vis, query.identifier_limit)
        for identifier in query.identifiers
    ]
    exact = dict.fromkeys(keyed)
    for ids in holding:
        if len(ids) <= query.records_for_holders_up_to:
            exact.update(dict.fromkeys(ids))
    exact_ids = list(exact)
    others = [memory_id for memory_id, _ in hits if memory_id not in exact]
    return KeywordFinds(
        hits, exact_ids, holding, records_by_id(conn, exact_ids), rank_facts(conn, others), own
    )


def context_lenders(
    conn: Connection,
    keywords: KeywordIndex,
    memory_ids: list[int],
    terms: list[str],
    vis: Visibility,
) -> dict[int, list[tuple[int, str]]]:
    """For each of `memory_ids`, the memories (id, key) in its context window now
    (write_context.lenders) whose value holds any of `terms` and that `vis` lets its
    caller see: the neighbours that lent a search's words."""
    windows = write_context.lenders(conn, memory_ids)
    candidates = sorted({lender for window in windows.values() for lender in window})
    holding = keywords.holding_terms(conn, terms, candidates, ("value",))
    if not holding:
        return {}
    rows = conn.execute(select(M.id, M.key).where(M.id.in_(sorted(holding)), visible_to(vis)))
    keys: dict[int, str] = {row[0]: row[1] for row in rows}
    lent = {
        memory_id: [(lender, keys[lender]) for lender in window if lender in keys]
        for memory_id, window in windows.items()
    }
    return {memory_id: found for memory_id, found in lent.items() if found}
