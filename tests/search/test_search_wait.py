"""A search while the model is still loading waits for it, up to a bound, and a keyword-only
answer says so (`semantic: false` and a notice). The embedder is FAKE: these tests are
about when the vector arm runs, not about what it finds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


async def test_a_search_waits_for_a_model_that_is_nearly_loaded(
    make_settings: Callable[..., Settings],
) -> None:
    """The model becomes ready while the search waits: the answer is a hybrid one, as if
    the client had waited itself (today it would be keyword-only, and silently so)."""
    loading = FakeEmbedder(ready=False)
    settings = make_settings(watch=False, search_model_wait_seconds=60)
    async with Client(build_server(settings, loading, open_app=open_app)) as client:
        await call(client, "store_memory", key="pets", value="the office cat is called Miso")
        answer: dict[str, Any] = {}

        async def search() -> None:
            answer.update(await call(client, "memory-search", query="cat Miso"))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(search)
                await anyio.sleep(0.3)
                assert not answer, "the search answered before the model was ready"
                loading.ready.set()
        assert answer["semantic"] is True
        assert "notices" not in answer
        # (its vector may not be written yet: the worker embeds once the model is there)
        assert answer["results"][0]["key"] == "pets"


async def test_a_search_gives_up_waiting_after_the_bound_and_says_so(
    make_settings: Callable[..., Settings],
) -> None:
    never_ready = FakeEmbedder(ready=False)
    settings = make_settings(watch=False, search_model_wait_seconds=0.3)
    async with Client(build_server(settings, never_ready, open_app=open_app)) as client:
        await call(client, "store_memory", key="pets", value="the office cat is called Miso")
        with anyio.fail_after(60):
            found = await call(client, "memory-search", query="Miso")
        assert found["semantic"] is False
        assert "keyword search only" in found["notices"][0]
        assert [r["key"] for r in found["results"]] == ["pets"]


def test_the_wait_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS", "2.5")
    assert Settings().search_model_wait_seconds == 2.5
    assert Settings.model_fields["search_model_wait_seconds"].default == 5.0
