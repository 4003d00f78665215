"""Contradiction candidates at write time, without a model: of the memories the
near-duplicate check found close to the one just stored (semantic/similar.py: a cosine
that stands out from the background), those of the same owner and project, still
current, that differ where it matters:

- a number: "port 8443" / "port 9443" (each holds a number the other does not);
- a date: "on Tuesday" / "on Thursday", "in May" / "in June";
- a negation: "we use Docker" / "we no longer use Docker";
- another value for the same subject: "the user's editor is Neovim" / "... is VS Code":
  most of the words shared, one to three words on each side different, of which at least
  one on each side is a name or an identifier (a capital inside the sentence, a digit,
  a dot, dash or underscore), so that a paraphrase ("run the tests with make test" /
  "to run the tests use make test") is not one.

Each is named in memory-store's answer under `conflicts`, with the call that would close
the old one's window (rules/validity.py): a `supersedes` link from the new memory. A
wrong candidate costs the agent tokens and a look, so the rules keep to plain differences
and stay quiet otherwise (precision and recall on a labelled set of pairs:
bench/conflicts.py, docs/lab/conflicts.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.models import MemoryRecord
from memory_mcp.semantic.similar_check import ConflictCandidate, SimilarCheck
from memory_mcp.store.keyword import STOPWORDS

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore

_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?![\w.]*[a-z])", re.IGNORECASE)
_DATE = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|"
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
# Share of the words two statements of one subject have in common, at least.
MIN_SHARED = 0.4


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
    old_numbers, new_numbers = _numbers(old), _numbers(new)
    if old_numbers - new_numbers and new_numbers - old_numbers:
        return Difference(
            "number", _listed(old_numbers - new_numbers), _listed(new_numbers - old_numbers)
        )
    old_dates, new_dates = _dates(old), _dates(new)
    if old_dates - new_dates and new_dates - old_dates:
        return Difference("date", _listed(old_dates - new_dates), _listed(new_dates - old_dates))
    old_words, new_words = _words(old), _words(new)
    if _negated(old) != _negated(new) and _shared(old_words, new_words) >= MIN_SHARED:
        return Difference("negation", "", "")
    gone, came = old_words.keys() - new_words.keys(), new_words.keys() - old_words.keys()
    if (
        1 <= len(gone) <= MAX_CHANGED_WORDS
        and 1 <= len(came) <= MAX_CHANGED_WORDS
        and _shared(old_words, new_words) >= MIN_SHARED
        and any(old_words[w] for w in gone)
        and any(new_words[w] for w in came)
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


def _numbers(text: str) -> set[str]:
    return {number.replace(",", "") for number in _NUMBER.findall(text)}


def _dates(text: str) -> set[str]:
    return {word.lower() for word in _DATE.findall(text)}


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def _words(text: str) -> dict[str, bool]:
    """Content words, lower-cased, each with whether it reads as a name or identifier."""
    words: dict[str, bool] = {}
    for match in _WORD.finditer(text):
        word = match.group(0)
        lowered = word.lower().strip(".-/")
        if not lowered or lowered in STOPWORDS:
            continue
        start = match.start()
        inside = start > 0 and not re.search(r"[.!?:]\s*$", text[:start])
        name = (inside and word[0].isupper()) or bool(re.search(r"[\d._\-/]", word))
        words[lowered] = words.get(lowered, False) or name
    return words


def _shared(old: dict[str, bool], new: dict[str, bool]) -> float:
    both = old.keys() | new.keys()
    return len(old.keys() & new.keys()) / len(both) if both else 0.0


def _listed(values: set[str]) -> str:
    return ", ".join(sorted(values))


__all__ = ["Difference", "conflicts_of", "difference"]
