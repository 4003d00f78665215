"""PostgreSQL's KeywordIndex (store/keyword.py): the generated `search_text` tsvector and
its GIN index (store/postgres/ddl.py). The same contract as store/sqlite/fts5.py: the
caller's visibility and filters are part of the statement, so they apply before the cut."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    Connection,
    Float,
    Text,
    cast,
    column,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, REAL
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import Visibility
from memory_mcp.store.keyword import MATCH_BUDGET, OWN_COLUMNS, affordable_terms
from memory_mcp.store.memories_table import MEMORIES, M, visible_to
from memory_mcp.store.postgres.ddl import TS_CONFIG

SEARCH_TEXT: ColumnElement[Any] = column("search_text")
# A memory's own words in search_text: key, value, tags (weights A-C), not its context (D).
OWN_WEIGHTS: ColumnElement[Any] = literal_column("'{a,b,c}'::\"char\"[]")
# A search's keyword arm asks up to three statements with one visibility: built once.
_visible = lru_cache(maxsize=8)(visible_to)


# For the rest of the keyword arm's transaction (set in `_counts`' round trip, after that
# statement is planned): no sequential scan of memories. The planner costs `@@` as one
# operator call, not the read of each row's out-of-line tsvector it is, so a query whose
# words it estimates in ~10% of the rows is planned as a scan of every row testing `@@`:
# at 100k memories (bench scale) 847 ms and 300k buffers for 12k matches, where the GIN
# index's bitmap reads only the matches (docs/lab/postgres-at-scale.md).
GIN_ONLY: ColumnElement[Any] = literal_column("set_config('enable_seqscan', 'off', true)")


def _any_term(terms: Sequence[str]) -> ColumnElement[Any]:
    """A tsquery matching any of `terms`, each parsed as plain text (no query syntax)."""
    query: ColumnElement[Any] = func.plainto_tsquery(TS_CONFIG, terms[0])
    for term in terms[1:]:
        query = query.op("||")(func.plainto_tsquery(TS_CONFIG, term))
    return query


def keyword_hits(
    conn: Connection,
    terms: Sequence[str],
    vis: Visibility,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> tuple[list[tuple[int, float]], set[int]]:
    """keyword_search's hits, and those of them whose own words (key, value, tags) hold a
    query term (ts_filter on the hits' own search_text: no second index scan)."""
    hits = keyword_search(conn, terms, vis, limit, column_weights)
    return hits, holding_terms(conn, terms, [i for i, _ in hits], OWN_COLUMNS)


def keyword_search(
    conn: Connection,
    terms: Sequence[str],
    vis: Visibility,
    limit: int,
    column_weights: tuple[float, float, float, float],
) -> list[tuple[int, float]]:
    """(id, ts_rank relevance, larger is better) of visible memories with any of `terms`.
    The context (store/write_context.py) is weight class D; ts_rank has no IDF, so what
    FTS5 gets from matching it as a phrase of its own, this has already."""
    if not terms:
        return []
    total, matches = _counts(conn, terms, vis)
    chosen = list(terms)
    if total > MATCH_BUDGET:
        # Like SQLite (store/sqlite/fts5.py), the terms of a big store that weigh least are
        # left out of the ranking: the rarest first while their estimated matches add up
        # to the budget. A term under every common lexeme (estimate 0) is always ranked.
        # Each common term within the budget alone was not enough: 11 of them, each in
        # ~1-2.5% of 100k memories, matched 12k, ranked in 360-850 ms (docs/lab).
        rare = [term for term in terms if matches[term] == 0]
        common = {term: count for term, count in matches.items() if count > 0}
        affordable = set(affordable_terms(common, MATCH_BUDGET))
        chosen = [term for term in terms if term in rare or term in affordable]
        if not chosen:
            return _newest_matching(conn, terms, vis, limit)
    query = _any_term(chosen)
    top = max(column_weights) or 1.0
    key, value, tags, context = (w / top for w in column_weights)  # ts_rank wants [0, 1]
    weights = literal([context, tags, value, key], ARRAY(REAL))
    rank = func.ts_rank(weights, SEARCH_TEXT, query, type_=Float)
    stmt = (
        select(M.id, rank)
        .select_from(MEMORIES)
        .where(SEARCH_TEXT.op("@@")(query), _visible(vis))
        .order_by(rank.desc(), M.id.desc())
        .limit(limit)
    )
    return [(row[0], float(row[1])) for row in conn.execute(stmt)]


def _counts(conn: Connection, terms: Sequence[str], vis: Visibility) -> tuple[int, dict[str, int]]:
    """How many memories the search may see (counted up to MATCH_BUDGET + 1: a project
    within the budget ranks every term, as it would alone in a store), and, over it,
    about how many hold each term: from the most common lexemes and their
    frequencies that ANALYZE keeps for search_text (`_CommonLexemes`, 10,000 of them:
    ddl.py); a lexeme not among them counts 0 (rarer than every one of them: under
    ~1,500 memories of 1M real texts, bench scale).
    ts_rank reads every matching row's tsvector: at 1M memories a search whose words
    matched 47k rows took 130 ms to rank. Counting the matches as SQLite does (up to the
    budget) read ~2,500 rows a common word: 58 ms a search (load 10); asking the planner
    for its estimate of each term, 16 ms; this is one statement (the terms' lexemes).
    What the search may see within the budget ranks every term, exactly as before."""
    cap = MATCH_BUDGET + 1
    capped = select(literal(1)).select_from(MEMORIES).where(_visible(vis)).limit(cap).subquery()
    lexemes = [
        cast(func.plainto_tsquery(TS_CONFIG, term), Text).label(f"t{i}")
        for i, term in enumerate(terms)
    ]
    row = conn.execute(
        select(select(func.count()).select_from(capped).scalar_subquery(), *lexemes, GIN_ONLY)
    ).one()
    total = int(row[0])
    if total <= MATCH_BUDGET:
        return total, {}
    common = _COMMON.setdefault(str(conn.engine.url), _CommonLexemes()).get(conn)
    return total, {term: common.estimate(row[i + 1]) for i, term in enumerate(terms)}


class _CommonLexemes:
    """pg_stats' most common lexemes of search_text with their share of the rows, and
    the table's row estimate: read at most every STATS_SECONDS (ANALYZE changes them
    only as the table grows)."""

    def __init__(self) -> None:
        self._read_at = -STATS_SECONDS
        self._rows: dict[str, float] = {}

    def get(self, conn: Connection) -> _CommonLexemes:
        now = time.monotonic()
        if now - self._read_at >= STATS_SECONDS:
            stats = conn.execute(_STATS).first()
            self._rows = {}
            if stats is not None and stats[0] is not None:
                self._rows = {
                    lexeme: share * float(stats[2] or 0)
                    for lexeme, share in zip(stats[0], stats[1], strict=False)
                }
            self._read_at = now
        return self

    def estimate(self, query_text: str | None) -> int:
        """Memories holding every lexeme of a term's tsquery text ('a' & 'b'): the
        rarest one's count."""
        words = re.findall(r"'((?:[^']|'')*)'", query_text or "")
        if not words:
            return 0
        return int(min(self._rows.get(word.replace("''", "'"), 0.0) for word in words))


STATS_SECONDS = 600.0
_COMMON: dict[str, _CommonLexemes] = {}  # by database
_STATS = text(
    "SELECT most_common_elems::text::text[], most_common_elem_freqs, "
    "(SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) "
    "FROM pg_stats WHERE schemaname = current_schema() "
    "AND tablename = 'memories' AND attname = 'search_text'"
)


def _newest_matching(
    conn: Connection, terms: Sequence[str], vis: Visibility, limit: int
) -> list[tuple[int, float]]:
    """Even the rarest term is in more memories than the budget: the newest visible
    matching memories, unranked (relevance 0), for the vector arm to rank by meaning."""
    stmt = (
        select(M.id)
        .select_from(MEMORIES)
        .where(SEARCH_TEXT.op("@@")(_any_term(terms)), _visible(vis))
        .order_by(M.id.desc())
        .limit(limit)
    )
    return [(row[0], 0.0) for row in conn.execute(stmt)]


def holding_phrase(conn: Connection, words: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories holding `words` as a phrase, in no order (the caller checks the
    identifier verbatim). Their own words only (weights A-C), not their context, as on
    SQLite (store/sqlite/fts5.holding_phrase)."""
    query = func.phraseto_tsquery(TS_CONFIG, words)
    own = func.ts_filter(SEARCH_TEXT, OWN_WEIGHTS)
    stmt = (
        select(M.id)
        .select_from(MEMORIES)
        .where(SEARCH_TEXT.op("@@")(query), own.op("@@")(query), _visible(vis))
        .limit(limit)
    )
    return [row[0] for row in conn.execute(stmt)]


# The weight classes of key, value and tags in search_text (ddl.py).
_WEIGHT_OF = {"key": "a", "value": "b", "tags": "c"}


def holding_terms(
    conn: Connection, terms: Sequence[str], memory_ids: Sequence[int], columns: Sequence[str]
) -> set[int]:
    """Of `memory_ids`, those whose `columns` (of key, value, tags) hold any of `terms`:
    the same contract as on SQLite (store/sqlite/fts5.holding_terms)."""
    if not terms or not memory_ids:
        return set()
    weights = ",".join(_WEIGHT_OF[name] for name in columns)
    held = func.ts_filter(SEARCH_TEXT, literal_column(f"'{{{weights}}}'::\"char\"[]"))
    stmt = select(M.id).where(M.id.in_(list(memory_ids)), held.op("@@")(_any_term(terms)))
    return {row[0] for row in conn.execute(stmt)}


def keyed(conn: Connection, key: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories whose key is `key`, ignoring case."""
    stmt = select(M.id).where(func.lower(M.key) == func.lower(key), _visible(vis)).limit(limit)
    return [row[0] for row in conn.execute(stmt)]


__all__ = ["holding_phrase", "holding_terms", "keyed", "keyword_hits", "keyword_search"]
