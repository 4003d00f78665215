"""The shapes of browsing without a store: cursors and filters as arguments arrive."""

from __future__ import annotations

import pytest

from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Position, Scope
from memory_mcp.rules.browsing import ListFilters, decode_cursor, encode_cursor

T0 = 1_790_000_000.0


def test_a_cursor_holds_the_exact_position() -> None:
    position = Position(1_790_000_000.123456789, 42)
    assert decode_cursor(encode_cursor("created", position), "created") == position


def test_a_cursor_is_url_safe_text() -> None:
    cursor = encode_cursor("updated", Position(T0, 7))
    assert cursor.replace("-", "").replace("_", "").isalnum()


def test_filters_parse_relative_times() -> None:
    filters = ListFilters.parse(now=T0, since="7d")
    assert filters.since == T0 - 7 * 86_400


def test_filters_parse_iso_times() -> None:
    filters = ListFilters.parse(now=T0, until="2026-09-20T00:00:00Z")
    assert filters.until == 1_789_862_400.0


def test_filters_clean_tags_and_scope() -> None:
    filters = ListFilters.parse(now=T0, tags=["Build"], scope="global")
    assert (filters.tags, filters.scope) == (("build",), Scope.SWARM)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"scope": "everywhere"}, "scope"),
        ({"source": "rumour"}, "source"),
        ({"since": "last tuesday"}, "since"),
        ({"since": "1d", "until": "7d"}, "since"),
        ({"agent_id": "a\u202eb"}, "agent_id"),
    ],
)
def test_a_bad_filter_names_its_argument(arguments: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        ListFilters.parse(now=T0, **arguments)  # type: ignore[arg-type]
    assert raised.value.field == field
