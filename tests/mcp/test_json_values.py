"""JSON values (checks/json_values.py): store_memory takes text, an object or an array and
gives it back as given — typed in structured content, compact JSON in the text — through
memory-get, search, history and revert; a string that reads as JSON stays a string; the
size limit applies to the compact JSON; secrets are redacted leaf by leaf. In process with
a fake embedder (words, not meaning, are judged here; the stdio test uses the real model).
Export and import: tests/cli/test_json_values_transfer.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from memory_mcp.settings import Settings
from tests.conftest import call, call_error, client_of, first_text

pytestmark = pytest.mark.anyio

SERVICE = {"owner": "Ann", "tools": ["pytest", "ruff"], "port": 8080, "live": True, "x": None}


async def test_an_object_and_an_array_come_back_as_given(
    settings: Callable[..., Settings],
) -> None:
    async with client_of(settings()) as client:
        stored = await call(client, "store_memory", key="service", value=SERVICE)
        listed = await call(client, "store_memory", key="steps", value=["build", {"n": 2}])
        got = await client.call_tool("memory-get", {"id": stored["id"]})
        steps = await call(client, "memory-get", key="steps")
        found = await call(client, "memory-search", query="ruff")
        page = await call(client, "memory-list")
    assert got.structured_content is not None
    assert got.structured_content["value"] == SERVICE
    # The text content is the result as JSON: the same value, typed.
    assert json.loads(first_text(got))["value"] == SERVICE
    assert steps["value"] == ["build", {"n": 2}] and steps["id"] == listed["id"]
    assert found["results"][0]["value"] == SERVICE
    assert {m["key"]: m["value"] for m in page["memories"]}["service"] == SERVICE


async def test_a_string_that_reads_as_json_stays_a_string(
    settings: Callable[..., Settings],
) -> None:
    text = '{"owner": "Ann"}'
    async with client_of(settings()) as client:
        await call(client, "store_memory", key="quoted", value=text)
        got = await call(client, "memory-get", key="quoted")
        # Updated to an object, then back to the string: each version keeps its type.
        await call(client, "store_memory", key="quoted", value={"owner": "Ann"})
        typed = await call(client, "memory-get", key="quoted")
        history = await call(client, "memory-history", id=got["id"])
        reverted = await call(client, "memory-revert", id=got["id"], version=1)
        back = await call(client, "memory-get", key="quoted")
    assert got["value"] == text
    assert typed["value"] == {"owner": "Ann"}
    assert [v["value"] for v in history["versions"]] == [text, {"owner": "Ann"}]
    assert reverted["version"] == 3
    assert back["value"] == text


async def test_the_limit_applies_to_the_compact_json(settings: Callable[..., Settings]) -> None:
    async with client_of(settings(max_value_chars=100)) as client:
        fits = await call(client, "store_memory", key="fits", value={"k": "v" * 90})
        too_long = await call_error(client, "store_memory", key="big", value={"k": "v" * 95})
        many = await call_error(client, "store_memory", key="big", value=list(range(60)))
    assert fits["created"]
    assert "invalid value: is 103 characters as JSON; the limit is 100" in too_long
    assert "invalid value" in many


async def test_bad_values_name_the_argument(settings: Callable[..., Settings]) -> None:
    async with client_of(settings()) as client:
        empty = await call_error(client, "store_memory", key="k", value={})
        number = await call_error(client, "store_memory", key="k", value=42)
        deep: Any = "leaf"
        for _ in range(30):
            deep = [deep]
        nested = await call_error(client, "store_memory", key="k", value=deep)
        listed = await call(client, "memory-list")
    assert "invalid value: must not be empty" in empty
    assert "value" in number
    assert "invalid value" in nested and "levels deep" in nested
    assert listed["memories"] == [], "nothing stored"


async def test_a_secret_in_a_leaf_is_redacted_and_the_json_stays_whole(
    settings: Callable[..., Settings],
) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    async with client_of(settings()) as client:
        stored = await call(
            client, "store_memory", key="ci", value={"ci": {"token": token, "host": "gh"}}
        )
        got = await call(client, "memory-get", id=stored["id"])
    assert got["value"]["ci"]["host"] == "gh"
    assert token not in json.dumps(got["value"])
    assert got["value"]["ci"]["token"].startswith("[REDACTED:")
    assert stored["redacted"][0]["field"] == "value.ci.token"
