"""Keyword search on SQLite FTS5 with a bound on its cost.

FTS5 computes BM25 for every memory that matches any query term before it can sort them,
about a microsecond each: a word found in most of 100k memories costs ~100 ms, while a
selective query costs well under one. So the query's terms are counted first (one
statement, no BM25, each count stopping past the budget), and in a store larger than
`MATCH_BUDGET` only the rarest terms that together match at most `MATCH_BUDGET` memories
are ranked (`keyword.affordable_terms`).
When even the rarest term matches more than the budget, its BM25 says little (a word in
a fifth of all memories weighs 1.4, in half of them nothing): the newest matching memories
are returned, unranked, and the vector arm ranks them by meaning.

The statements are SQL text run on the connection's own cursor (store/sqlite_cursor.py),
the caller's visibility compiled once per shape (rows.visible_sql): through SQLAlchemy's
statement building the Python around them cost ~1.4 ms a search, where SQLite's own work
is 0.25-2.4 ms."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from memory_mcp.models import Visibility
from memory_mcp.store.keyword import affordable_terms, match_any, match_own_or_context, phrase
from memory_mcp.store.sqlite_cursor import cursor_rows
from memory_mcp.store.visibility import VisibleSql, visible_sql

# Memories whose BM25 one search may compute: ~1.5 microseconds each here, so ~4 ms, well
# inside the query embedding that the keyword arm runs beside (20,000 made a search with
# common words take 30 ms at 10k memories; 5,000 still 8 ms of a 15 ms budget). Left out
# are terms in more than a quarter of a 10k store, which weigh little in BM25 (see above).
MATCH_BUDGET = 2_500
# The FTS5 ranking runs first, on this many candidates per wanted result; visibility is
# checked on those only, unless too few of them are visible.
FTS_FIRST_FACTOR = 4

_MATCHING = "FROM memories JOIN memories_fts ON memories_fts.rowid = memories.id"


def keyword_search(
    conn: Connection,
    terms: Sequence[str],
    vis: Visibility,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> list[tuple[int, float]]:
    """(id, BM25 relevance, larger is better) of visible memories with any of `terms`."""
    if not terms:
        return []
    total, matches = _counts(conn, terms)
    present = [term for term in terms if matches[term] > 0]
    if not present:
        return []
    chosen = present if total <= MATCH_BUDGET else affordable_terms(matches, MATCH_BUDGET)
    visible = visible_sql(vis)
    if not chosen:
        return _newest_matching(conn, match_any(present), visible, limit)
    return _ranked(conn, match_own_or_context(chosen), visible, limit, column_weights)


def _counts(conn: Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """How many memories there are, and how many contain each term, each counted only up
    to MATCH_BUDGET + 1: one statement, no BM25. Past the budget the exact number changes
    nothing (a term over it is never affordable, a store over it is always budgeted), and
    counting stops there: a term in most of 100k memories took 4.5 ms to count whole and
    takes 0.3 ms to count this far; the store's size 0.8 → 0.15 ms."""
    params: dict[str, object] = {f"t{i}": match_any([term]) for i, term in enumerate(terms)}
    params["cap"] = MATCH_BUDGET + 1
    counts = ", ".join(
        "(SELECT count(*) FROM (SELECT 1 FROM memories_fts "
        f"WHERE memories_fts MATCH :t{i} LIMIT :cap))"
        for i in range(len(terms))
    )
    total = "(SELECT count(*) FROM (SELECT 1 FROM memories LIMIT :cap))"
    (row,) = cursor_rows(conn, f"SELECT {total}, {counts}", params)
    return int(row[0]), {term: int(row[i + 1]) for i, term in enumerate(terms)}


def _ranked(
    conn: Connection,
    match: str,
    visible: VisibleSql,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> list[tuple[int, float]]:
    weights = ", ".join(f"{w:g}" for w in column_weights)
    bm25 = f"bm25(memories_fts, {weights})"
    # BM25 on the FTS table alone, then visibility on the best few only: joining every
    # match would double the cost of a common word. Each of the best comes back with a
    # flag saying whether the caller may see it.
    k = limit * FTS_FIRST_FACTOR
    best = (
        f"SELECT rowid AS id, {bm25} AS rank FROM memories_fts "
        "WHERE memories_fts MATCH :match ORDER BY rank LIMIT :k"
    )
    rows = cursor_rows(
        conn,
        f"SELECT best.id, best.rank, memories.id IS NOT NULL FROM ({best}) AS best "
        f"LEFT OUTER JOIN memories ON memories.id = best.id AND ({visible.sql}) "
        "ORDER BY best.rank",
        {**visible.params, "match": match, "k": k},
    )
    hits = [(row[0], -float(row[1])) for row in rows if row[2]][:limit]
    if len(hits) < limit and len(rows) == k:
        # Too few of the best are visible (filters, other agents' memories): rank every
        # visible match instead.
        rows = cursor_rows(
            conn,
            f"SELECT memories.id, {bm25} {_MATCHING} "
            f"WHERE memories_fts MATCH :match AND ({visible.sql}) ORDER BY {bm25} LIMIT :limit",
            {**visible.params, "match": match, "limit": limit},
        )
        hits = [(row[0], -float(row[1])) for row in rows]
    return hits


def _newest_matching(
    conn: Connection, match: str, visible: VisibleSql, limit: int
) -> list[tuple[int, float]]:
    newest = _visible_matches(conn, match, visible, limit, "ORDER BY memories_fts.rowid DESC")
    return [(memory_id, 0.0) for memory_id in newest]


def holding_phrase(conn: Connection, words: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories holding `words` as a phrase (`gen-0042`: "gen" then "0042"), in no
    order. No BM25 and no cost guard: the phrase's rarest word keeps it cheap even when
    its other words are in every memory."""
    # A memory's own words only: an identifier in its context (store/write_context.py) is
    # one the memory written before it holds, and counting it would make it look common.
    return _visible_matches(conn, f"{{key value tags}} : {phrase(words)}", visible_sql(vis), limit)


def _visible_matches(
    conn: Connection, match: str, visible: VisibleSql, limit: int, order: str = ""
) -> list[int]:
    rows = cursor_rows(
        conn,
        f"SELECT memories.id {_MATCHING} WHERE memories_fts MATCH :match AND ({visible.sql}) "
        f"{order} LIMIT :limit",
        {**visible.params, "match": match, "limit": limit},
    )
    return [row[0] for row in rows]


def keyed(conn: Connection, key: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories whose key is `key`, ignoring case."""
    visible = visible_sql(vis)
    rows = cursor_rows(
        conn,
        f'SELECT memories.id FROM memories WHERE lower(memories."key") = lower(:key) '
        f"AND ({visible.sql}) LIMIT :limit",
        {**visible.params, "key": key, "limit": limit},
    )
    return [row[0] for row in rows]
