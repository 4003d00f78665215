"""The tool edge: strict argument types, errors in this project's words, valid Unicode and
bounded nesting, sizes checked before any per-item work, dates bounded, names without
control or invisible characters. Every refusal stores nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from memory_mcp.app.background import OpeningApp
from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.checks.validation import clean_id, parse_datetime
from memory_mcp.errors import InvalidInputError
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


# Builds an in-process server for one agent (a fresh store per test).
ServerFor = Callable[..., MCPServer[OpeningApp[AppContext]]]


@pytest.fixture
def server_for(make_settings: Callable[..., Settings]) -> ServerFor:
    def make(agent_id: str = "w1", role: str = "worker") -> MCPServer[OpeningApp[AppContext]]:
        return build_server(
            make_settings(agent_id=agent_id, role=role), FakeEmbedder(), open_app=open_app
        )

    return make


async def _stored_keys(client: Any) -> list[str]:
    found = await call(client, "memory-search", query="baseline v k x", limit=50)
    return sorted(r["key"] for r in found["results"])


WRONG_TYPES: list[tuple[str, dict[str, Any], str]] = [
    ("memory-delete", {"id": True}, "invalid id: must be a whole number, got true"),
    ("memory-get", {"id": True}, "invalid id: must be a whole number, got true"),
    ("memory-get", {"id": 1.0}, "invalid id: must be a whole number, got 1.0"),
    ("memory-delete", {"id": "1"}, "invalid id: must be a whole number, got a string"),
    (
        "store_memory",
        {"key": "k", "value": "v", "pinned": "yes"},
        "invalid pinned: must be true or false, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "pinned": 1},
        "invalid pinned: must be true or false, got 1",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "ttl_seconds": "5"},
        "invalid ttl_seconds: must be a number, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "ttl_seconds": True},
        "invalid ttl_seconds: must be a number, got true",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "confidence": "0.5"},
        "invalid confidence: must be a number, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "expected_version": "1"},
        "invalid expected_version: must be a whole number, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "tags": "build"},
        "invalid tags: must be a list, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "tags": ["a", 7]},
        "invalid tags: item 1 must be a string, got 7",
    ),
    ("store_memory", {"key": 5, "value": "v"}, "invalid key: must be a string, got 5"),
    (
        "memory-search",
        {"query": "x", "limit": "5"},
        "invalid limit: must be a whole number, got a string",
    ),
    (
        "memory-search",
        {"query": "x", "include_expired": "no"},
        "invalid include_expired: must be true or false, got a string",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "scope": "planet"},
        "invalid scope: 'planet' is not one of session, agent, swarm (or global)",
    ),
    (
        "store_memory",
        {"key": "k", "value": "v", "source": "rumour"},
        "invalid source: 'rumour' is not one of manual, task_completion, session_summary, "
        "user_stated, tool_verified, agent_inferred, recalled, external",
    ),
    (
        "memory-search",
        {"query": "x", "scope": "planet"},
        "invalid scope: 'planet' is not one of all, session, agent, swarm",
    ),
]


async def test_wrong_types_are_refused_by_name_in_plain_words(
    server_for: ServerFor,
) -> None:
    async with Client(server_for()) as client:
        first = await call(client, "store_memory", key="baseline", value="baseline badger")
        assert first["id"] == 1
        for tool, arguments, expected in WRONG_TYPES:
            error = await call_error(client, tool, **arguments)
            assert error == f"Error executing tool {tool}: {expected}", error
            assert "pydantic" not in error
            assert "http" not in error
        # {"id": true} did not delete memory 1; nothing else was stored.
        assert (await call(client, "memory-get", id=1))["key"] == "baseline"
        assert await _stored_keys(client) == ["baseline"]


BAD_NAMES = {
    "DEL": "a\x7fb",
    "C1 control": "a\x85b",
    "C1 CSI": "a\x9b31mb",
    "ESC": "a\x1b[31mb",
    "CR": "a\rb",
    "TAB": "a\tb",
    "line separator": "a\u2028b",
    "right-to-left override": "a\u202eb",
    "zero-width space": "a\u200bb",
    "BOM": "a\ufeffb",
    "NUL": "a\x00b",
}


async def test_keys_and_tags_refuse_control_and_invisible_characters(
    server_for: ServerFor,
) -> None:
    async with Client(server_for()) as client:
        await call(client, "store_memory", key="baseline", value="baseline badger")
        for label, name in BAD_NAMES.items():
            error = await call_error(client, "store_memory", key=name, value="v")
            assert "invalid key: must be one line without control or invisible" in error, label
            error = await call_error(client, "store_memory", key="k", value="v", tags=[name])
            assert "invalid tags: must be one line" in error, label
        # Ordinary non-Latin names are fine.
        await call(client, "store_memory", key="заметка-日本語-🙂", value="v", tags=["ünï"])
        assert len(await _stored_keys(client)) == 2


async def test_unpaired_surrogates_and_deep_nesting_are_refused_everywhere(
    server_for: ServerFor,
) -> None:
    """In process (the SDK client cannot send a surrogate in an object key; the stdio test
    sends raw lines, including the cases the SDK's own parser refuses)."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(250):
        node["a"] = {}
        node = node["a"]
    twenty: dict[str, Any] = {}
    node = twenty
    for _ in range(19):
        node["a"] = {}
        node = node["a"]
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("store_memory", {"key": "a\ud800b", "value": "v"}, "key"),
        ("store_memory", {"key": "k", "value": "a\udfffb"}, "value"),
        ("store_memory", {"key": "k", "value": "v", "tags": ["\ud800"]}, "tags"),
        ("store_memory", {"key": "k", "value": "v", "metadata": {"x": ["\ud800"]}}, "metadata"),
        ("store_memory", {"key": "k", "value": "v", "metadata": deep}, "metadata"),
        ("memory-search", {"query": "x\ud800"}, "query"),
        ("inject-learning", {"learning": "\ud800", "category": "preference"}, "learning"),
    ]
    async with Client(server_for("lead", "lead")) as client:
        await call(client, "store_memory", key="baseline", value="baseline badger")
        for tool, arguments, field in cases:
            error = await call_error(client, tool, **arguments)
            assert error.startswith(f"Error executing tool {tool}: invalid {field}: "), error
            assert "surrogate" in error or "nested more than 20 levels" in error, error
        # Twenty levels are allowed; a surrogate pair (a real emoji) is fine.
        await call(client, "store_memory", key="nested", value="v \U0001f600", metadata=twenty)
        assert await _stored_keys(client) == ["baseline", "nested"]


async def test_sizes_are_checked_before_per_item_work(server_for: ServerFor) -> None:
    """A huge tag list is refused for its size, before any tag is looked at (the bad tag
    near the front would otherwise be reported first, after a quadratic de-dup)."""
    tags = ["ok", ""] + [f"tag-{i}" for i in range(50_000)]
    big_metadata = {"blob": "x" * 1_000_000, "bad": float("nan")}
    async with Client(server_for()) as client:
        error = await call_error(client, "store_memory", key="k", value="v", tags=tags)
        assert "invalid tags: at most 20 tags, got 50,002" in error
        error = await call_error(client, "store_memory", key="k", value="v", metadata=big_metadata)
        assert "invalid metadata: is larger than 16,384 bytes" in error
        error = await call_error(client, "store_memory", key="k" * 100_000, value="v")
        assert "invalid key: is 100,000 characters" in error
        error = await call_error(
            client, "store_memory", key="k", value="v", metadata={"many": list(range(150_000))}
        )
        assert "invalid metadata: holds more than 100,000 values" in error


async def test_dates_are_bounded_and_nothing_is_half_stored(
    server_for: ServerFor,
) -> None:
    async with Client(server_for()) as client:
        await call(client, "store_memory", key="baseline", value="baseline badger")
        for when, problem in [
            ("9999-12-31T23:00:00-05:00", "is not between the years 1970 and 9000"),
            ("9999-12-31T23:59:59+00:00", "is not between the years 1970 and 9000"),
            ("0001-01-01T00:00:00+05:00", "is not between the years 1970 and 9000"),
            ("2300-01-01T00:00:00Z", "is more than 100 years away"),
            ("not a date", "is not an ISO 8601 date-time"),
        ]:
            error = await call_error(
                client, "store_memory", key="k", value="v", scope="swarm", expires_at=when
            )
            assert f"invalid expires_at: {when!r} {problem}" in error, error
        # The store still answers every read.
        assert await _stored_keys(client) == ["baseline"]
        ok = await call(
            client, "store_memory", key="k", value="v", expires_at="2030-01-01T00:00:00-05:00"
        )
        assert ok["expires_at"] == "2030-01-01T05:00:00Z"


def test_dates_from_any_source_get_the_same_bounds() -> None:
    """parse_datetime also reads import files' dates (updated_at)."""
    for text in ("9999-12-31T23:00:00-05:00", "1969-12-31T23:59:59Z"):
        with pytest.raises(InvalidInputError, match="between the years 1970 and 9000"):
            parse_datetime(text, "updated_at")
    assert parse_datetime("2026-01-01T00:00:00+01:00", "updated_at") == 1767222000.0


@pytest.mark.parametrize("given", ["²", "٣", "0", "-4", "4.0", "", True, 2.0])
def test_an_id_that_is_not_a_positive_whole_number_is_refused_by_name(given: object) -> None:
    with pytest.raises(InvalidInputError) as refused:
        clean_id(given)
    assert refused.value.field == "id"


def test_an_id_sent_as_digits_is_read() -> None:
    assert (clean_id(" 42 "), clean_id(42)) == (42, 42)


def test_an_id_beyond_what_a_store_holds_is_refused_by_name() -> None:
    for given in (2**63, "9223372036854775808", -(2**63) - 1, 2**1000, "9" * 5_000):
        with pytest.raises(InvalidInputError, match="from 1 to 9223372036854775807") as refused:
            clean_id(given)
        assert refused.value.field == "id"
        assert len(str(refused.value)) < 200, "a huge number is not quoted whole"
    assert clean_id(str(2**63 - 1)) == 2**63 - 1


# The largest id each store holds: SQLite's INTEGER is 64-bit, PostgreSQL's 32-bit.
LARGEST_ID = {"sqlite": 2**63 - 1, "postgresql": 2**31 - 1}
OUT_OF_RANGE: list[tuple[str, dict[str, Any], str]] = [
    ("memory-get", {"id": "{beyond}"}, "id"),
    ("memory-get", {"id": 2**63}, "id"),
    ("memory-delete", {"id": "{beyond}"}, "id"),
    ("memory-history", {"id": "{beyond}"}, "id"),
    ("memory-revert", {"id": "{beyond}", "version": 1}, "id"),
    ("memory-revert", {"id": "{id}", "version": 2**63}, "version"),
    ("memory-history", {"id": "{id}", "before": 2**63}, "before"),
    ("memory-history", {"id": "{id}", "limit": 2**63}, "limit"),
    (
        "store_memory",
        {"key": "baseline", "value": "v", "expected_version": 2**63},
        "expected_version",
    ),
    ("memory-list", {"cursor": "{cursor}"}, "cursor"),
]


async def test_whole_numbers_beyond_the_store_are_input_errors_naming_the_argument(
    server_for: ServerFor, db_backend: str
) -> None:
    """Before: an id past the store's integers reached the driver, which raised
    (OverflowError on SQLite from 2**63, DataError on PostgreSQL from 2**31): "internal
    error" in get, delete, history, revert and a listing's cursor."""
    largest = LARGEST_ID[db_backend]
    async with Client(server_for()) as client:
        stored = await call(client, "store_memory", key="baseline", value="kept as it was")
        await call(client, "store_memory", key="second", value="another")
        raw = json.dumps(["updated", 1.0, largest + 1]).encode()
        filled = {
            "{id}": stored["id"],
            "{beyond}": largest + 1,
            "{cursor}": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        }
        for tool, template, named in OUT_OF_RANGE:
            arguments = {
                name: filled.get(value, value) if isinstance(value, str) else value
                for name, value in template.items()
            }
            error = await call_error(client, tool, **arguments)
            assert error.startswith(f"Error executing tool {tool}: invalid {named}:"), error
        # The largest id a store holds is a valid id: simply not there.
        assert "not found" in await call_error(client, "memory-get", id=largest)
        kept = await call(client, "memory-get", id=stored["id"])
        assert (kept["value"], kept["version"]) == ("kept as it was", 1)


HUGE = "x" * 3_000_000
# Issue 35: an invalid choice was echoed whole (a 3 MB value, a 3 MB error and log line).
BAD_CHOICES: list[tuple[str, dict[str, Any], str]] = [
    ("memory-search", {"query": "q", "scope": HUGE}, "scope"),
    ("store_memory", {"key": "k", "value": "v", "scope": HUGE}, "scope"),
    ("store_memory", {"key": "k", "value": "v", "source": HUGE}, "source"),
    ("memory-search", {"query": "q", "source": HUGE}, "source"),
    ("memory-list", {"order": HUGE}, "order"),
    ("memory-delete", {"key": "k", "scope": HUGE}, "scope"),
    ("inject-learning", {"learning": "l", "category": HUGE}, "category"),
]


@pytest.mark.parametrize(("tool", "arguments", "name"), BAD_CHOICES)
async def test_an_invalid_choice_is_named_and_cut_in_the_error_and_the_log(
    server_for: ServerFor,
    caplog: pytest.LogCaptureFixture,
    tool: str,
    arguments: dict[str, Any],
    name: str,
) -> None:
    caplog.set_level("DEBUG")
    async with Client(server_for("lead", "lead")) as client:
        error = await call_error(client, tool, **arguments)
    assert f"invalid {name}: 'xxx" in error, error[:200]
    assert "is not one of" in error and len(error) < 300, error[:300]
    longest = max((len(record.getMessage()) for record in caplog.records), default=0)
    assert longest < 2_000, f"a log line of {longest:,} characters"
