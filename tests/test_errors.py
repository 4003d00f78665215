"""The project's errors: one hierarchy, and messages that say what happened."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.errors import (
    CapExceededError,
    EmbeddingUnavailableError,
    KeyNotFoundError,
    MemoryMcpError,
    MemoryNotFoundError,
    NotFoundError,
)
from memory_mcp.mcp.server import build_server
from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


def test_embedding_unavailable_is_a_project_error() -> None:
    assert issubclass(EmbeddingUnavailableError, MemoryMcpError)


def test_both_not_found_errors_are_not_found() -> None:
    assert issubclass(KeyNotFoundError, NotFoundError)
    assert issubclass(MemoryNotFoundError, NotFoundError)


async def test_updating_a_missing_key_names_the_key_in_plain_words(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        error = await call_error(client, "store_memory", key="nope", value="v", expected_version=4)
    assert "key 'nope' not found" in error
    assert "expected_version=" not in error  # no debug f-string in what users read


async def test_a_missing_id_is_reported_as_an_id(make_settings: Callable[..., Settings]) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        error = await call_error(client, "memory-get", id=987)
    assert "memory 987 not found" in error


async def test_a_full_cap_is_its_own_error_not_invalid_input(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(agent_id="capped", max_memories_per_agent=1)
    async with open_app(settings, FakeEmbedder(), background=False) as app:
        await app.service.store_memory(app.caller, StoreRequest("p", "pinned", pinned=True))
        with pytest.raises(CapExceededError) as refused:
            await app.service.store_memory(app.caller, StoreRequest("q", "one too many"))
    assert not str(refused.value).startswith("invalid")
