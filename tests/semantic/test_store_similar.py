"""store_memory answers `similar`: the visible memories the new one closely resembles
(memory_mcp/semantic/similar.py), judged by the bundled model, through an in-process MCP client on
SQLite and PostgreSQL. Nothing is merged or dropped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.similar import SIMILAR_MIN_COSINE
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

TESTS = "Run the test suite with `make test`; it creates the .venv first."
TESTS_AGAIN = "To run the tests use make test, which sets up the virtualenv."
CAT = "The office cat is called Miso and sleeps on the printer."


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


async def test_a_paraphrase_is_reported_and_both_are_kept(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    async with Client(build_server(make_settings(), real_embedder, open_app=open_app)) as client:
        first = await call(client, "store_memory", key="test-command", value=TESTS)
        second = await call(client, "store_memory", key="how-to-test", value=TESTS_AGAIN)
        kept = [await call(client, "memory-get", id=m["id"]) for m in (first, second)]
    assert first["similar"] == []
    assert second["similar_checked"] is True
    assert [(m["id"], m["key"]) for m in second["similar"]] == [(first["id"], "test-command")]
    assert second["similar"][0]["score"] >= SIMILAR_MIN_COSINE
    assert [m["value"] for m in kept] == [TESTS, TESTS_AGAIN]


async def test_something_unrelated_is_not_reported(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    async with Client(build_server(make_settings(), real_embedder, open_app=open_app)) as client:
        await call(client, "store_memory", key="test-command", value=TESTS)
        cat = await call(client, "store_memory", key="cat", value=CAT)
    assert cat["similar"] == []


async def test_only_memories_the_writer_can_see_are_reported(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    async with Client(
        build_server(make_settings(agent_id="bob"), real_embedder, open_app=open_app)
    ) as bob:
        await call(bob, "store_memory", key="bobs-private", value=TESTS)  # agent scope
        shared = await call(bob, "store_memory", key="shared", value=TESTS + " ", scope="swarm")
    async with Client(
        build_server(make_settings(agent_id="alice"), real_embedder, open_app=open_app)
    ) as alice:
        mine = await call(alice, "store_memory", key="how-to-test", value=TESTS_AGAIN)
    assert [m["key"] for m in mine["similar"]] == ["shared"]
    assert mine["similar"][0]["id"] == shared["id"]


async def test_not_checked_while_the_model_loads(
    make_settings: Callable[..., Settings],
) -> None:
    loading = FakeEmbedder(ready=False)
    async with Client(build_server(make_settings(), loading, open_app=open_app)) as client:
        await call(client, "store_memory", key="a", value=TESTS)
        second = await call(client, "store_memory", key="b", value=TESTS)
    assert second["similar"] == []
    assert second["similar_checked"] is False


async def test_the_same_text_under_another_key_is_reported_even_before_the_model(
    make_settings: Callable[..., Settings],
) -> None:
    """Vectors are kept per text: a copy of a text embedded earlier has its vector already."""
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        first = await call(client, "store_memory", key="a", value=TESTS)
    loading = FakeEmbedder(ready=False)
    async with Client(build_server(make_settings(), loading, open_app=open_app)) as client:
        copy = await call(client, "store_memory", key="b", value=TESTS)
    assert [(m["id"], m["score"]) for m in copy["similar"]] == [(first["id"], 1.0)]


# Small talk as LoCoMo's turns are stored ("Speaker: text"): they all sound alike, so the
# nearest of a new one does not stand out from the rest (semantic/similar.py, the margin).
SMALL_TALK = [
    "Caroline: Hey Melanie! Great to hear from you, how have you been?",
    "Melanie: Hi Caroline! I've been good, thanks. How about you?",
    "Caroline: Thanks so much, that really means a lot to me!",
    "Melanie: That's awesome, I'm so happy for you!",
    "Caroline: Wow, that sounds amazing! Tell me more.",
    "Melanie: Bye Caroline, take care and talk soon!",
]
SMALL_TALK_NEW = "Caroline: That's so great, I'm really happy to hear that!"
FACT = "Caroline: I signed up for the pottery class on Tuesday evenings at the community center."
FACT_AGAIN = "Caroline: I signed up for the Tuesday evening pottery class at the community center."


async def test_chat_that_sounds_like_all_the_rest_is_not_reported_but_a_repeat_is(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    """Among small talk the nearest earlier turn is close, but no closer than the others:
    nothing is named (a cosine alone named one on 95% of chat stores); a turn that repeats
    an earlier one stands out, and is named."""
    await real_embedder.wait_ready()
    async with Client(build_server(make_settings(), real_embedder, open_app=open_app)) as client:
        for n, text in enumerate([*SMALL_TALK, FACT]):
            await call(client, "store_memory", key=f"turn-{n}", value=text)
        chat = await call(client, "store_memory", key="turn-new", value=SMALL_TALK_NEW)
        again = await call(client, "store_memory", key="turn-again", value=FACT_AGAIN)
    assert chat["similar_checked"] is True
    assert chat["similar"] == []
    assert [m["key"] for m in again["similar"]] == [f"turn-{len(SMALL_TALK)}"]
