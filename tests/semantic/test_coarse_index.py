"""A big store's coarse index (semantic/coarse_index.py, real faiss) inside the quantised
index: it finds what the exact scan finds, the visibility mask runs inside its search, it
falls back to the exact passes when its probed lists hold too few visible memories, it
stays in step with deltas (those applied during its build too), and it is persisted and
read back. Small sizes: few lists, seeded clustered vectors (test_quantised_index.py's);
recall on real text at a million is the benchmark's business (docs/VECTOR_INDEX.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_mcp.models import Scope, StoreRequest, Visibility
from memory_mcp.semantic import coarse_index, index_file, quantised_index
from memory_mcp.semantic import in_process_index as vectors_module
from memory_mcp.semantic.quantised_index import QuantisedIndex
from memory_mcp.settings import Settings
from memory_mcp.store.index_rows import IndexDelta
from tests.conftest import SQLITE_ONLY, opened
from tests.semantic.test_quantised_index import (
    ALICE,
    BOB,
    NOW,
    both,
    ids,
    million_with_one_of_bobs,
    rows_of,
    search,
    unit_rows,
)


@pytest.fixture(autouse=True)
def small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    """16 lists, 4 probed; every visible set big enough for the coarse index."""
    monkeypatch.setattr(coarse_index, "LISTS", 16)
    monkeypatch.setattr(coarse_index, "PROBES", 4)
    monkeypatch.setattr(quantised_index, "BITS_FROM", 10)


def with_coarse(index: QuantisedIndex) -> QuantisedIndex:
    index.attach_coarse(index.coarse_build_started()())
    return index


def no_exact_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if a search falls back from the coarse index to the Hamming and int8 passes."""

    def refuse(*args: Any) -> Any:
        raise AssertionError("the coarse index did not answer")

    monkeypatch.setattr(QuantisedIndex, "_exact_pass_candidates", refuse)


def test_it_finds_what_the_exact_scan_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = unit_rows(3_000, seed=21)
    exact, quantised = both(rows_of(vectors))
    with_coarse(quantised)
    assert quantised.coarse is not None and len(quantised.coarse) == 3_000
    no_exact_pass(monkeypatch)
    vis = Visibility(caller=ALICE, now=NOW)
    found = 0
    for query in unit_rows(3_040, seed=21)[3_000:]:
        truth = exact.search(query, vis, 10)
        hits = search(quantised, vectors, query, vis, 10)
        found += len(set(ids(truth)) & set(ids(hits)))
        for memory_id, score in hits:  # exact scores: the store's float32
            assert score == pytest.approx(float(vectors[memory_id - 1] @ query), abs=1e-6)
    assert found / 400 >= 0.95


def test_its_lists_grow_with_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """About 4 x sqrt(vectors) lists, a power of two, and 2 x sqrt(lists) probed: the
    sizes measured at a million (docs/VECTOR_INDEX.md)."""
    monkeypatch.setattr(coarse_index, "LISTS", None)
    monkeypatch.setattr(coarse_index, "PROBES", None)
    assert coarse_index.lists_for(1_000_000) == 4096
    assert coarse_index.lists_for(200_000) == 2048
    assert coarse_index.lists_for(10) == coarse_index.MIN_LISTS
    assert coarse_index.probes_for(4096) == 128
    assert coarse_index.probes_for(1024) == 64


def test_an_outgrown_coarse_index_is_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that has grown to twice the lists its coarse index has gets a new one;
    the old one answers until it is attached."""
    vectors = unit_rows(2_000, seed=27)
    _, quantised = both(rows_of(vectors))
    assert quantised.coarse_is_due()
    with_coarse(quantised)
    assert not quantised.coarse_is_due()
    monkeypatch.setattr(coarse_index, "LISTS", 32)  # what the grown store would get
    assert quantised.coarse_is_due()
    old = quantised.coarse
    build = quantised.coarse_build_started()
    quantised.apply(IndexDelta(revision=2, upserted=[], deleted=[1]))  # during the build
    assert quantised.coarse is old
    quantised.attach_coarse(build())
    assert quantised.coarse is not None and quantised.coarse.lists == 32
    assert len(quantised.coarse) == 1_999 and not quantised.coarse_is_due()
    no_exact_pass(monkeypatch)
    vis = Visibility(caller=ALICE, now=NOW)
    assert ids(search(quantised, vectors, vectors[5], vis, 1)) == [6]


@pytest.mark.parametrize("probes", [16, 1])
def test_a_filter_runs_inside_the_coarse_search(
    probes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob may see 200 memories, the farthest from the query of all 2,000. With every list
    probed, the mask inside the search finds them; with one list probed, too few of them
    are in it and the exact passes answer. Either way: 10 of Bob's, no one else's."""
    monkeypatch.setattr(coarse_index, "PROBES", probes)
    vectors = unit_rows(2_000, seed=22)
    query = unit_rows(1, seed=23)[0]
    bobs = {int(i) + 1 for i in np.argsort(vectors @ query)[:200]}
    exact, quantised = both(rows_of(vectors, private_to_bob=frozenset(bobs)))
    with_coarse(quantised)
    fell_back: list[int] = []
    original = QuantisedIndex._exact_pass_candidates

    def counting(self: QuantisedIndex, *args: Any) -> Any:
        fell_back.append(1)
        return original(self, *args)

    monkeypatch.setattr(QuantisedIndex, "_exact_pass_candidates", counting)
    vis = Visibility(caller=BOB, now=NOW, scope=Scope.AGENT)
    hits = ids(search(quantised, vectors, query, vis, 10))
    assert set(hits) <= bobs and len(hits) == 10
    assert len(set(hits) & set(ids(exact.search(query, vis, 10)))) >= 8
    assert fell_back == ([] if probes == 16 else [1])


def changes(vectors: np.ndarray) -> IndexDelta:
    """100 new memories, two deleted, memory 10's vector replaced by a new one."""
    replaced = rows_of(vectors[:10])[9]
    replaced.vector = unit_rows(1, seed=99)[0]
    return IndexDelta(revision=2, upserted=[*rows_of(vectors)[400:], replaced], deleted=[1, 2])


def assert_in_step(quantised: QuantisedIndex, vectors: np.ndarray) -> None:
    assert quantised.coarse is not None and len(quantised.coarse) == len(quantised) == 498
    vis = Visibility(caller=ALICE, now=NOW)
    assert ids(search(quantised, vectors, vectors[449], vis, 3))[0] == 450  # new
    assert ids(search(quantised, vectors, vectors[20], vis, 3))[0] == 21  # unchanged
    changed = unit_rows(1, seed=99)[0]
    store_vectors = vectors.copy()
    store_vectors[9] = changed
    assert ids(search(quantised, store_vectors, changed, vis, 1)) == [10]  # its new vector
    assert {1, 2}.isdisjoint(ids(search(quantised, vectors, vectors[0], vis, 40)))  # deleted


def test_deltas_after_the_build_keep_it_in_step(monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = unit_rows(500, seed=24)
    _, quantised = both(rows_of(vectors[:400]))
    with_coarse(quantised)
    quantised.apply(changes(vectors))
    no_exact_pass(monkeypatch)
    assert_in_step(quantised, vectors)


def test_deltas_during_the_build_are_caught_up_when_it_is_attached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vectors = unit_rows(500, seed=24)
    _, quantised = both(rows_of(vectors[:400]))
    build = quantised.coarse_build_started()  # the snapshot: 400 memories
    quantised.apply(changes(vectors))  # a delta while the build runs
    quantised.attach_coarse(build())
    no_exact_pass(monkeypatch)
    assert_in_step(quantised, vectors)


def test_it_is_written_and_read_back_with_the_index(tmp_path: Path) -> None:
    vectors = unit_rows(600, seed=25)
    _, quantised = both(rows_of(vectors))
    with_coarse(quantised).revision = 3
    store_file = tmp_path / "memory.db"
    index_file.save(quantised, store_file, "m1")
    loaded = index_file.load(store_file, "m1", store_revision=3)
    assert loaded is not None and loaded.coarse is not None
    assert len(loaded.coarse) == 600
    vis = Visibility(caller=ALICE, now=NOW)
    query = unit_rows(601, seed=25)[600]
    assert search(loaded, vectors, query, vis, 10) == search(quantised, vectors, query, vis, 10)
    # A damaged coarse file: the whole index is rebuilt from the store, as for any part.
    coarse_file = index_file.folder_of(store_file) / index_file.COARSE
    coarse_file.write_bytes(coarse_file.read_bytes()[:1000])
    assert index_file.load(store_file, "m1", store_revision=3) is None


class FakeCoarse:
    """A fake coarse index (this test is about the mask, not about faiss): it proposes a
    memory the reader may not see among its candidates."""

    def __init__(self, proposed: np.ndarray) -> None:
        self.proposed = proposed

    def search(self, query: np.ndarray, k: int, mask: np.ndarray | None) -> np.ndarray:
        return self.proposed[:k]


def test_the_mask_decides_whatever_the_coarse_index_proposes() -> None:
    vectors = unit_rows(300, seed=26)
    _, quantised = both(rows_of(vectors, private_to_bob=frozenset({5})))
    proposed = np.arange(300)  # slot 4 is memory 5, Bob's
    quantised.coarse = FakeCoarse(proposed)  # type: ignore[assignment]
    vis = Visibility(caller=ALICE, now=NOW)
    ranked, _ = quantised.shortlist(vectors[4], vis, 10)
    assert 5 not in ranked and len(ranked) == 10 + quantised_index.RESCORE_EXTRA


@SQLITE_ONLY  # the persisted index sits beside a SQLite store
@pytest.mark.anyio
async def test_a_server_builds_it_in_the_background_and_keeps_it(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors_module, "QUANTISE_FROM", 10)
    monkeypatch.setattr(coarse_index, "LISTS", 2)
    settings = make_settings()
    async with opened(settings) as app:
        stored = []
        for i in range(40):
            text = f"topic{i} detail{i} remark{i}"
            stored.append(await app.service.store_memory(app.caller, StoreRequest(f"k{i}", text)))
        vectors = app.service.vectors
        await vectors.embed_pending()
        await vectors.search.catch_up()
        assert await vectors.search.persist_if_due(vectors.clock())
        assert await vectors.search.build_coarse_if_due()
        assert not await vectors.search.build_coarse_if_due()  # has one
        # A new coarse index is written at once.
        assert await vectors.search.persist_if_due(vectors.clock())
    async with opened(settings) as app:
        search = app.service.vectors.search
        assert isinstance(search, vectors_module.InProcessIndex)
        await app.service.vectors.search.catch_up()
        assert isinstance(search.index, QuantisedIndex) and search.index.coarse is not None
        query = await app.service.vectors.embed_query("topic7 detail7")
        hits = await app.service.vectors.search.nearest(query, Visibility(app.caller, now=2e9), 3)
        assert hits[0][0] == stored[7].record.id


def test_one_visible_memory_among_a_million_with_the_coarse_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same million with a real coarse index built over it: bob, who sees one memory,
    gets it (a visible set that small never goes to the coarse index); alice's search
    goes through the coarse index, its mask inside faiss, and never gets bob's. Every list
    is probed: the million share one vector, so k-means puts them in one list."""
    monkeypatch.setattr(quantised_index, "BITS_FROM", 50_000)
    monkeypatch.setattr(coarse_index, "PROBES", 16)
    index, query, bob = million_with_one_of_bobs()
    with_coarse(index)
    assert index.coarse is not None and len(index.coarse) == 1_000_000
    ranked, _ = index.shortlist(query, Visibility(caller=BOB, now=NOW), 10)
    assert ranked == [bob]
    no_exact_pass(monkeypatch)  # alice's answer must come from the coarse index
    ranked, _ = index.shortlist(query, Visibility(caller=ALICE, now=NOW), 10)
    assert len(ranked) == 10 + quantised_index.RESCORE_EXTRA and bob not in ranked


def test_faiss_threads_wait_without_spinning() -> None:
    """OpenMP's wait policy is read once, when faiss's libgomp loads: a fresh process is
    the only place to see what it got. A policy the user set is theirs."""
    code = (
        "import os; from memory_mcp.semantic.coarse_index import _faiss; _faiss(); "
        "print(os.environ['OMP_WAIT_POLICY'])"
    )
    for given, expected in [({}, "PASSIVE"), ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE")]:
        env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | given
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == expected
