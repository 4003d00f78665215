"""Retention per kind (rules/policy.py, Settings.ttl_kind_days): a memory's kind sets its
lifetime when no TTL is given, from a table in settings whose defaults are the seeds'
("conversations 30d, facts 1y, preferences permanent"); a TTL given wins, a kind the
table does not name keeps its source's lifetime, and a setting changes one kind's line
only. Through memory-store on a real SQLite file; the embedder is a fake (named so):
lifetimes are the point, not meaning."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.models import KIND_LIFETIME_DAYS
from memory_mcp.settings import Settings, environment_values
from tests.conftest import FakeEmbedder, call

pytestmark = pytest.mark.anyio

DAY = 86_400.0


def days_left(stored: dict[str, object]) -> float | None:
    expires = stored["expires_at"]
    if expires is None:
        return None
    assert isinstance(expires, str)
    return (datetime.fromisoformat(expires).timestamp() - datetime.now().timestamp()) / DAY


async def test_a_kind_sets_the_lifetime_unless_a_ttl_is_given(
    make_settings: Callable[..., Settings],
) -> None:
    server = build_server(make_settings(watch=False), FakeEmbedder(), open_app=open_app)
    async with Client(server) as client:
        chat = await call(client, "memory-store", key="c", value="hi there", kind="conversation")
        liked = await call(client, "memory-store", key="p", value="tabs", kind="preference")
        fact = await call(client, "memory-store", key="f", value="db is pg", kind="fact")
        given = await call(
            client, "memory-store", key="g", value="x", kind="fact", ttl_seconds=3600
        )
        unknown = await call(client, "memory-store", key="u", value="y", kind="widget")
        summary = await call(client, "memory-store", key="s", value="z", source="session_summary")
        summary_kind = await call(
            client,
            "memory-store",
            key="s2",
            value="w",
            source="session_summary",
            kind="session_summary",
        )

    assert days_left(chat) == pytest.approx(30, abs=0.01)
    assert days_left(liked) is None  # permanent
    assert days_left(fact) == pytest.approx(365, abs=0.01)
    assert days_left(given) == pytest.approx(1 / 24, abs=0.001)
    assert days_left(unknown) is None  # a manual memory's lifetime: none
    assert days_left(summary) == pytest.approx(3, abs=0.01)  # the source's, no kind
    assert days_left(summary_kind) == pytest.approx(30, abs=0.01)  # the kind's wins


async def test_a_setting_changes_one_kinds_lifetime(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(watch=False, ttl_kind_days={"conversation": 2, "note": 10})
    assert settings.ttl_kind_days["fact"] == KIND_LIFETIME_DAYS["fact"]
    server = build_server(settings, FakeEmbedder(), open_app=open_app)
    async with Client(server) as client:
        chat = await call(client, "memory-store", key="c", value="hi", kind="conversation")
        note = await call(client, "memory-store", key="n", value="a note", kind="note")
        fact = await call(client, "memory-store", key="f", value="db is pg", kind="fact")

    assert days_left(chat) == pytest.approx(2, abs=0.01)
    assert days_left(note) == pytest.approx(10, abs=0.01)
    assert days_left(fact) == pytest.approx(365, abs=0.01)


def test_the_table_as_a_variable_and_its_refusals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_MCP_TTL_KIND_DAYS", '{"tool_result": 1}')
    table = Settings(**environment_values()).ttl_kind_days
    assert table["tool_result"] == 1 and table["conversation"] == 30
    for bad in ({"Fact": 1}, {"fact": -1}, {"fact": "soon"}):
        with pytest.raises(ValueError):
            Settings(ttl_kind_days=bad)


def test_the_older_conversation_setting_sets_the_kind_line_unless_the_table_does() -> None:
    """One owner for a captured conversation's lifetime (hooks/session_end.py)."""
    assert Settings().ttl_kind_days["conversation"] == KIND_LIFETIME_DAYS["conversation"]
    assert Settings(ttl_conversation_days=0).ttl_kind_days["conversation"] == 0
    both = Settings(ttl_conversation_days=5, ttl_kind_days={"conversation": 14})
    assert both.ttl_kind_days["conversation"] == 14, "the newer name wins"
