"""Keyword search on SQLite FTS5 with a bound on its cost.

FTS5 computes BM25 for every memory that matches any query term before it can sort them,
about a microsecond each: a word found in most of 100k memories costs ~100 ms, while a
selective query costs well under one. So the query's terms are counted first (one
statement, no BM25, each count stopping past the budget), and in a store larger than
`MATCH_BUDGET` only the rarest terms that together match at most `MATCH_BUDGET` memories
are ranked (`keyword.affordable_terms`).
When even the rarest term matches more than the budget, its BM25 says little (a word in
a fifth of all memories weighs 1.4, in half of them nothing): the newest matching memories
are returned, unranked, and the vector arm ranks them by meaning."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Float, Integer, and_, column, select, table, text
from sqlalchemy.sql import ColumnElement

from memory_mcp.store.keyword import affordable_terms, match_any, phrase
from memory_mcp.store.schema import MemoryRow

# Memories whose BM25 one search may compute: ~1.5 microseconds each here, so ~4 ms, well
# inside the query embedding that the keyword arm runs beside (20,000 made a search with
# common words take 30 ms at 10k memories; 5,000 still 8 ms of a 15 ms budget). Left out
# are terms in more than a quarter of a 10k store, which weigh little in BM25 (see above).
MATCH_BUDGET = 2_500
# The FTS5 ranking runs first, on this many candidates per wanted result; visibility is
# checked on those only, unless too few of them are visible.
FTS_FIRST_FACTOR = 4

M = MemoryRow.__table__.c
_FTS = table("memories_fts", column("rowid"))
_MATCH = "memories_fts MATCH :match"


def keyword_search(
    conn: Connection,
    terms: Sequence[str],
    visible: ColumnElement[bool],
    limit: int,
    column_weights: tuple[float, float, float],
) -> list[tuple[int, float]]:
    """(id, BM25 relevance, larger is better) of visible memories with any of `terms`."""
    if not terms:
        return []
    total, matches = _counts(conn, terms)
    present = [term for term in terms if matches[term] > 0]
    if not present:
        return []
    chosen = present if total <= MATCH_BUDGET else affordable_terms(matches, MATCH_BUDGET)
    if not chosen:
        return _newest_matching(conn, match_any(present), visible, limit)
    return _ranked(conn, match_any(chosen), visible, limit, column_weights)


def _counts(conn: Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """How many memories there are, and how many contain each term, each counted only up
    to MATCH_BUDGET + 1: one statement, no BM25. Past the budget the exact number changes
    nothing (a term over it is never affordable, a store over it is always budgeted), and
    counting stops there: a term in most of 100k memories took 4.5 ms to count whole and
    takes 0.3 ms to count this far; the store's size 0.8 → 0.15 ms."""
    cap = MATCH_BUDGET + 1
    params: dict[str, object] = {f"t{i}": match_any([term]) for i, term in enumerate(terms)}
    params["cap"] = cap
    counts = ", ".join(
        "(SELECT count(*) FROM (SELECT 1 FROM memories_fts "
        f"WHERE memories_fts MATCH :t{i} LIMIT :cap))"
        for i in range(len(terms))
    )
    total = "(SELECT count(*) FROM (SELECT 1 FROM memories LIMIT :cap))"
    row = (conn.execute(text(f"SELECT {total}, {counts}"), params)).one()
    return int(row[0]), {term: int(row[i + 1]) for i, term in enumerate(terms)}


def _ranked(
    conn: Connection,
    match: str,
    visible: ColumnElement[bool],
    limit: int,
    column_weights: tuple[float, float, float],
) -> list[tuple[int, float]]:
    weights = ", ".join(f"{w:g}" for w in column_weights)
    bm25 = f"bm25(memories_fts, {weights})"
    # BM25 on the FTS table alone, then visibility on the best few only: joining every
    # match would double the cost of a common word. Each of the best comes back with a
    # flag saying whether the caller may see it.
    k = limit * FTS_FIRST_FACTOR
    best = (
        text(
            f"SELECT rowid AS id, {bm25} AS rank FROM memories_fts WHERE {_MATCH} "
            "ORDER BY rank LIMIT :k"
        )
        .bindparams(match=match, k=k)
        .columns(column("id", Integer), column("rank", Float))
        .subquery("best")
    )
    stmt = (
        select(best.c.id, best.c.rank, M.id.is_not(None))
        .select_from(best.outerjoin(MemoryRow.__table__, and_(M.id == best.c.id, visible)))
        .order_by(best.c.rank)
    )
    rows = (conn.execute(stmt)).all()
    hits = [(row[0], -float(row[1])) for row in rows if row[2]][:limit]
    if len(hits) < limit and len(rows) == k:
        # Too few of the best are visible (filters, other agents' memories): rank every
        # visible match instead.
        rank = text(bm25)
        stmt = (
            select(M.id, rank)
            .select_from(MemoryRow.__table__.join(_FTS, _FTS.c.rowid == M.id))
            .where(text(_MATCH).bindparams(match=match), visible)
            .order_by(rank)
            .limit(limit)
        )
        hits = [(row[0], -float(row[1])) for row in conn.execute(stmt)]
    return hits


def _newest_matching(
    conn: Connection, match: str, visible: ColumnElement[bool], limit: int
) -> list[tuple[int, float]]:
    stmt = (
        select(M.id)
        .select_from(MemoryRow.__table__.join(_FTS, _FTS.c.rowid == M.id))
        .where(text(_MATCH).bindparams(match=match), visible)
        .order_by(_FTS.c.rowid.desc())
        .limit(limit)
    )
    return [(row[0], 0.0) for row in conn.execute(stmt)]


def holding_phrase(
    conn: Connection, words: str, visible: ColumnElement[bool], limit: int
) -> list[int]:
    """Visible memories holding `words` as a phrase (`gen-0042`: "gen" then "0042"), in no
    order. No BM25 and no cost guard: the phrase's rarest word keeps it cheap even when
    its other words are in every memory."""
    stmt = (
        select(M.id)
        .select_from(MemoryRow.__table__.join(_FTS, _FTS.c.rowid == M.id))
        .where(text(_MATCH).bindparams(match=phrase(words)), visible)
        .limit(limit)
    )
    return [row[0] for row in conn.execute(stmt)]
