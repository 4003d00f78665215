"""Where a memory's context words come from is said one way, the code's: the
CONTEXT_BEFORE memories written just before it and the CONTEXT_AFTER just after it in its
session (store/write_context.py). Issue 47: the docs and the descriptions said it three
ways ("written just before it", "the 4 before it", "3 before and 4 after")."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from memory_mcp.results.explanations import ContextLender, ScoreExplanation
from memory_mcp.search.ranking import Relevance
from memory_mcp.store.write_context import CONTEXT_AFTER, CONTEXT_BEFORE

ROOT = Path(__file__).resolve().parents[2]
SAID = (
    f"the {CONTEXT_BEFORE} memories written just before it "
    f"and the {CONTEXT_AFTER} just after it in its session"
)
# Where a reader learns it: the reference docs, and what a model or a reader of a search
# result is told (the result models publish their docstrings in the outputSchema).
DOCS = ["docs/TOOLS.md", "docs/RETRIEVAL.md", "docs/GUIDE.md", "docs/ARCHITECTURE.md"]
DESCRIPTIONS = {
    "ContextLender": ContextLender.__doc__,
    "ScoreExplanation": ScoreExplanation.__doc__,
    "Relevance.matched_by": Relevance.matched_by.__doc__,
}
# Every text a user or a model reads, and the package's own comments and docstrings.
SCANNED = [
    *(d for d in DOCS if d != "docs/RETRIEVAL.md"),
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("memory_mcp/**/*.py")),
]


def flat(text: str) -> str:
    """Words only: line breaks, comment marks and Markdown emphasis do not split a phrase."""
    return " ".join(re.sub(r"(?m)^\s*#+ ?|\*\*", " ", text).split())


@pytest.mark.parametrize("path", DOCS)
def test_each_doc_says_the_codes_figures(path: str) -> None:
    assert SAID in flat((ROOT / path).read_text(encoding="utf-8")), path


@pytest.mark.parametrize("name", sorted(DESCRIPTIONS))
def test_each_description_says_the_codes_figures(name: str) -> None:
    assert SAID in flat(inspect.cleandoc(DESCRIPTIONS[name] or "")), name


@pytest.mark.parametrize("path", SCANNED)
def test_nothing_says_it_another_way(path: str) -> None:
    """No "written just before it" that leaves out the memories after, and no other count
    of those before or after (RETRIEVAL.md's measured alternatives aside: it is not scanned)."""
    text = flat((ROOT / path).read_text(encoding="utf-8"))
    for said in re.finditer(r"(?:written|wrote|said) just before (?:it|them|this one)", text):
        assert "after" in text[said.end() : said.end() + 60].lower(), (
            path,
            text[said.start() - 80 : said.end() + 40],
        )
    for count in re.finditer(
        r"\bthe (\d+) (?:memories )?(?:written |said )?(?:just )?(before|after)\b", text
    ):
        expected = CONTEXT_BEFORE if count.group(2) == "before" else CONTEXT_AFTER
        assert int(count.group(1)) == expected, (path, text[count.start() - 80 : count.end() + 40])
