"""Exact matches first: a memory whose key is the query, or that holds an identifier of the
query verbatim, ranks above every memory that is only similar.

Fusion (search/ranking.py) weighs meaning 0.7 and words 0.3, so a memory found only by its words
can lose to loosely related ones: in a store of 2,000 memories keyed gen-0000..gen-1999,
the key gen-0042 was not in the top 50 for the query "gen-0042". Someone who types a key
or an identifier means that thing, so exactness is a rank of its own:

    level 2  the memory's key is the whole query (case-insensitive)
    level 1  an identifier of the query appears in its key or value, case-insensitive and
             not inside a longer word, and the identifier is rare: found in at most
             IDENTIFIER_MAX_MATCHES of the memories the search may return
    level 0  everything else

Results are ordered by level, then by the usual score. Scores stay in [0, 1] and in the
order of the results: with `top` the highest level among this search's results,
score = (level + score) / (top + 1). A search without exact matches is unchanged.

An identifier is a query word that no English sentence is made of: one with an underscore
(ERR_CONN_42), letters and digits (v2, sha256; not a quantity such as 15th or 5K), digits
joined by `.-:/` (1.2.3, 2024-05-01, gen-0042), a dot between longer parts
(PaymentService.refund, node.js; not U.S or e.g), or a lower-case letter followed by an
upper-case one (getUser, PaymentService). Hyphenated words (self-care), capitalised or
all-capital words and plain numbers are not identifiers."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, TypeVar

from memory_mcp.models import MemoryRecord, Ranked

# An identifier found in more memories than this is not what singles one out: the usual
# ranking orders them.
IDENTIFIER_MAX_MATCHES = 50
# Memories with the query as their key (one per scope and owner in practice).
KEY_MAX_MATCHES = 50
# Each identifier costs one FTS5 phrase query.
MAX_IDENTIFIERS = 8
MAX_KEY_CHARS = 256  # validation.MAX_KEY_CHARS: a longer query cannot be a key

# Words joined by the characters identifiers are made with; no apostrophe (don't, Anna's).
_TOKEN = re.compile(r"\w+(?:[-.:/]\w+)*")
# A number with a unit or an ordinal suffix: 15th, 5K, 10am, 64GB.
_QUANTITY = re.compile(r"\d+[^\W\d_]{1,3}")


def is_identifier(token: str) -> bool:
    """Whether a query word looks like an identifier rather than English (module docstring)."""
    has_digit = any(ch.isdigit() for ch in token)
    has_letter = any(ch.isalpha() for ch in token)
    if not (has_digit or has_letter):
        return False
    if "_" in token:
        return True
    if has_digit and has_letter and not _QUANTITY.fullmatch(token):
        return True
    if has_digit and any(ch in "-.:/" for ch in token):
        return True
    if "." in token and any(len(part) > 1 for part in re.split(r"[-.:/]", token)):
        # Every part one letter long is an abbreviation: U.S, e.g, J.K.
        return True
    return any(a.islower() and b.isupper() for a, b in zip(token, token[1:], strict=False))


def identifier_tokens(query: str) -> list[str]:
    """The identifiers of a query, in order, each once (ignoring case), at most
    MAX_IDENTIFIERS."""
    found: list[str] = []
    seen: set[str] = set()
    for token in _TOKEN.findall(query):
        if is_identifier(token) and token.lower() not in seen:
            seen.add(token.lower())
            found.append(token)
    return found[:MAX_IDENTIFIERS]


@lru_cache(maxsize=256)
def _verbatim(identifier: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(identifier)}(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class ExactLookup:
    key: str | None  # the query, if it could be a key
    identifiers: tuple[str, ...]
    key_limit: int = KEY_MAX_MATCHES
    identifier_limit: int = IDENTIFIER_MAX_MATCHES + 1
    rare_up_to: int = IDENTIFIER_MAX_MATCHES


@dataclass(frozen=True)
class ExactMatches:
    """What one search matches exactly: the key it looks for, its rare identifiers, and the
    ids of the memories that may hold them (to be ranked even if neither arm's pool has
    them)."""

    key: str | None = None
    identifiers: tuple[str, ...] = ()
    candidate_ids: tuple[int, ...] = ()

    def level(self, record: MemoryRecord) -> int:
        if self.key is not None and record.key.lower() == self.key.lower():
            return 2
        for identifier in self.identifiers:
            pattern = _verbatim(identifier)
            if pattern.search(record.key) or pattern.search(record.value):
                return 1
        return 0


def exact_lookup(query: str) -> ExactLookup:
    """What to look up for the query: the memories keyed by it and those holding its
    identifiers, whatever the keyword arm's cost guard and pool cut keep (the phrase
    lookups use no BM25). The store answers in the keyword arm's read (KeywordQuery)."""
    key = query if len(query) <= MAX_KEY_CHARS and "\n" not in query else None
    return ExactLookup(key, tuple(identifier_tokens(query)))


def exact_matches(
    lookup: ExactLookup, holding: list[list[int]], candidate_ids: list[int]
) -> ExactMatches:
    """The exact matches, given those holding each identifier (at most
    `lookup.identifier_limit` each: one more than `rare_up_to` says it is common) and the
    candidates the keyword read chose by the same rule (KeywordFinds.exact_ids, read whole
    there, so each one's level can be judged)."""
    rare = tuple(
        identifier
        for identifier, ids in zip(lookup.identifiers, holding, strict=True)
        if len(ids) <= lookup.rare_up_to
    )
    return ExactMatches(lookup.key, rare, tuple(candidate_ids))


def with_candidates(
    keyword_hits: list[tuple[int, float]], candidate_ids: Sequence[int]
) -> list[tuple[int, float]]:
    """The keyword pool plus the exact candidates it lacks, at the pool's lowest BM25 (they
    hold the query's words; the lowest value leaves the pool's min-max scaling unchanged)."""
    pooled = {memory_id for memory_id, _ in keyword_hits}
    lowest = min((bm25 for _, bm25 in keyword_hits), default=0.0)
    return keyword_hits + [(i, lowest) for i in candidate_ids if i not in pooled]


class Hit(Protocol):
    @property
    def record(self) -> Ranked: ...

    score: float


H = TypeVar("H", bound=Hit)


def exact_first(hits: list[H], level: Callable[[H], int]) -> list[H]:
    """Order by exactness level (`level` of each hit: ExactMatches.level of its record),
    then score (newest, then lowest id, on ties), and fold the level into the score so
    that scores stay in [0, 1] and decrease down the list."""
    levels = {id(hit): level(hit) for hit in hits}
    top = max(levels.values(), default=0)
    if top:
        for hit in hits:
            hit.score = (levels[id(hit)] + hit.score) / (top + 1)
    return sorted(
        hits,
        key=lambda h: (-levels[id(h)], -h.score, -h.record.updated_at, h.record.id),
    )
