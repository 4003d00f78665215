"""Time in the question: "what did we decide last week" asks about when a memory was
stated, not for the words "last week". `find_time_cue` reads one time expression of a
query into a range of UNIX seconds, by rules (no model, ~10-40 microseconds a query):

    yesterday, today, this morning, the day before yesterday, last night
    last / this / previous week, month, year, weekend; the past week (7 days)
    in / over the last 3 days, the past two weeks, the last few months
    two days ago, 3 weeks ago, a month ago, a year ago
    on Monday, last Friday, this Tuesday
    on 3 March, March 3rd, the 3rd of March 2025, 2026-03-03
    in May, during March 2025, last June, May 2026, in 2025
    since / after / before / until any of those ("since Monday", "before 3 March")
    since the release, since our launch: an anchor, the date of the memory naming it

Left alone on purpose: "May I ask", "a second opinion", "at last", "the last time",
"recently", bare weekdays and month names without a preposition, durations without
"ago" ("took 3 days"). Months resolve to their latest occurrence not after today (the
past is what memories hold); days are local days of the machine's time zone.

Why rules and not a library (measured 2026-11-29, docs/lab/facts-that-change.md): the
maintained dateparser 1.5 takes ~620 ms to import and ~3.4 ms a query, and finds dates
in "we", "May I ask" and "a second"; parsedatetime 2.6 is fast (0.1 ms) but gives points,
not ranges, prefers the future ("in May" is next May) and also reads "May I ask" and "a
second". Either would need these rules around it; the hooks start in ~100 ms, so an
import of that size was not an option. The search (search/pipeline.py) uses the range as
a ranking factor of its own (`time_factor`); retrieval can share it (`find_time_cue`,
`without_cue`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

# Memories stated outside the range keep this share of their score, when at least one
# candidate was stated inside it (otherwise nothing changes: the range found nothing).
OUTSIDE_FACTOR = 0.5


@dataclass(frozen=True)
class TimeCue:
    """A time expression of a query: its text, where it is in the query, and the range it
    names, [start, end) in UNIX seconds (None: open on that side). `anchor`: the words of
    "since the release", whose start is the date of the memory that names them (the
    search finds it); start is then None until it is resolved."""

    expression: str
    span: tuple[int, int]
    start: float | None
    end: float | None
    anchor: str | None = None
    # Said relative to now ("last week"): its words say nothing of what a memory holds,
    # so the keyword match leaves them out; a date's ("3 March", "in May") may be in the
    # memory itself, and stay.
    relative: bool = True


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4,
    "saturday": 5, "sunday": 6,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30.44, "year": 365.25}

_NUM = (
    r"(?P<n>\d{1,3}|a couple of|a few|few|several|an?|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve)"
)
_FULL_MONTH = (
    r"january|february|march|april|may|june|july|august|september|october|november|december"
)
_ANY_MONTH = _FULL_MONTH + r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_PREFIX = r"(?:(?P<prefix>since|after|before|until|till|by)\s+)?"

# Each rule: a name and its pattern (case-insensitive); the earliest match in the query
# wins, the longest of those starting there.
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(_PREFIX + pattern, re.IGNORECASE))
    for name, pattern in (
        ("iso", r"\b(?:on\s+)?(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)\b"),
        ("day_before", r"\b(?:the\s+)?day\s+before\s+yesterday\b"),
        ("yesterday", r"\byesterday\b"),
        ("last_night", r"\blast\s+night\b"),
        ("today", r"\b(?:today|tonight|earlier\s+today|this\s+(?:morning|afternoon|evening))\b"),
        (
            "within",
            r"\b(?:in|over|during|within|for)?\s*(?:the\s+)?(?:last|past)\s+"
            + _NUM
            + r"\s+(?P<unit>hour|day|week|fortnight|month|year)s?\b",
        ),
        ("ago", r"\b" + _NUM + r"\s+(?P<unit>hour|day|week|fortnight|month|year)s?\s+ago\b"),
        (
            "period",
            r"\b(?P<which>last|this|previous|past|the\s+past)\s+(?P<unit>week|weekend|month|year)\b",
        ),
        (
            "date_dm",
            r"\b(?:on\s+)?(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?(?P<month>" + _ANY_MONTH + r")\.?"
            r"(?:,?\s+" + _YEAR + r")?\b",
        ),
        (
            "date_md",
            r"\b(?:on\s+)?(?P<month>" + _ANY_MONTH + r")\.?\s+" + _DAY + r"(?!\d|:)"
            r"(?:,?\s+" + _YEAR + r")?\b",
        ),
        (
            "weekday",
            r"\b(?:(?P<which>on|last|this|past)\s+)?(?P<weekday>monday|tuesday|wednesday"
            r"|thursday|friday|saturday|sunday)\b(?!\.\w)",
        ),
        (
            "month",
            r"\b(?P<which>in|during|last|this|early|late|mid|back\s+in)\s+(?:-\s*)?(?P<month>"
            + _FULL_MONTH
            + r")(?:\s+"
            + _YEAR
            + r")?\b",
        ),
        ("month_year", r"\b(?P<month>" + _FULL_MONTH + r")\s+" + _YEAR + r"\b"),
        ("year", r"\b(?:in|during|back\s+in)\s+" + _YEAR + r"\b(?!\s*[-./:]\d)"),
    )
)
_MONTH_NEEDLES = tuple(_ANY_MONTH.split("|"))
_DIGITS = tuple("0123456789")
# What each rule's pattern cannot match without.
_NEEDLES: dict[str, tuple[str, ...]] = {
    "iso": ("-",),
    "day_before": ("yesterday",),
    "yesterday": ("yesterday",),
    "last_night": ("night",),
    "today": ("today", "tonight", "this "),
    "within": ("last ", "past "),
    "ago": ("ago",),
    "period": ("week", "month", "year"),
    "date_dm": _MONTH_NEEDLES,
    "date_md": _MONTH_NEEDLES,
    "weekday": ("day",),
    "month": _MONTH_NEEDLES,
    "month_year": ("19", "20"),
    "year": ("19", "20"),
}
# The rules whose expressions name a date rather than a time relative to now.
_ABSOLUTE = frozenset({"iso", "date_dm", "date_md", "month", "month_year", "year"})
# "since" followed by words that are no time expression: the anchor ("since the release").
_ANCHOR = re.compile(
    r"\bsince\s+(?P<anchor>(?:the|our|my|we|i|they|you)\s+[a-z][\w.-]*(?:\s+[a-z][\w.-]*){0,2})",
    re.IGNORECASE,
)
_ANCHOR_STOP = frozenset(
    "what which who when where why how did do does was were is are and or but then so "
    "have has had we i you they it that this".split()
)
# Words one of the rules needs; a query holding none of them is left at once.
_TRIGGER = re.compile(
    r"yesterday|today|tonight|night|morning|afternoon|evening|week|month|year|hour|day|ago"
    r"|since|(?:19|20)\d\d|" + _ANY_MONTH,
    re.IGNORECASE,
)


def find_time_cue(query: str, now: float, zone: tzinfo | None = None) -> TimeCue | None:
    """The first time expression of `query` as a range (module doc), or None. `zone`:
    whose days (None: this machine's time zone)."""
    if not _TRIGGER.search(query):
        return None
    today = datetime.fromtimestamp(now, zone).astimezone(zone)
    best: tuple[int, int, str, re.Match[str]] | None = None
    lowered = query.lower()
    for name, pattern in _RULES:
        if not any(needle in lowered for needle in _NEEDLES[name]):
            continue  # ~5x faster than running every pattern
        for match in pattern.finditer(query):
            if _left_alone(name, match, query):
                continue
            key = (match.start(), -(match.end() - match.start()))
            if best is None or key < (best[0], best[1]):
                best = (key[0], key[1], name, match)
            break
    if best is None:
        return _anchor(query)
    _, _, name, match = best
    found = _range(name, match, today, now)
    if found is None:
        return _anchor(query)
    start, end = _with_prefix(match.group("prefix"), found, now)
    relative = name not in _ABSOLUTE
    return TimeCue(match.group(0).strip(), match.span(), start, end, relative=relative)


def without_cue(query: str, cue: TimeCue | None) -> str:
    """`query` without its time expression if it is relative: the words left to match
    memories by."""
    if cue is None or not cue.relative:
        return query
    return (query[: cue.span[0]] + " " + query[cue.span[1] :]).strip()


def time_factor(stated_at: float, cue: TimeCue) -> float:
    """A memory's factor under `cue` (applied only when some candidate is in range)."""
    return 1.0 if in_range(stated_at, cue) else OUTSIDE_FACTOR


def in_range(at: float, cue: TimeCue) -> bool:
    return (cue.start is None or at >= cue.start) and (cue.end is None or at < cue.end)


# -- the rules' ranges --------------------------------------------------------------------


def _left_alone(name: str, match: re.Match[str], query: str) -> bool:
    """A match that is a word, not a date: "May I ask", "may 5 people" (a verb); a bare
    weekday ("Monday standup" names a meeting, not a day)."""
    if name == "weekday" and match.group("which") is None and match.group("prefix") is None:
        return True
    if "month" in match.groupdict() and (match.group("month") or "").lower() == "may":
        # "May" the month is written with a capital ("in may" may well be the verb).
        if match.group("month") != "May":
            return True
        after = query[match.end() :]
        if name == "date_md" and re.match(r"\s*(?:people|of|more|times)\b", after, re.I):
            return True
    return False


def _day_start(day: date, like: datetime) -> float:
    return datetime(day.year, day.month, day.day, tzinfo=like.tzinfo).timestamp()


def _days(first: date, count: int, like: datetime) -> tuple[float, float]:
    return _day_start(first, like), _day_start(first + timedelta(days=count), like)


def _month_range(year: int, month: int, like: datetime) -> tuple[float, float]:
    following = date(year + (month == 12), month % 12 + 1, 1)
    return _day_start(date(year, month, 1), like), _day_start(following, like)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[" ".join(text.lower().split())]


def _range(
    name: str, match: re.Match[str], today: datetime, now: float
) -> tuple[float | None, float | None] | None:
    day = today.date()
    if name == "iso":
        try:
            stated = date.fromisoformat(match.group("iso"))
        except ValueError:
            return None
        return _days(stated, 1, today)
    if name == "day_before":
        return _days(day - timedelta(days=2), 1, today)
    if name == "yesterday":
        return _days(day - timedelta(days=1), 1, today)
    if name == "last_night":
        start = _day_start(day - timedelta(days=1), today) + 18 * 3600
        return start, _day_start(day, today) + 6 * 3600
    if name == "today":
        return _days(day, 1, today)
    if name in ("within", "ago"):
        count, unit = _number(match.group("n")), match.group("unit").lower()
        seconds = count * (3600.0 if unit == "hour" else _UNIT_DAYS[unit] * 86_400.0)
        if name == "within":
            return now - seconds, None
        if unit == "hour":
            return now - seconds - 3600.0, now - seconds + 3600.0
        if unit == "day":
            return _days((today - timedelta(days=count)).date(), 1, today)
        # "two weeks ago": the week around that day; "a month ago", "a year ago" likewise.
        half = _UNIT_DAYS[unit] * 86_400.0 / 2
        return now - seconds - half, now - seconds + half
    if name == "period":
        return _period(match.group("which").lower(), match.group("unit").lower(), today, now)
    if name in ("date_dm", "date_md"):
        month = _MONTHS[match.group("month").lower()]
        day_number = int(match.group("day"))
        year = match.group("year")
        try:
            if year is not None:
                return _days(date(int(year), month, day_number), 1, today)
            stated = date(day.year, month, day_number)
            if stated > day:  # the latest such day not after today
                stated = date(day.year - 1, month, day_number)
        except ValueError:  # "31 February"
            return None
        return _days(stated, 1, today)
    if name == "weekday":
        which = (match.group("which") or "on").lower()
        weekday = _WEEKDAYS[match.group("weekday").lower()]
        back = (day.weekday() - weekday) % 7
        if which == "this":
            return _days(day - timedelta(days=day.weekday() - weekday), 1, today)
        if which in ("last", "past") or back == 0:
            back = back or 7  # "last Monday" on a Monday: a week ago
        return _days(day - timedelta(days=back), 1, today)
    if name in ("month", "month_year"):
        month = _MONTHS[match.group("month").lower()]
        year = match.group("year")
        which = match.group("which").lower() if name == "month" else "in"
        if year is not None:
            chosen = int(year)
        else:
            chosen = day.year if month <= day.month else day.year - 1
            if which == "last" and month == day.month:
                chosen -= 1
        start, end = _month_range(chosen, month, today)
        if which in ("early", "late", "mid"):
            third = (end - start) / 3
            offset = {"early": 0, "mid": 1, "late": 2}[which]
            start, end = start + offset * third, start + (offset + 1) * third
        return start, end
    if name == "year":
        year = int(match.group("year"))
        return _day_start(date(year, 1, 1), today), _day_start(date(year + 1, 1, 1), today)
    return None


def _period(which: str, unit: str, today: datetime, now: float) -> tuple[float, float | None]:
    day = today.date()
    if which == "the past" or which == "past":
        return now - _UNIT_DAYS.get(unit, 2) * 86_400.0, None
    back = 0 if which == "this" else 1
    if unit == "week":
        monday = day - timedelta(days=day.weekday() + 7 * back)
        return _days(monday, 7, today)
    if unit == "weekend":
        saturday = day - timedelta(days=(day.weekday() - 5) % 7)
        if back and saturday + timedelta(days=1) >= day:  # "last weekend" means a whole one
            saturday -= timedelta(days=7)
        return _days(saturday, 2, today)
    if unit == "month":
        year, month = day.year, day.month - back
        if month == 0:
            year, month = year - 1, 12
        return _month_range(year, month, today)
    year = day.year - back
    return _day_start(date(year, 1, 1), today), _day_start(date(year + 1, 1, 1), today)


def _with_prefix(
    prefix: str | None, found: tuple[float | None, float | None], now: float
) -> tuple[float | None, float | None]:
    """ "since X" / "after X" / "before X" / "until X" around X's range."""
    start, end = found
    if prefix is None:
        return start, end
    prefix = prefix.lower()
    if prefix == "since":
        return start, None
    if prefix == "after":
        return end, None
    if prefix == "before":
        return None, start
    return None, end  # until, till, by


def _anchor(query: str) -> TimeCue | None:
    """ "since the release": the words after "since" name a dated memory."""
    match = _ANCHOR.search(query)
    if match is None:
        return None
    words = match.group("anchor").split()
    kept = [words[0]]
    for word in words[1:]:
        if word.lower().strip(".,?!") in _ANCHOR_STOP:
            break
        kept.append(word.strip(".,?!"))
    if len(kept) < 2:
        return None
    end = match.start("anchor") + len(" ".join(kept))
    return TimeCue(query[match.start() : end], (match.start(), end), None, None, " ".join(kept[1:]))


__all__ = [
    "OUTSIDE_FACTOR",
    "TimeCue",
    "find_time_cue",
    "in_range",
    "time_factor",
    "without_cue",
]
