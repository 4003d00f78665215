"""Keyword search on PostgreSQL: the generated `search_text` tsvector and its GIN index
(store/postgres/ddl.py). The same contract as store/fulltext.py (SQLite FTS5): the
caller's visibility and filters are part of the statement, so they apply before the cut."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Float, column, func, literal, literal_column, select
from sqlalchemy.dialects.postgresql import ARRAY, REAL
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import Visibility
from memory_mcp.store.postgres.ddl import TS_CONFIG
from memory_mcp.store.rows import MEMORIES, M, visible_to

SEARCH_TEXT: ColumnElement[Any] = column("search_text")
# A memory's own words in search_text: key, value, tags (weights A-C), not its context (D).
OWN_WEIGHTS: ColumnElement[Any] = literal_column("'{a,b,c}'::\"char\"[]")
# A search's keyword arm asks up to three statements with one visibility: built once.
_visible = lru_cache(maxsize=8)(visible_to)


def _any_term(terms: Sequence[str]) -> ColumnElement[Any]:
    """A tsquery matching any of `terms`, each parsed as plain text (no query syntax)."""
    query: ColumnElement[Any] = func.plainto_tsquery(TS_CONFIG, terms[0])
    for term in terms[1:]:
        query = query.op("||")(func.plainto_tsquery(TS_CONFIG, term))
    return query


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
    query = _any_term(terms)
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


def holding_phrase(conn: Connection, words: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories holding `words` as a phrase, in no order (the caller checks the
    identifier verbatim). Their own words only (weights A-C), not their context, as on
    SQLite (store/fulltext.holding_phrase)."""
    query = func.phraseto_tsquery(TS_CONFIG, words)
    own = func.ts_filter(SEARCH_TEXT, OWN_WEIGHTS)
    stmt = (
        select(M.id)
        .select_from(MEMORIES)
        .where(SEARCH_TEXT.op("@@")(query), own.op("@@")(query), _visible(vis))
        .limit(limit)
    )
    return [row[0] for row in conn.execute(stmt)]


def keyed(conn: Connection, key: str, vis: Visibility, limit: int) -> list[int]:
    """Visible memories whose key is `key`, ignoring case."""
    stmt = select(M.id).where(func.lower(M.key) == func.lower(key), _visible(vis)).limit(limit)
    return [row[0] for row in conn.execute(stmt)]


__all__ = ["holding_phrase", "keyed", "keyword_search"]
