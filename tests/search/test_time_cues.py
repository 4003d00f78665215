"""Time in the question (search/time_cues.py): a table of expressions, the range each
reads as on a fixed day (Sunday 29 November 2026, 10:00 UTC), and those it must leave
alone; and what it costs a query."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest

from memory_mcp.search.time_cues import find_time_cue, without_cue

NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC).timestamp()


def at(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# (query, expression read, range start, range end); None: open on that side.
FOUND = [
    ("what did we decide last week", "last week", "2026-11-16", "2026-11-23"),
    ("what did I say yesterday about the editor", "yesterday", "2026-11-28", "2026-11-29"),
    ("the deploy two days ago", "two days ago", "2026-11-27", "2026-11-28"),
    ("what changed in May", "in May", "2026-05-01", "2026-06-01"),
    ("the meeting on 3 March", "on 3 March", "2026-03-03", "2026-03-04"),
    ("notes from March 3rd", "March 3rd", "2026-03-03", "2026-03-04"),
    ("the 3rd of March 2025 outage", "the 3rd of March 2025", "2025-03-03", "2025-03-04"),
    ("logs of 2026-03-03", "2026-03-03", "2026-03-03", "2026-03-04"),
    ("on 2026-03-03 we shipped", "on 2026-03-03", "2026-03-03", "2026-03-04"),
    ("what did we do today", "today", "2026-11-29", "2026-11-30"),
    ("the bug from this morning", "this morning", "2026-11-29", "2026-11-30"),
    ("the day before yesterday", "the day before yesterday", "2026-11-27", "2026-11-28"),
    ("the alert last night", "last night", "2026-11-28T18:00", "2026-11-29T06:00"),
    ("decisions this week", "this week", "2026-11-23", "2026-11-30"),
    ("what broke last month", "last month", "2026-10-01", "2026-11-01"),
    ("goals this month", "this month", "2026-11-01", "2026-12-01"),
    ("the plan last year", "last year", "2025-01-01", "2026-01-01"),
    ("budget this year", "this year", "2026-01-01", "2027-01-01"),
    ("the past week", "the past week", "2026-11-22T10:00", None),
    ("in the last 3 days", "in the last 3 days", "2026-11-26T10:00", None),
    ("over the past two weeks", "over the past two weeks", "2026-11-15T10:00", None),
    ("in the last 12 hours", "in the last 12 hours", "2026-11-28T22:00", None),
    ("a week ago", "a week ago", "2026-11-18T22:00", "2026-11-25T22:00"),
    ("an hour ago", "an hour ago", "2026-11-29T08:00", "2026-11-29T10:00"),
    ("a couple of days ago", "a couple of days ago", "2026-11-27", "2026-11-28"),
    ("last Friday's standup", "last Friday", "2026-11-27", "2026-11-28"),
    ("on Monday we agreed", "on Monday", "2026-11-23", "2026-11-24"),
    ("the party last weekend", "last weekend", "2026-11-21", "2026-11-23"),
    ("in 2025", "in 2025", "2025-01-01", "2026-01-01"),
    ("during March 2025", "during March 2025", "2025-03-01", "2025-04-01"),
    ("May 2026 release", "May 2026", "2026-05-01", "2026-06-01"),
    ("last May", "last May", "2026-05-01", "2026-06-01"),
    ("in December", "in December", "2025-12-01", "2026-01-01"),
    ("early March", "early March", "2026-03-01", None),  # end checked below
    ("since last week", "since last week", "2026-11-16", None),
    ("since Monday", "since Monday", "2026-11-23", None),
    ("before 3 March", "before 3 March", None, "2026-03-03"),
    ("after yesterday", "after yesterday", "2026-11-29", None),
    ("until last month", "until last month", None, "2026-11-01"),
    ("Dec 5 incident", "Dec 5", "2025-12-05", "2025-12-06"),
]
# What makes an expression a date (absolute) rather than a time relative to now.
DATE_WORDS = re.compile(r"(?:19|20)\d\d|january|march|may|december|dec\b", re.IGNORECASE)
# Must not read as time.
LEFT_ALONE = [
    "May I ask what the deploy target is?",
    "we need a second opinion",
    "wait a second",
    "at last the build is green",
    "the last time we spoke",
    "what did we decide about caching",
    "decide later",
    "took 3 days to build",
    "the monday.com integration",
    "recently changed files",
    "in may we could try",
    "last but not least",
    "Python 3.12 support",
    "the weekly report",
    "monthly invoices",
]


@pytest.mark.parametrize(("query", "expression", "start", "end"), FOUND)
def test_an_expression_reads_as_its_range(
    query: str, expression: str, start: str | None, end: str | None
) -> None:
    cue = find_time_cue(query, NOW, UTC)
    assert cue is not None
    assert cue.expression == expression
    assert cue.start == at(start)
    if expression != "early March":
        assert cue.end == at(end)
    else:
        assert cue.end is not None and at("2026-03-10") < cue.end < at("2026-03-12")  # type: ignore[operator]
    # A relative expression's words leave the keyword match; a date's stay.
    assert (expression not in without_cue(query, cue)) == cue.relative
    assert cue.relative == (DATE_WORDS.search(expression) is None)


@pytest.mark.parametrize("query", LEFT_ALONE)
def test_words_that_are_not_time_are_left_alone(query: str) -> None:
    assert find_time_cue(query, NOW, UTC) is None


def test_since_a_named_event_is_an_anchor() -> None:
    cue = find_time_cue("what broke since the release?", NOW, UTC)
    assert cue is not None and cue.anchor == "release"
    assert cue.start is None and cue.expression == "since the release"
    assert find_time_cue("since we", NOW, UTC) is None


def test_the_table_is_large_enough() -> None:
    assert len(FOUND) + len(LEFT_ALONE) >= 40


def test_a_query_costs_well_under_a_millisecond() -> None:
    queries = [q for q, *_ in FOUND] + LEFT_ALONE
    start = time.perf_counter()
    for _ in range(20):
        for query in queries:
            find_time_cue(query, NOW, UTC)
    each = (time.perf_counter() - start) / (20 * len(queries))
    print(f"time cue: {each * 1e6:.0f} microseconds a query")
    assert each < 0.001
