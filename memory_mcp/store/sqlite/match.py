"""User text as FTS5 MATCH expressions, safely: it never reaches FTS5 syntax directly.
Each word becomes a quoted phrase, so operators (AND, NEAR, *, column filters) in a query
are plain words, and an identifier such as `ERR_CONN_42` or `api.v2/users` stays one
phrase whose parts must be adjacent."""

from __future__ import annotations

from collections.abc import Sequence

# The keyword index's tokenizer (store/sqlite/ddl.py's FTS5 tables), and the token that
# names a memory's project in it: here, on the standard library, so that the hooks' reads
# (store/sqlite/stdlib_reads.py) search without importing SQLAlchemy.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"


def project_token(project: str) -> str:
    """The keyword index's token for `project` (as ddl.py's `_TOKEN` writes it)."""
    return "x" + project.encode().hex()


def match_any(terms: Sequence[str]) -> str:
    """An OR of quoted phrases (BM25 rewards memories that match more and rarer terms).
    Terms come from `keyword.query_terms`, which never contain a double quote."""
    return " OR ".join(f'"{term}"' for term in terms)


def match_own_or_context(terms: Sequence[str]) -> str:
    """`match_any` over a memory's own words (key, value, tags) OR its context words
    (store/write_context.py), as separate phrases: FTS5 gives each phrase its own IDF, so
    the words a memory lends to the next ones in its session do not make them look
    common (in a store of 8 memories, one word lent to four neighbours had an IDF of ~0)."""
    terms_match = match_any(terms)
    return f"{{key value tags}} : ({terms_match}) OR {{context}} : ({terms_match})"


def phrase(text: str) -> str:
    """Any text as one FTS5 phrase: its words, adjacent and in order (a double quote inside
    is doubled, FTS5's escape, so no text can become syntax)."""
    return '"' + text.replace('"', '""') + '"'
