"""docs/TOOLS.md's figures for what the tool list costs are the live list's: the number of
tools a worker is offered and the characters a worker's and a lead's lists cost (as
tests/mcp/test_tool_list_cost.py counts them), to the nearest hundred the page rounds to.
A change of the listed tools (names, descriptions, schemas) fails here until the page says
the new figures."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_mcp.settings import Settings
from tests.mcp.test_tool_list_cost import costs

pytestmark = pytest.mark.anyio

TOOLS_MD = Path(__file__).resolve().parent.parent.parent / "docs" / "TOOLS.md"
FIGURES = re.compile(
    r"A worker's\s+list\s+costs\s+about\s+([\d,]+)\s+characters\s+\((\d+)\s+tools\),\s+"
    r"a\s+lead's\s+about\s+([\d,]+)"
)
ROUNDING = 100  # "about 8,000": the page rounds to hundreds


def page_figures() -> tuple[int, int, int]:
    found = FIGURES.search(TOOLS_MD.read_text(encoding="utf-8"))
    assert found is not None, "docs/TOOLS.md no longer states the tool list's cost"
    worker, tools, lead = (int(group.replace(",", "")) for group in found.groups())
    return worker, tools, lead


async def test_the_pages_tool_list_figures_are_the_live_lists(
    make_settings: Callable[..., Settings],
) -> None:
    worker = await costs(make_settings(role="worker", watch=False))
    lead = await costs(make_settings(role="lead", watch=False))
    stated_worker, stated_tools, stated_lead = page_figures()
    live = (sum(worker.values()), len(worker), sum(lead.values()))
    assert stated_tools == len(worker), live
    assert abs(stated_worker - live[0]) <= ROUNDING / 2, live
    assert abs(stated_lead - live[2]) <= ROUNDING / 2, live
