"""Contradiction candidates at write time, without a model: of the memories the
near-duplicate check found close to the one just stored (semantic/similar.py: a cosine
that stands out from the background), those of the same owner and project, still
current, that differ where it matters:

- a number: "port 8443" / "port 9443" (each holds a number the other does not);
- a date: "on Tuesday" / "on Thursday", "in May" / "in June";
- a negation: "we use Docker" / "we no longer use Docker";
- another value for the same subject: "the user's editor is Neovim" / "... is VS Code":
  most of the words shared, one to three words on each side different, of which at least
  one on each side is a name or an identifier (a capital letter, a digit,
  a dot, dash or underscore; one word each side when only one side's is), so that a
  paraphrase ("run the tests with make test" / "to run the tests use make test") is not
  one; or a preference turned round ("tabs over spaces" / "spaces over tabs").

A number or a date counts only between statements of one subject: mostly the same words,
and no name changed on both sides ("PostgreSQL runs on 5433" and "Redis runs on 6380" are
two facts).

Each is named in store_memory's answer under `conflicts`, with the call that would close
the old one's window (rules/validity.py): a `supersedes` link from the new memory. A
wrong candidate costs the agent tokens and a look, so the rules keep to plain differences
and stay quiet otherwise (precision and recall on a labelled set of pairs:
bench/conflicts.py, docs/lab/facts-that-change.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.models import MemoryRecord
from memory_mcp.semantic.similar_check import ConflictCandidate, SimilarCheck
from memory_mcp.store.keyword import STOPWORDS

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

_NUMBER = re.compile(r"(?<![\w.\-/])\d+(?:[.,:]\d+)*(?![\w.]*[a-z])", re.IGNORECASE)
_DATE = re.compile(
    r"\b(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?|today|tomorrow|"
    r"yesterday|january|february|march|april|may|june|july|august|september|october|"
    r"november|december)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|cannot|without|stopped|instead|neither|nor|"
    r"no\s+longer|any\s+more|anymore)\b|n't\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z0-9][\w.\-/]*[\w]|[A-Za-z0-9]")
# Words of at most this many on each side may differ for "another value".
MAX_CHANGED_WORDS = 3
# Share of the words two statements of one subject have in common, at least; for a
# negation to be the difference, more ("tabs, not spaces" restates "tabs over spaces").
MIN_SHARED = 0.4
MIN_NEGATION_SHARED = 0.6
# A statement of at most this many words is an agent's fact, whose first word is often
# its subject (a name: "Redis runs on port 6380").
SHORT_STATEMENT_WORDS = 15
# "X over Y", "X, not Y", "X rather than Y", "X instead of Y": a preference's order.
_PREFERENCE = re.compile(
    r"\b([\w.+#-]+),?\s+(?:over|not|rather\s+than|instead\s+of|than|vs\.?|versus)\s+"
    r"([\w.+#-]+)",
    re.IGNORECASE,
)
# Capitalised at a sentence's start, yet no name.
_NOT_NAMES = frozenset("always never often sometimes usually also only please".split())
# "X, not Y" is a preference, not a negation.
_CONTRAST = re.compile(r",\s*not\s+\w", re.IGNORECASE)


@dataclass(frozen=True)
class Difference:
    kind: str  # "number", "date", "negation", "value"
    old: str
    new: str

    def said(self) -> str:
        if self.kind == "negation":
            return "one of them negates the other"
        return f"another {self.kind}: {self.old} -> {self.new}"


def difference(old: str, new: str) -> Difference | None:
    """Where statement `new` differs from `old` in a way that makes them disagree."""
    old_words, new_words = _words(old), _words(new)
    # The words besides the values (numbers, dates) that one has and the other not.
    gone = {w for w in old_words.keys() - new_words.keys() if not _value_word(w)}
    came = {w for w in new_words.keys() - old_words.keys() if not _value_word(w)}
    names = any(old_words[w] for w in gone) + any(new_words[w] for w in came)
    # Of one subject: mostly the same words, and no name changed on both sides
    # ("PostgreSQL on 5433" / "Redis on 6380" are two subjects).
    same_subject = _shared(old_words, new_words) >= MIN_SHARED and names < 2
    old_numbers, new_numbers = _numbers(old), _numbers(new)
    if same_subject and old_numbers - new_numbers and new_numbers - old_numbers:
        return Difference(
            "number", _listed(old_numbers - new_numbers), _listed(new_numbers - old_numbers)
        )
    old_dates, new_dates = _dates(old), _dates(new)
    if same_subject and old_dates - new_dates and new_dates - old_dates:
        return Difference("date", _listed(old_dates - new_dates), _listed(new_dates - old_dates))
    swapped = _preferences(old) & {(b, a) for a, b in _preferences(new)}
    if swapped:
        a, b = sorted(swapped)[0]
        return Difference("value", f"{a} over {b}", f"{b} over {a}")
    if _negated(old) != _negated(new) and _shared(old_words, new_words) >= MIN_NEGATION_SHARED:
        return Difference("negation", "", "")
    limit = MAX_CHANGED_WORDS if names == 2 else 1
    if (
        names
        and not (old_numbers ^ new_numbers)  # a name and a number changed: two subjects
        and 1 <= len(gone) <= limit
        and 1 <= len(came) <= limit
        and _shared(old_words, new_words) >= MIN_SHARED
    ):
        return Difference("value", _listed(gone), _listed(came))
    return None


async def conflicts_of(
    store: MemoryStore, record: MemoryRecord, check: SimilarCheck
) -> list[ConflictCandidate]:
    """The memories of `check` (close to `record`, just written) that it may contradict."""
    if not check.memories:
        return []
    others = await store.fetch_many([memory.id for memory in check.memories])
    found = []
    for memory in check.memories:
        other = others.get(memory.id)
        if (
            other is None
            or other.agent_id != record.agent_id
            or other.project != record.project
            or other.valid_to is not None
        ):
            continue
        why = difference(other.value, record.value)
        if why is not None:
            found.append(
                ConflictCandidate(
                    other.id,
                    other.key,
                    why.said(),
                    f'memory-link(id={record.id}, to={other.id}, relation="supersedes")',
                )
            )
    return found


def _value_word(word: str) -> bool:
    return bool(_DATE.fullmatch(word)) or bool(re.fullmatch(r"[\d.,:]+", word))


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


def _dates(text: str) -> set[str]:
    return {word.lower() for word in _DATE.findall(text)}


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(_CONTRAST.sub(" ", text)))


def _preferences(text: str) -> set[tuple[str, str]]:
    return {(a.lower(), b.lower()) for a, b in _PREFERENCE.findall(text)}


def _words(text: str) -> dict[str, bool]:
    """Content words, lower-cased, each with whether it reads as a name or identifier."""
    words: dict[str, bool] = {}
    short = len(text.split()) <= SHORT_STATEMENT_WORDS
    for match in _WORD.finditer(text):
        word = match.group(0)
        lowered = word.lower().strip(".-/")
        if not lowered or lowered in STOPWORDS:
            continue
        # A capital inside a sentence, a digit, a dot, dash, underscore or slash; a short
        # statement's first word too ("Redis runs on 6380": its subject), not a long
        # message's ("So I ...").
        first = not re.search(r"\w", text[: match.start()].rsplit(".", 1)[-1])
        capital = word[0].isupper() and (not first or short)
        name = capital or bool(re.search(r"[\d._\-/]", word))
        name = name and lowered not in _NOT_NAMES and not _NEGATION.fullmatch(lowered)
        words[lowered] = words.get(lowered, False) or name
    return words


def _shared(old: dict[str, bool], new: dict[str, bool]) -> float:
    """The share of the words (not the values: numbers, dates) the two have in common."""
    old_words = {w for w in old if not _value_word(w)}
    new_words = {w for w in new if not _value_word(w)}
    both = old_words | new_words
    return len(old_words & new_words) / len(both) if both else 0.0


def _listed(values: set[str]) -> str:
    return ", ".join(sorted(values))


__all__ = ["Difference", "conflicts_of", "difference"]
