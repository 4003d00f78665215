"""Turning a user's query into an FTS5 MATCH expression, safely.

User text never reaches FTS5 syntax directly: each word becomes a quoted phrase, so
operators (AND, NEAR, *, column filters) in a query are plain words, and an identifier
such as `ERR_CONN_42` or `api.v2/users` stays one phrase whose parts must be adjacent."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
# the memories written just before it (store/write_context.py).
OWN_COLUMNS = ("key", "value", "tags")
# BM25 column weights for (key, value, tags, context): a hit in the key or a tag says more
# than one word somewhere in a long value; one in the words of the memories written just
# before it (store/write_context.py) says less (LOO on the LoCoMo dev split chose 0.7 in
# four folds, 1.0 in one, of 0.5-2: docs/RETRIEVAL.md, "write-time context").
KEYWORD_COLUMN_WEIGHTS = (2.0, 1.0, 1.5, 0.7)

_TOKEN = re.compile(r"\w+(?:[-_.:/']\w+)*", re.UNICODE)

# The keyword index's tokenizer (store/schema.py's FTS5 tables), and the token that names a
# memory's project in it: here, beside the queries, so that the reads on the standard
# library (store/sqlite_reads.py) search without importing SQLAlchemy's schema.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


def project_token(project: str) -> str:
    """The keyword index's token for `project` (as schema.py's `_TOKEN` writes it)."""
    return "x" + project.encode().hex()


def query_terms(query: str) -> list[str]:
    """Distinct query words in order, lower-cased, stopwords removed unless nothing is left."""
    tokens: list[str] = []
    for token in _TOKEN.findall(query.lower()):
        token = token.replace("'", "")
        if token and token not in tokens:
            tokens.append(token)
    content = [t for t in tokens if t not in STOPWORDS]
    return content or tokens


def match_any(terms: Sequence[str]) -> str:
    """An OR of quoted phrases (BM25 rewards memories that match more and rarer terms).
    Terms come from `query_terms`, which never contain a double quote."""
    return " OR ".join(f'"{term}"' for term in terms)


def match_own_or_context(terms: Sequence[str]) -> str:
    """`match_any` over a memory's own words (key, value, tags) OR its context words
    (store/write_context.py), as separate phrases: FTS5 gives each phrase its own IDF, so
    the words a memory lends to the next ones in its session do not make them look
    common (in a store of 8 memories, one word lent to four neighbours had an IDF of ~0)."""
    terms_match = match_any(terms)
    return f"{{key value tags}} : ({terms_match}) OR {{context}} : ({terms_match})"


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


def phrase(text: str) -> str:
    """Any text as one FTS5 phrase: its words, adjacent and in order (a double quote inside
    is doubled, FTS5's escape, so no text can become syntax)."""
    return '"' + text.replace('"', '""') + '"'
