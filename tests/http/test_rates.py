"""The team server's counters of the last minute (memory_mcp/http/rates.py), on a driven
clock: a sliding window that lets `limit` events through in any minute and says how long
until the next, and the log budget that keeps a flood of one line from growing the log
without bound while other lines go on being written. Over real HTTP:
tests/http/test_agent_limits.py."""

from __future__ import annotations

import logging

import pytest

from memory_mcp.http.rates import LogBudget, SlidingWindow


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_window_lets_its_limit_through_in_any_minute() -> None:
    clock = Clock()
    window = SlidingWindow(3, clock=clock)
    assert [window.wait() for _ in range(2)] == [0.0, 0.0]  # at 1000
    clock.now += 10
    assert window.wait() == 0.0  # at 1010
    clock.now += 10
    assert window.wait() == pytest.approx(40.0)  # the first two leave the window at 1060
    clock.now += 40
    assert [window.wait() for _ in range(2)] == [0.0, 0.0]
    assert window.wait() == pytest.approx(10.0), "a refused event is not counted"


def test_a_window_refuses_a_limit_below_one() -> None:
    with pytest.raises(ValueError):
        SlidingWindow(0)


def _record(line: int, msg: str = "refused %s", name: str = "memory_mcp.x") -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, "/src/x.py", line, msg, ("w1",), None)


def test_the_log_budget_bounds_each_call_site_and_says_what_it_left_out() -> None:
    clock = Clock()
    budget = LogBudget(per_minute=2, clock=clock)
    flood = [budget.filter(_record(10)) for _ in range(50)]
    assert flood == [True, True] + [False] * 48
    assert budget.filter(_record(11)), "another call site has its own budget"
    clock.now += 61
    later = _record(10)
    assert budget.filter(later)
    assert later.getMessage() == ("refused w1 [and 48 more like this, not logged: over 2 a minute]")
    assert budget.filter(_record(10)) and not budget.filter(_record(10))


def test_a_record_is_counted_once_however_many_handlers_see_it() -> None:
    budget = LogBudget(per_minute=1, clock=Clock())
    record = _record(10)
    assert budget.filter(record) and budget.filter(record)  # a second handler, same answer
    assert not budget.filter(_record(10))
