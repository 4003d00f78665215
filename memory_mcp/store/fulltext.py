"""Keyword search on SQLite FTS5 with a bound on its cost.

FTS5 computes BM25 for every memory that matches any query term before it can sort them,
about a microsecond each: a word found in most of 100k memories costs ~100 ms, while a
selective query costs well under one. So in a large store the query's terms are counted
first (cheap: no BM25) and only the rarest ones that together match at most
`MATCH_BUDGET` memories are ranked (see `keyword.affordable_terms`). When every term is
over the budget, BM25 could not tell the matches apart anyway (a term in half of all
memories has an IDF of zero): the newest matching memories are returned, unranked."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Float, Integer, column, func, select, table, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement

from memory_mcp.store.keyword import affordable_terms, match_any
from memory_mcp.store.schema import MemoryRow

# Memories whose BM25 one search may compute: ~15 ms on this machine.
MATCH_BUDGET = 20_000
# The FTS5 ranking runs first, on this many candidates per wanted result; visibility is
# checked on those only, unless too few of them are visible.
FTS_FIRST_FACTOR = 4

M = MemoryRow.__table__.c
_FTS = table("memories_fts", column("rowid"))
_MATCH = "memories_fts MATCH :match"


async def keyword_search(
    conn: AsyncConnection,
    terms: Sequence[str],
    visible: ColumnElement[bool],
    limit: int,
    column_weights: tuple[float, float, float],
) -> list[tuple[int, float]]:
    """(id, BM25 relevance, larger is better) of visible memories with any of `terms`."""
    if not terms:
        return []
    chosen = list(terms)
    total = int(await conn.scalar(select(func.count()).select_from(MemoryRow)) or 0)
    if total > MATCH_BUDGET:
        matches = {term: await _match_count(conn, term) for term in terms}
        chosen = affordable_terms(matches, MATCH_BUDGET)
        if not chosen:
            return await _newest_matching(conn, match_any(terms), visible, limit)
    return await _ranked(conn, match_any(chosen), visible, limit, column_weights)


async def _match_count(conn: AsyncConnection, term: str) -> int:
    count = await conn.scalar(
        select(func.count()).select_from(_FTS).where(text(_MATCH).bindparams(match=match_any([term])))
    )
    return int(count or 0)


async def _ranked(
    conn: AsyncConnection,
    match: str,
    visible: ColumnElement[bool],
    limit: int,
    column_weights: tuple[float, float, float],
) -> list[tuple[int, float]]:
    weights = ", ".join(f"{w:g}" for w in column_weights)
    bm25 = f"bm25(memories_fts, {weights})"
    # BM25 on the FTS table alone, then the join for visibility on the best few: the join
    # on every match would double the cost of a common word.
    best = (
        text(
            f"SELECT rowid AS id, {bm25} AS rank FROM memories_fts WHERE {_MATCH} "
            "ORDER BY rank LIMIT :k"
        )
        .bindparams(match=match, k=limit * FTS_FIRST_FACTOR)
        .columns(column("id", Integer), column("rank", Float))
        .subquery("best")
    )
    stmt = (
        select(M.id, best.c.rank)
        .join(best, best.c.id == M.id)
        .where(visible)
        .order_by(best.c.rank)
        .limit(limit)
    )
    hits = [(row[0], -float(row[1])) for row in await conn.execute(stmt)]
    if len(hits) < limit:
        # Few visible among the best (filters, others' memories) or few matches at all:
        # rank every visible match.
        rank = text(bm25)
        stmt = (
            select(M.id, rank)
            .select_from(MemoryRow.__table__.join(_FTS, _FTS.c.rowid == M.id))
            .where(text(_MATCH).bindparams(match=match), visible)
            .order_by(rank)
            .limit(limit)
        )
        hits = [(row[0], -float(row[1])) for row in await conn.execute(stmt)]
    return hits


async def _newest_matching(
    conn: AsyncConnection, match: str, visible: ColumnElement[bool], limit: int
) -> list[tuple[int, float]]:
    stmt = (
        select(M.id)
        .select_from(MemoryRow.__table__.join(_FTS, _FTS.c.rowid == M.id))
        .where(text(_MATCH).bindparams(match=match), visible)
        .order_by(_FTS.c.rowid.desc())
        .limit(limit)
    )
    return [(row[0], 0.0) for row in await conn.execute(stmt)]
