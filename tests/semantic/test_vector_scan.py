"""A search's full vector scan runs as soon as its query is embedded (in a worker thread on
a large index, while the keyword arm reads the store), and is used only while the index
is unchanged since (vector_index.Scan)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from memory_mcp.models import SearchRequest, StoreRequest, Visibility
from memory_mcp.semantic import in_process_index, vector_index
from memory_mcp.semantic.vector_index import VectorIndex
from memory_mcp.settings import Settings
from memory_mcp.store.index_rows import IndexDelta
from tests.conftest import FakeEmbedder, opened
from tests.semantic.test_vector_index import ALICE, NOW, row, unit

pytestmark = pytest.mark.anyio


def test_a_scan_made_before_a_change_is_not_used() -> None:
    """Memory 1 moves from the query's direction to the opposite one after the scan: the
    search must score its new vector, not the scan's old number."""
    index = VectorIndex(dimension=8)
    index.apply(IndexDelta(1, [row(1, unit(1.0)), row(2, unit(0.6, 0.8))]))
    query = unit(1.0)
    scan = index.scan(query)
    index.apply(IndexDelta(2, [row(1, unit(-1.0))]))
    hits = index.search(query, Visibility(caller=ALICE, now=NOW), 2, scan=scan)
    assert [memory_id for memory_id, _ in hits] == [2, 1]


def test_a_scan_of_the_unchanged_index_gives_the_same_hits() -> None:
    index = VectorIndex(dimension=8)
    index.apply(IndexDelta(1, [row(i, unit(1.0, i / 10)) for i in range(1, 30)]))
    query = unit(1.0, 0.5)
    vis = Visibility(caller=ALICE, now=NOW)
    assert index.search(query, vis, 5, also=[29], scan=index.scan(query)) == index.search(
        query, vis, 5, also=[29]
    )


async def test_a_search_whose_scan_ran_in_a_thread_finds_the_same(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        for i in range(40):
            await service.store_memory(
                caller, StoreRequest(f"k{i}", f"note {i} about lemur {i % 7}")
            )
        inline = await service.search(caller, SearchRequest("lemur 3", limit=10))
        monkeypatch.setattr(in_process_index, "SCAN_IN_THREAD_FROM", 0)
        service.vectors._query_vectors.clear()  # embed again, scan again
        threaded = await service.search(caller, SearchRequest("lemur 3", limit=10))
        assert [(h.record.id, h.score) for h in threaded.hits] == [
            (h.record.id, h.score) for h in inline.hits
        ]


def test_a_scan_split_over_two_threads_scores_every_vector_like_one_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From SPLIT_SCAN_FROM vectors the scan computes its two halves on two threads; every
    slot (an odd count, so the halves differ) gets the score one product would give it."""
    rng = np.random.default_rng(5)
    index = VectorIndex(dimension=8)
    index.apply(
        IndexDelta(1, [row(i, unit(*rng.standard_normal(8).astype(float))) for i in range(1, 102)])
    )
    query = unit(1.0, -0.5, 0.25)
    whole = index.vectors[: len(index)] @ query
    monkeypatch.setattr(vector_index, "SPLIT_SCAN_FROM", 2)
    split = index.scan(query).scores
    assert np.array_equal(split, whole)


def test_a_scan_of_a_small_project_scores_its_rows_alone_with_the_same_hits() -> None:
    """A visibility that lets through under 1/GATHER_BELOW of the slots (one project of
    many) is scanned over those rows alone: the others are never scored, and the search
    finds what the full product finds. Another caller's mask does not reuse it."""
    rng = np.random.default_rng(11)
    rows = [
        replace(row(i, unit(*rng.standard_normal(8).astype(float))), project=f"p{i % 10}")
        for i in range(1, 201)
    ]
    index = VectorIndex(dimension=8)
    index.apply(IndexDelta(1, rows))
    query = unit(1.0, -0.5, 0.25)
    vis = Visibility(caller=ALICE, now=NOW, projects=frozenset({"p3"}))
    scan = index.scan(query, vis)
    assert scan.only is not None
    assert int(np.isfinite(scan.scores).sum()) == 20  # p3's rows alone
    full = index.scan(query)
    assert np.array_equal(scan.scores[scan.only], full.scores[scan.only])
    assert index.search(query, vis, 5, scan=scan) == index.search(query, vis, 5, scan=full)
    other = Visibility(caller=ALICE, now=NOW, projects=frozenset({"p4"}))
    assert index.search(query, other, 5, scan=scan) == index.search(query, other, 5)
    assert {i % 10 for i, _ in index.search(query, other, 5, scan=scan)} == {4}
