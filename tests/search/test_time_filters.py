"""Time filters: ISO date-times and ages ("7d") as UNIX seconds, with errors that name the
argument (memory_mcp/search/time_filters.py)."""

from __future__ import annotations

import pytest

from memory_mcp.errors import InvalidInputError
from memory_mcp.search.time_filters import TimeRange, parse_age, parse_time, parse_time_range

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("30m", 1_800.0),
        ("12h", 43_200.0),
        ("1.5h", 5_400.0),
        ("7d", 604_800.0),
        ("2w", 1_209_600.0),
        ("7 days", 604_800.0),
        ("3 weeks ago", 1_814_400.0),
        (" 12H ", 43_200.0),
        ("7 months", 7 * 30 * 86_400.0),  # a month is 30 days; `m` stays minutes
        ("1 year", 365 * 86_400.0),
    ],
)
def test_ages_in_seconds(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["7", "7x", "7 fortnights", "d7", "2026-11-01", "-3d", ""])
def test_what_is_not_an_age(text: str) -> None:
    assert parse_age(text) is None


def test_an_age_counts_back_from_now() -> None:
    assert parse_time("7d", "since", NOW) == NOW - 7 * 86_400


def test_an_iso_date_time_is_an_instant() -> None:
    assert parse_time("2026-01-01T00:00:00+01:00", "since", NOW) == 1767222000.0


def test_a_naive_date_is_utc_midnight() -> None:
    assert parse_time("2026-01-01", "until", NOW) == 1767225600.0


@pytest.mark.parametrize("text", ["yesterday", "7x", "7", "2026-13-01", "", "   "])
def test_bad_times_name_the_field(text: str) -> None:
    with pytest.raises(InvalidInputError, match="invalid since:"):
        parse_time(text, "since", NOW)


def test_a_number_without_unit_is_told_to_add_one() -> None:
    with pytest.raises(InvalidInputError, match="needs a unit"):
        parse_time("7", "since", NOW)


def test_not_a_string_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="invalid until:"):
        parse_time(7, "until", NOW)


def test_an_age_over_a_century_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="more than 100 years"):
        parse_time("99999w", "since", NOW)


def test_a_range_with_both_ends() -> None:
    assert parse_time_range("7d", "1d", NOW) == TimeRange(NOW - 7 * 86_400, NOW - 86_400)


def test_an_open_range() -> None:
    assert parse_time_range(None, None, NOW).is_open


def test_a_range_backwards_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="is after until"):
        parse_time_range("1d", "7d", NOW)


def test_range_ends_are_included() -> None:
    window = TimeRange(100.0, 200.0)
    assert [window.contains(t) for t in (99.0, 100.0, 200.0, 201.0)] == [
        False,
        True,
        True,
        False,
    ]
