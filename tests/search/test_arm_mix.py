"""search/arm_mix.py through `fuse`: a keyword candidate with no vector is ranked on its
words, not as a cosine of zero; a weak cosine does not outrank a keyword hit for being the
search's best; and a note weighs as a manual memory in the prior. The same ranking over
real processes with the real model: tests/cli/test_search_vectorless.py."""

from __future__ import annotations

import pytest

from memory_mcp.models import RankFacts, Source
from memory_mcp.search.arm_mix import ArmWeights, capped_vector, cosine_ceiling
from memory_mcp.search.ranking import fuse, prior_parts
from memory_mcp.search.ranking_config import RankingConfig

CONFIG = RankingConfig()


def test_a_keyword_hit_without_a_vector_ranks_on_its_words() -> None:
    """The issue's numbers: the rollback note the one keyword hit (no vector yet), an
    unrelated memory sharing a word at cosine 0.07, a meaning-only one at 0.15."""
    keyword = [(1, 6.0), (5, 1.0)]
    vector = [(4, 0.15), (5, 0.07), (2, 0.03)]  # the note (1) has none
    fused = fuse(keyword, vector, CONFIG)
    note = fused[1]
    assert note.vector is None and note.keyword == 1.0
    assert note.relevance == pytest.approx(1.0)  # was 0.3: a cosine of zero
    assert note.relevance > fused[5].relevance > fused[2].relevance
    assert note.relevance > fused[4].relevance


def test_a_weak_best_cosine_does_not_outrank_a_keyword_hit() -> None:
    keyword = [(1, 6.0), (2, 5.5)]
    vector = [(2, 0.07), (1, 0.06), (3, 0.02)]
    fused = fuse(keyword, vector, CONFIG)
    # Min-max alone made 0.07 a full 1.0 of the vector arm's 0.7.
    assert fused[2].vector == pytest.approx(cosine_ceiling(0.07))
    assert fused[1].relevance > fused[2].relevance
    assert fused[3].relevance == 0.0  # at or below MiniLM's unrelated level


def test_clear_cosines_are_not_capped() -> None:
    keyword = [(1, 9.0), (2, 3.0), (3, 1.0)]
    vector = [(2, 0.8), (4, 0.6), (1, 0.2), (3, 0.1)]
    fused = fuse(keyword, vector, CONFIG)
    assert fused[2].vector == 1.0
    assert fused[1].vector == pytest.approx(1 / 7)  # below its ceiling (0.5)
    assert fused[4].vector == pytest.approx(5 / 7)


def test_a_meaning_only_search_is_left_to_search_confidence() -> None:
    fused = fuse([], [(1, 0.1), (2, 0.05)], CONFIG)
    assert fused[1].vector == 1.0  # not capped: the whole search is scaled instead
    assert fused[1].search_confidence == pytest.approx((0.1 - 0.05) / 0.3)


def test_the_cap_keeps_the_vector_arms_order() -> None:
    cosines = [-0.1, 0.0, 0.04, 0.05, 0.1, 0.2, 0.34, 0.35, 0.6]
    ceilings = [cosine_ceiling(c) for c in cosines]
    assert ceilings == sorted(ceilings)
    assert ceilings[0] == 0.0 and ceilings[-1] == 1.0
    assert capped_vector(1.0, 0.07, keyword_arm_found=False) == 1.0


def test_arm_weights() -> None:
    both = ArmWeights(0.7, 0.3)
    assert both.relevance(0.5, None) == 0.5  # no vector: its words alone
    assert both.relevance(None, 0.5) == pytest.approx(0.35)  # no query word: a real zero
    assert both.relevance(1.0, 0.0) == pytest.approx(0.3)  # a vector far from the query
    keyword_only = ArmWeights(0.0, 0.3)  # the model not loaded: every candidate so
    assert keyword_only.relevance(0.5, None) == pytest.approx(0.5)


def test_a_note_weighs_as_much_as_a_manual_memory() -> None:
    def quality(source: Source) -> float:
        record = RankFacts(1, source, False, 0.0, None, 0)
        return prior_parts(record, 0.0, CONFIG).source_quality

    assert quality(Source.FILE_INDEX) == quality(Source.MANUAL) == 1.0
