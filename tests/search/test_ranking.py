"""Fusion and the score scale: unit tests of memory_mcp.search.ranking, then hybrid search through
the service with the real model (retrieval is what these tests judge)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.search.ranking import (
    Relevance,
    fuse,
    is_unrelated,
    min_max,
    search_confidence,
)
from memory_mcp.search.ranking_config import RankingConfig
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, opened

pytestmark = BOTH_BACKENDS

CONFIG = RankingConfig()


def test_min_max_scales_best_to_one_and_worst_to_zero() -> None:
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([0.7]) == [1.0]  # a lone candidate is the best one
    assert min_max([0.3, 0.3]) == [1.0, 1.0]
    assert min_max([]) == []
    assert min_max([0.5, 0.45], min_span=0.25) == pytest.approx([1.0, 0.8])
    assert min_max([0.9, 0.1], min_span=0.25) == [1.0, 0.0]  # spans more: plain min-max


def test_fuse_weights_both_arms_and_stays_in_unit_range() -> None:
    keyword = [(1, 9.0), (2, 3.0), (3, 1.0)]
    vector = [(2, 0.8), (4, 0.6), (1, 0.2), (3, 0.1)]
    fused = fuse(keyword, vector, CONFIG)
    assert set(fused) == {1, 2, 3, 4}
    assert all(0.0 <= item.relevance <= 1.0 for item in fused.values())
    one, two = fused[1], fused[2]
    assert one.keyword == 1.0
    assert one.vector == pytest.approx(1 / 7)
    assert one.relevance == pytest.approx(0.3 * 1.0 + 0.7 * (1 / 7))
    assert two.relevance == pytest.approx(0.3 * 0.25 + 0.7 * 1.0)
    assert fused[4].matched_by == "vector"
    assert fused[2].matched_by == "both"


def test_a_meaning_only_search_is_scaled_by_its_best_cosine_without_reordering() -> None:
    strong = fuse([], [(1, 0.6), (2, 0.3)], CONFIG)
    weak = fuse([], [(1, 0.1), (2, -0.2)], CONFIG)
    assert strong[1].relevance == pytest.approx(0.7 * 1.0 / 0.7)
    assert weak[1].relevance == pytest.approx(search_confidence([], [0.1, -0.2]))
    assert weak[1].relevance < 0.2 < strong[1].relevance
    assert weak[1].relevance > weak[2].relevance, "the order is kept"
    assert search_confidence([(1, 3.0)], [0.01]) == 1.0, "a query word found: full scale"
    assert search_confidence([], [-0.5]) > 0.0


def test_near_equal_candidates_stay_near_equal() -> None:
    """Two memories in a small store: a slightly shorter BM25 winner must not wipe out a
    clearly better meaning match."""
    fused = fuse([(1, 3.3), (2, 3.0)], [(2, 0.54), (1, 0.45)], CONFIG)
    assert fused[2].keyword == pytest.approx(1 - 0.3 / 1.65)
    assert fused[1].vector == pytest.approx(1 - 0.09 / 0.3)
    assert fused[2].relevance > fused[1].relevance


def test_a_word_in_most_memories_weighs_nothing() -> None:
    """FTS5 gives a word found in half of all memories a BM25 of ~1e-6: being the best of
    such matches is no evidence."""
    fused = fuse([(1, 2e-6), (2, 1e-6)], [(2, 0.6), (1, 0.5)], CONFIG)
    assert fused[1].keyword == pytest.approx(1.0)
    assert fused[2].keyword == pytest.approx(1.0)
    assert fused[2].relevance > fused[1].relevance


def test_keyword_only_search_keeps_the_full_range() -> None:
    """While the model loads, keyword relevance alone spans [0, 1]."""
    fused = fuse([(1, 5.0), (2, 1.0)], [], CONFIG)
    assert fused[1].relevance == 1.0
    assert fused[2].relevance == 0.0
    assert fused[1].matched_by == "keyword"


def test_unrelated_means_no_word_and_no_positive_cosine() -> None:
    assert is_unrelated(Relevance(1, keyword=None, vector=0.0, cosine=-0.1))
    assert not is_unrelated(Relevance(1, keyword=0.0, vector=None))
    assert not is_unrelated(Relevance(1, keyword=None, vector=0.0, cosine=0.05))


def test_half_life_override_keeps_the_weights() -> None:
    config = RankingConfig().with_half_life(3.0)
    assert set(config.half_life_days.values()) == {3.0}
    assert (config.vector_weight, config.keyword_weight) == (0.7, 0.3)


@pytest.mark.anyio
async def test_a_small_store_returns_every_related_memory(
    make_settings: Callable[..., Settings],
) -> None:
    """Min-max puts the worst candidate at 0; it must still be returned, not dropped."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        for key, value in [("a", "red apples"), ("b", "red cars"), ("c", "red roses")]:
            await app.service.store_memory(app.caller, StoreRequest(key, value))
        result = await app.service.search(app.caller, SearchRequest("red", limit=10))
    assert sorted(hit.record.key for hit in result.hits) == ["a", "b", "c"]
    assert all(0.0 <= hit.score <= 1.0 for hit in result.hits)


@pytest.mark.anyio
async def test_hybrid_search_finds_identifiers_and_paraphrases(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    memories = {
        "err": "The ingest job fails with ERR_CONN_42 when the proxy drops idle sockets.",
        "deploy": "We deploy to staging with blue-green switches every Tuesday.",
        "cat": "Maria: My cat Luna hates the vet. She hid under the bed all morning!",
        "tea": "The team prefers green tea in the afternoon meetings.",
        "db": "Production runs PostgreSQL 16; backups are taken nightly at 02:00.",
    }
    await real_embedder.wait_ready()
    async with opened(make_settings(), real_embedder) as app:
        for key, value in memories.items():
            await app.service.store_memory(app.caller, StoreRequest(key, value))

        async def top(query: str) -> str:
            hits = (await app.service.search(app.caller, SearchRequest(query, limit=3))).hits
            assert all(0.0 <= h.score <= 1.0 for h in hits)
            assert hits[0].score == max(h.score for h in hits)
            return hits[0].record.key

        assert await top("ERR_CONN_42") == "err"  # an identifier: the keyword arm
        assert await top("how often are database backups made?") == "db"
        assert await top("what pet does Maria have?") == "cat"
        # Meaning alone, no word in common:
        assert await top("Who is afraid of the veterinarian?") == "cat"
        assert await top("which beverage is popular with colleagues?") == "tea"
