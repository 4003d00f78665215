"""The quantised index (semantic/quantised_index.py) on its own: it finds what the exact
index finds, its filters run before every cut (a reader who sees one memory among many,
visible memories that are the farthest by sign bits), and a float32 index converts to it
with the same answers. Vectors: random 384-dimension unit vectors, seeded; recall on real
text is the benchmark's business (docs/VECTOR_INDEX.md)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_mcp.models import Caller, Role, Scope, Visibility
from memory_mcp.semantic import quantised_index
from memory_mcp.semantic.quantised_index import QuantisedIndex, rescored
from memory_mcp.semantic.vector_index import VectorIndex
from memory_mcp.store.index_rows import IndexDelta, IndexRow

DIMENSION = 384
ALICE = Caller("alice", Role.WORKER, "s1")
BOB = Caller("bob", Role.WORKER, "s1")
NOW = 1_000.0


def unit_rows(count: int, seed: int, clusters: int = 100) -> np.ndarray:
    """Unit vectors around `clusters` topics (seeded), not centred on 0 (MiniLM's are not:
    the sign bits' medians matter); uniform random vectors have no near neighbours at all."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((clusters, DIMENSION)) + 0.3
    vectors = topics[rng.integers(0, clusters, count)] + rng.standard_normal((count, DIMENSION))
    unit: np.ndarray = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return unit


def rows_of(vectors: np.ndarray, private_to_bob: frozenset[int] = frozenset()) -> list[IndexRow]:
    return [
        IndexRow(
            i + 1,
            "bob" if i + 1 in private_to_bob else "alice",
            (Scope.AGENT if i + 1 in private_to_bob else Scope.SWARM).value,
            "",
            "manual",
            None,
            [],
            vector,
        )
        for i, vector in enumerate(vectors)
    ]


def both(rows: list[IndexRow]) -> tuple[VectorIndex, QuantisedIndex]:
    exact = VectorIndex(DIMENSION)
    exact.apply(IndexDelta(revision=1, upserted=rows))
    return exact, QuantisedIndex.from_exact(exact)


def search(
    index: QuantisedIndex, vectors: np.ndarray, query: np.ndarray, vis: Visibility, k: int
) -> list[tuple[int, float]]:
    """The index's answer re-scored as InProcessIndex does, with the float32 vectors the
    store would hand back."""
    ranked, also = index.shortlist(query, vis, k)
    exact = {memory_id: vectors[memory_id - 1] for memory_id in ranked + also}
    return rescored(query, ranked, also, exact, k)


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [memory_id for memory_id, _ in hits]


def test_it_finds_what_the_exact_scan_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantised_index, "BITS_FROM", 0)  # sign bits first, as at 1M
    monkeypatch.setattr(quantised_index, "SHORTLIST", 300)
    vectors = unit_rows(3_000, seed=1)
    exact, quantised = both(rows_of(vectors))
    vis = Visibility(caller=ALICE, now=NOW)
    found = 0
    for query in unit_rows(3_040, seed=1)[3_000:]:  # new points on the same topics
        truth = exact.search(query, vis, 10)
        hits = search(quantised, vectors, query, vis, 10)
        found += len(set(ids(truth)) & set(ids(hits)))
        # The scores are the exact ones: the store's float32, not the codes.
        for memory_id, score in hits:
            assert score == pytest.approx(float(vectors[memory_id - 1] @ query), abs=1e-6)
    assert found / 400 >= 0.98


def test_a_reader_who_sees_one_memory_among_many_gets_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(quantised_index, "BITS_FROM", 10)
    monkeypatch.setattr(quantised_index, "SHORTLIST", 20)
    vectors = unit_rows(2_000, seed=3)
    # Bob's one private memory is the farthest from the query of all.
    query = unit_rows(1, seed=4)[0]
    farthest = int(np.argmin(vectors @ query)) + 1
    _, quantised = both(rows_of(vectors, private_to_bob=frozenset({farthest})))
    hits = search(quantised, vectors, query, Visibility(caller=BOB, now=NOW, scope=Scope.AGENT), 10)
    assert ids(hits) == [farthest]
    # And nobody else sees it.
    alice_hits = search(quantised, vectors, query, Visibility(caller=ALICE, now=NOW), 2_000)
    assert farthest not in ids(alice_hits)
    assert len(alice_hits) == 1_999


def test_a_filter_runs_before_the_sign_bit_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """200 visible memories, all farther from the query by sign bits than the 1,800 a
    reader may not see: a post-filter after the shortlist would find none of them."""
    monkeypatch.setattr(quantised_index, "BITS_FROM", 10)
    monkeypatch.setattr(quantised_index, "SHORTLIST", 50)
    vectors = unit_rows(2_000, seed=5)
    query = unit_rows(1, seed=6)[0]
    order = np.argsort(vectors @ query)  # farthest first
    bobs = {int(i) + 1 for i in order[:200]}
    exact, quantised = both(rows_of(vectors, private_to_bob=frozenset(bobs)))
    vis = Visibility(caller=BOB, now=NOW, scope=Scope.AGENT)
    truth = ids(exact.search(query, vis, 10))
    hits = ids(search(quantised, vectors, query, vis, 10))
    assert set(hits) <= bobs
    assert len(hits) == 10  # a filter after the cut would have kept none
    # Far from the query every similarity is alike, so the codes order them loosely.
    assert len(set(hits) & set(truth)) >= 5


def test_writes_after_conversion_land_in_the_codes() -> None:
    vectors = unit_rows(1_500, seed=7)
    exact, quantised = both(rows_of(vectors[:400]))
    capacity = quantised._capacity
    quantised.apply(IndexDelta(revision=2, upserted=rows_of(vectors)[400:], deleted=[1, 2]))
    assert quantised._capacity > capacity  # grown, the codes copied along
    vis = Visibility(caller=ALICE, now=NOW)
    for row in (10, 449, 1_449):
        assert ids(search(quantised, vectors, vectors[row], vis, 3))[0] == row + 1
    assert {1, 2}.isdisjoint(ids(search(quantised, vectors, vectors[0], vis, 1_500)))
    assert len(quantised) == 1_498


def test_also_lists_the_keyword_candidates_a_reader_may_see() -> None:
    vectors = unit_rows(50, seed=8)
    _, quantised = both(rows_of(vectors, private_to_bob=frozenset({7})))
    ranked, also = quantised.shortlist(vectors[0], Visibility(caller=ALICE, now=NOW), 1, [7, 9])
    assert also == [9]
    hits = rescored(vectors[0], ranked, also, {i: vectors[i - 1] for i in [*ranked, 9]}, 1)
    assert ids(hits) == [1, 9]


def million_with_one_of_bobs() -> tuple[QuantisedIndex, np.ndarray, int]:
    """1,000,000 memories private to alice but one, bob's, the nearest of all to the
    query by sign bits and codes: (index, query, bob's memory id)."""
    size, bobs_slot = 1_000_000, 777_777
    index = QuantisedIndex(np.zeros(DIMENSION, dtype=np.float32))
    index._allocate(size)
    rng = np.random.default_rng(10)
    index.bits[:size] = rng.integers(0, 256, (size, DIMENSION // 8), dtype=np.uint8)
    index.codes[:size] = 1
    index.scales[:size] = 1.0
    index.ids[:size] = np.arange(1, size + 1)
    index.alive[:size] = True
    index.owner[:size] = index._codes.code("agent:alice")
    index.session[:size] = index._codes.code("session:")
    index.source[:size] = index._codes.code("source:manual")
    index.scope[:size] = 1  # agent: private to its owner
    index._size = size
    index._slot_of = dict(zip(range(1, size + 1), range(size), strict=True))
    query = unit_rows(1, seed=11)[0]
    index.bits[bobs_slot] = np.packbits(query > index.thresholds)  # nearest of all
    index.codes[bobs_slot] = quantised_index.quantise(query)[0][0]
    index.scales[bobs_slot] = 100.0
    index.owner[bobs_slot] = index._codes.code("agent:bob")
    return index, query, bobs_slot + 1


def test_one_visible_memory_among_a_million() -> None:
    """The issue's case at its size: bob may see one memory of 1,000,000 (alice's are
    private to her); it is the nearest of all by sign bits and codes, and alice, who sees
    the other 999,999, never gets it."""
    index, query, bob = million_with_one_of_bobs()
    ranked, _ = index.shortlist(query, Visibility(caller=BOB, now=NOW), 10)
    assert ranked == [bob]
    ranked, _ = index.shortlist(query, Visibility(caller=ALICE, now=NOW), 10)
    assert len(ranked) == 10 + quantised_index.RESCORE_EXTRA and bob not in ranked


def test_a_scan_made_before_is_used_until_a_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search starts the Hamming pass while its keyword arm reads the store; a delta
    applied meanwhile makes it stale, and the pass runs again."""
    monkeypatch.setattr(quantised_index, "BITS_FROM", 0)
    monkeypatch.setattr(quantised_index, "SHORTLIST", 50)
    vectors = unit_rows(600, seed=12)
    _, quantised = both(rows_of(vectors[:500]))
    vis = Visibility(caller=ALICE, now=NOW)
    query = vectors[550]
    scan = quantised.scan(query)
    assert quantised.shortlist(query, vis, 3, scan=scan) == quantised.shortlist(query, vis, 3)
    quantised.apply(IndexDelta(revision=2, upserted=rows_of(vectors)[500:]))
    ranked, _ = quantised.shortlist(query, vis, 3, scan=scan)
    hits = rescored(query, ranked, [], {i: vectors[i - 1] for i in ranked}, 3)
    assert ids(hits)[0] == 551  # written after the scan, found: the scan was not used
