"""Time filters as people and models write them: an ISO 8601 date-time, or an age.

    "2026-11-01", "2026-11-01T09:30:00Z", "2026-11-01T09:30:00+01:00"   an instant (naive: UTC)
    "90s", "30m", "12h", "7d", "2w"   that long before now (also "7 days", "1.5h", "3 weeks")

An age means "now minus it", so `since="7d"` is "changed in the last 7 days" and
`until="7d"` (or `older_than="7d"`) is "not changed for at least 7 days". Months and years
are left out on purpose: their length varies, and "30d" or an ISO date says exactly what is
meant. Every bound is checked here once and returned as UNIX seconds (UTC), so the tools,
the CLI and the web view filter the same way and name the argument when it is wrong."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from memory_mcp.checks.validation import iso, parse_datetime
from memory_mcp.errors import InvalidInputError

UNIT_SECONDS = {
    "s": 1.0,
    "m": 60.0,
    "h": 3_600.0,
    "d": 86_400.0,
    "w": 604_800.0,
    "mo": 30 * 86_400.0,  # a month as 30 days: "since 1 month" is a rough age anyway
    "y": 365 * 86_400.0,
}
# The words accepted for each unit (singular and plural, short and long).
_UNIT_WORDS = {
    **{word: "s" for word in ("s", "sec", "secs", "second", "seconds")},
    **{word: "m" for word in ("m", "min", "mins", "minute", "minutes")},
    **{word: "h" for word in ("h", "hr", "hrs", "hour", "hours")},
    **{word: "d" for word in ("d", "day", "days")},
    **{word: "w" for word in ("w", "wk", "wks", "week", "weeks")},
    **{word: "mo" for word in ("mo", "mos", "mon", "month", "months")},  # `m` is minutes
    **{word: "y" for word in ("y", "yr", "yrs", "year", "years")},
}
_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)(?:\s+ago)?")
# An age past this is surely a mistake (and would leave the years datetime can show).
MAX_AGE_SECONDS = 100 * 365 * 86_400.0
EXAMPLES = "an ISO 8601 date-time such as 2026-11-01T09:00:00Z, or an age such as 7d, 12h, 30m"


def parse_age(text: str) -> float | None:
    """Seconds of an age such as "7d" or "12 hours", or None if `text` is not one."""
    match = _AGE.fullmatch(text.strip().lower())
    if match is None:
        return None
    unit = _UNIT_WORDS.get(match.group(2))
    if unit is None:
        return None
    return float(match.group(1)) * UNIT_SECONDS[unit]


def parse_time(value: object, field: str, now: float) -> float:
    """An instant from an ISO date-time or an age before `now`, as UNIX seconds.
    InvalidInputError names `field` and shows what is accepted."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(field, f"must be {EXAMPLES}")
    text = value.strip()
    age = parse_age(text)
    if age is not None:
        if not math.isfinite(age) or age > MAX_AGE_SECONDS:
            raise InvalidInputError(field, f"{text[:64]!r} is more than 100 years")
        return now - age
    if text[:1].isdigit() and not any(ch in text for ch in "-:T"):
        # "7" or "7x": an age without a unit we know, not a broken date.
        units = "s, m, h, d, w, mo or y (e.g. 7d, 1 month)"
        raise InvalidInputError(field, f"{text[:64]!r} needs a unit: {units}; or {EXAMPLES}")
    try:
        return parse_datetime(text, field)
    except InvalidInputError:
        raise InvalidInputError(field, f"{text[:64]!r} is not {EXAMPLES}") from None


@dataclass(frozen=True)
class TimeRange:
    """[since, until] in UNIX seconds; None leaves that side open. Both ends included."""

    since: float | None = None
    until: float | None = None

    def contains(self, timestamp: float) -> bool:
        return (self.since is None or timestamp >= self.since) and (
            self.until is None or timestamp <= self.until
        )

    @property
    def is_open(self) -> bool:
        """No bound at all: nothing is filtered."""
        return self.since is None and self.until is None


def parse_time_range(
    since: object | None,
    until: object | None,
    now: float,
    since_field: str = "since",
    until_field: str = "until",
) -> TimeRange:
    """Both bounds of a filter (None: open). A range that holds no instant is refused, so
    an empty result always means nothing matched, never a mixed-up pair."""
    start = None if since is None else parse_time(since, since_field, now)
    end = None if until is None else parse_time(until, until_field, now)
    if start is not None and end is not None and start > end:
        raise InvalidInputError(
            since_field,
            f"{since!r} ({iso(start)}) is after {until_field} {until!r} ({iso(end)}); "
            "nothing can match",
        )
    return TimeRange(start, end)


__all__ = ["TimeRange", "parse_age", "parse_time", "parse_time_range"]
