"""Counting what arrives in the last minute, for the team server's two floods that no
token bounds: anonymous OAuth client registrations (oauth_provider.py) and log lines
(a flood of refused requests would otherwise write one line each, without end).

Both count a handful of keys that the code names (one window for registrations, one per
logging call site), so a deque of timestamps per key is all it takes: no key comes from
a request, and nothing needs expiring."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0
# Per logging call site and minute (the line that says how many were left out included):
# with some fifty call sites a flood adds at most ~1 MB a minute, even with tracebacks.
LOG_LINES_PER_MINUTE = 20
BUDGET_MARK = "memory_mcp_log_budget"  # on a record: the budget's answer, once per record


class SlidingWindow:
    """At most `limit` events in any `seconds`."""

    def __init__(
        self,
        limit: int,
        seconds: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.seconds = seconds
        self._clock = clock
        self._times: deque[float] = deque()

    def wait(self) -> float:
        """0.0: the event is counted and may go ahead; else how many seconds until one
        would be allowed (nothing counted)."""
        now = self._clock()
        while self._times and self._times[0] <= now - self.seconds:
            self._times.popleft()
        if len(self._times) < self.limit:
            self._times.append(now)
            return 0.0
        return self._times[0] + self.seconds - now


class LogBudget(logging.Filter):
    """A handler filter: at most `per_minute` records a minute from any one logging call
    site (logger, file and line: a message built with an f-string is new every time);
    the first record let through after some were dropped says how many."""

    def __init__(
        self, per_minute: int = LOG_LINES_PER_MINUTE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.per_minute = per_minute
        self._clock = clock
        self._windows: dict[tuple[str, str, int], SlidingWindow] = {}
        self._dropped: dict[tuple[str, str, int], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        decided = getattr(record, BUDGET_MARK, None)  # seen by another handler already
        if decided is not None:
            return bool(decided)
        allowed = self._allowed(record)
        setattr(record, BUDGET_MARK, allowed)
        return allowed

    def _allowed(self, record: logging.LogRecord) -> bool:
        site = (record.name, record.pathname, record.lineno)
        window = self._windows.get(site)
        if window is None:
            window = self._windows[site] = SlidingWindow(self.per_minute, clock=self._clock)
        if window.wait():
            self._dropped[site] = self._dropped.get(site, 0) + 1
            return False
        dropped = self._dropped.pop(site, 0)
        if dropped:
            record.msg = (
                f"{record.msg} [and {dropped} more like this, not logged: "
                f"over {self.per_minute} a minute]"
            )
        return True


def budget_logs(loggers: tuple[str, ...] = ("", "uvicorn", "uvicorn.error")) -> LogBudget:
    """One LogBudget on every handler of these loggers (the root's, and uvicorn's own,
    which do not propagate): what a server process writes to its log stays bounded."""
    budget = LogBudget()
    handlers = {id(h): h for name in loggers for h in logging.getLogger(name).handlers}
    for handler in handlers.values():
        handler.addFilter(budget)
    return budget


__all__ = ["LOG_LINES_PER_MINUTE", "LogBudget", "SlidingWindow", "budget_logs"]
