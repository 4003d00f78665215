"""What a memory's vector is made of (memory_mcp.semantic.passages)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.passages import (
    MAX_PASSAGES,
    context_label,
    embed_memories,
    embed_memory,
    passages,
    vector_model,
)
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened


def test_a_short_memory_is_embedded_once_as_it_is() -> None:
    assert passages("Use make test before pushing.") == ["Use make test before pushing."]
    assert passages("Ana: see you tomorrow!") == ["Ana: see you tomorrow!"]


def test_every_passage_keeps_the_leading_label() -> None:
    text = (
        "Caroline: Hey Mel, good to see you! I went to a support group yesterday and it "
        "was so powerful. The people there were kind and I want to go again next week."
    )
    parts = passages(text)
    assert parts[0] == text  # the whole text is one of them
    assert len(parts) >= 3
    assert all(p.startswith("Caroline: ") for p in parts[1:])
    assert any("support group yesterday" in p for p in parts[1:])


def test_a_heading_path_is_a_label_too() -> None:
    text = "# Deploy > ## Staging\n\n" + "Staging is refreshed nightly from production. " * 4
    label, body = context_label(text)
    assert label == "# Deploy > ## Staging\n"
    assert body.lstrip().startswith("Staging")
    assert all(p.startswith("# Deploy > ## Staging\n") for p in passages(text)[1:])


def test_what_is_not_a_label() -> None:
    assert context_label("See https://example.com/a: it explains")[0] == ""
    assert context_label("Meeting at 10:30 tomorrow")[0] == ""
    assert context_label("A very long opening clause that goes on and on: then text")[0] == ""


def test_long_memories_get_a_bounded_number_of_passages() -> None:
    text = "Word salad sentence number one. " * 2_000  # 64k characters
    assert len(passages(text)) <= MAX_PASSAGES + 2
    no_punctuation = "x" * 5_000
    assert all(len(p) <= 1_000 for p in passages(no_punctuation)[1:])


def test_vectors_are_stored_under_model_and_recipe() -> None:
    assert vector_model("m") == "m+passages-v1"


@pytest.mark.anyio
async def test_embed_memories_returns_one_unit_vector_per_text() -> None:
    texts = ["short one", "Bo: first sentence here. Second sentence there! " * 5]
    vectors = await embed_memories(FakeEmbedder(), texts)
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    single = await FakeEmbedder().embed(["short one"])
    assert np.allclose(vectors[0], single[0])  # one passage: the plain vector


class CallLog(FakeEmbedder):
    """FAKE embedder that records each call's texts."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return await super().embed(texts)


@pytest.mark.anyio
async def test_one_memory_is_embedded_whole_then_its_passages_together() -> None:
    """A store embeds its text in two calls, so its passages are not padded to the whole
    text's length; one passage: one call."""
    text = "Bo: first sentence here. Second sentence there! " * 5
    log = CallLog()
    await embed_memory(log, text)
    assert log.calls == [[text], passages(text)[1:]]
    log.calls.clear()
    await embed_memory(log, "short one")
    assert log.calls == [["short one"]]


@pytest.mark.anyio
async def test_one_memory_gets_the_vector_a_batch_gives_it(real_embedder: Embedder) -> None:
    """The store path's two calls and the background worker's batch store one vector."""
    await real_embedder.wait_ready()
    texts = [
        "Caroline: Hey Mel, good to see you! I went to a support group yesterday and it "
        "was so powerful. The people there were kind and I want to go again next week.",
        "Run the test suite with `make test`; it creates the .venv first.",
    ]
    batch = await embed_memories(real_embedder, texts)
    for text, expected in zip(texts, batch, strict=True):
        alone = await embed_memory(real_embedder, text)
        assert alone is not None and alone.dtype == np.float32
        assert np.allclose(alone, expected, atol=1e-6)


@pytest.mark.anyio
async def test_the_subject_of_a_long_memory_is_found_by_meaning(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    """Filler around the one informative sentence must not hide it from vector search."""
    chatty = (
        "Nate: Hey Joanna! Long time no see, hope all is well with you and the family. "
        "Things have been busy here, lots going on. Anyway, I took my turtles to the beach "
        "in Tampa yesterday! It was a blast, we stayed until sunset. Talk soon, okay?"
    )
    await real_embedder.wait_ready()
    async with opened(make_settings(), real_embedder) as app:
        await app.service.store_memory(app.caller, StoreRequest("chatty", chatty))
        for i, other in enumerate(
            [
                "Joanna: I baked a vanilla cake with strawberry filling today.",
                "Nate: My gaming team won the regional tournament last weekend.",
                "Joanna: The screenplay draft is almost finished, two scenes left.",
            ]
        ):
            await app.service.store_memory(app.caller, StoreRequest(f"other-{i}", other))
        hits = (
            await app.service.search(app.caller, SearchRequest("Where did Nate take his pets?"))
        ).hits
    assert hits[0].record.key == "chatty"
