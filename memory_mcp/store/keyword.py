"""The keyword arm: a user's query as terms, the cost budget, and `KeywordIndex`, the port
each database implements (store/sqlite/fts5.py on FTS5, store/postgres/tsvector.py on a
tsvector); the store's Dialect names which one (store/dialect.py).

How the terms become the index's own query syntax is the index's business
(store/sqlite/match.py for FTS5, plainto_tsquery on PostgreSQL)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from memory_mcp.models import Visibility

# Words whose presence says nothing about which memory is meant. Removing them keeps
# BM25 from ranking on "what", "did", "the"; they are kept when nothing else is left.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don ll ve re d m o y also ever get got would could might shall must let us""".split()
)

# A memory's own columns in the keyword index; its fourth, `context`, holds the words of
# the 3 memories written just before it and the 4 just after it in its session
# (store/write_context.py).
OWN_COLUMNS = ("key", "value", "tags")
# BM25 column weights for (key, value, tags, context): a hit in the key or a tag says more
# than one word somewhere in a long value; one in its context (store/write_context.py)
# says less (LOO on the LoCoMo dev split chose 0.7 in
# four folds, 1.0 in one, of 0.5-2: docs/RETRIEVAL.md, "write-time context").
KEYWORD_COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 0.7)

_TOKEN = re.compile(r"\w+(?:[-_.:/']\w+)*", re.UNICODE)

# Memories whose terms one search may read: ~1.5 microseconds each here, so ~4 ms, well
# inside the query embedding that the keyword arm runs beside (20,000 made a search with
# common words take 30 ms at 10k memories; 5,000 still 8 ms of a 15 ms budget). Left out
# are terms in more than a quarter of a 10k store, which weigh little in BM25
# (store/sqlite/fts5.py). Both databases' indexes keep to it.
MATCH_BUDGET = 2_500


class KeywordIndex(Protocol):
    """A database's keyword index, on a connection of a read transaction (Engines.read).
    Every call applies the caller's visibility inside its statement, before any cut; none
    writes. Its implementations are modules (store/sqlite/fts5.py,
    store/postgres/tsvector.py): their functions are the methods, without `self`."""

    def keyword_hits(
        self,
        conn: Connection,
        terms: Sequence[str],
        vis: Visibility,
        limit: int,
        column_weights: tuple[float, float, float, float],
    ) -> tuple[list[tuple[int, float]], set[int]]:
        """(id, relevance, larger is better) of visible memories holding any of `terms`
        (from `query_terms`), best first, at most `limit` (`column_weights` weigh a match
        in the key, value, tags and context); and the ids of those whose own words (key,
        value, tags) hold a term: the others were found by their context alone."""
        ...

    def holding_phrase(
        self, conn: Connection, words: str, vis: Visibility, limit: int
    ) -> list[int]:
        """Visible memories whose own words hold `words` as a phrase, in no order."""
        ...

    def holding_terms(
        self,
        conn: Connection,
        terms: Sequence[str],
        memory_ids: Sequence[int],
        columns: Sequence[str],
    ) -> set[int]:
        """Of `memory_ids`, those whose `columns` (of key, value, tags) hold any of `terms`."""
        ...

    def keyed(self, conn: Connection, key: str, vis: Visibility, limit: int) -> list[int]:
        """Visible memories whose key is `key`, ignoring case."""
        ...


def query_terms(query: str) -> list[str]:
    """Distinct query words in order, lower-cased, stopwords removed unless nothing is left."""
    tokens: list[str] = []
    for token in _TOKEN.findall(query.lower()):
        token = token.replace("'", "")
        if token and token not in tokens:
            tokens.append(token)
    content = [t for t in tokens if t not in STOPWORDS]
    return content or tokens


def affordable_terms(matches: dict[str, int], budget: int) -> list[str]:
    """The terms to rank by, rarest first, while the memories they match stay within
    `budget` (FTS5 computes BM25 for every matching memory, ~1 microsecond each). The terms
    left out are the most common ones: they weigh least in BM25 (a term in half of all
    memories weighs nothing), and the vector arm still judges every candidate's meaning.
    An empty list means that even the rarest term is over budget."""
    chosen: list[str] = []
    total = 0
    for term in sorted((t for t in matches if matches[t] > 0), key=lambda t: matches[t]):
        if total + matches[term] > budget:
            break
        chosen.append(term)
        total += matches[term]
    return chosen
