"""The in-process vector index (semantic/vector_index.py) on its own: slots, growth, removal, the
filter mask and the order of hits. (tests/rules/test_visibility_parity.py holds its mask to the
SQL rule on a real store.)"""

from __future__ import annotations

import numpy as np

from memory_mcp.models import Caller, Role, Scope, Source, Visibility
from memory_mcp.semantic.vector_index import VectorIndex
from memory_mcp.store.index_rows import IndexDelta, IndexRow

DIMENSION = 8
ALICE = Caller("alice", Role.WORKER, "s1")
NOW = 1_000.0


def unit(*values: float) -> np.ndarray:
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[: len(values)] = values
    norm: np.floating = np.linalg.norm(vector)
    return vector / norm


def row(
    memory_id: int,
    vector: np.ndarray | None = None,
    *,
    agent_id: str = "alice",
    scope: Scope = Scope.AGENT,
    session_id: str = "",
    source: Source = Source.MANUAL,
    expires_at: float | None = None,
    tags: tuple[str, ...] = (),
) -> IndexRow:
    return IndexRow(
        memory_id,
        agent_id,
        scope.value,
        session_id,
        source.value,
        expires_at,
        list(tags),
        unit(1.0) if vector is None else vector,
    )


def index_of(*rows: IndexRow, revision: int = 1) -> VectorIndex:
    index = VectorIndex(DIMENSION)
    index.apply(IndexDelta(revision=revision, upserted=list(rows)))
    return index


def spread(count: int, start: int = 1) -> list[IndexRow]:
    """`count` rows whose vectors all differ: row i points along its own angle."""
    rows = []
    for i in range(start, start + count):
        angle = i / (start + count) * np.pi / 2
        rows.append(row(i, unit(float(np.cos(angle)), float(np.sin(angle)))))
    return rows


def ids(hits: list[tuple[int, float]]) -> list[int]:
    return [memory_id for memory_id, _ in hits]


def visible(index: VectorIndex, vis: Visibility) -> set[int]:
    return set(ids(index.search(unit(1.0), vis, 10_000)))


def everything(caller: Caller = ALICE, **filters: object) -> Visibility:
    return Visibility(caller=caller, now=NOW, **filters)  # type: ignore[arg-type]


# -- slots --------------------------------------------------------------------------------


def test_grows_past_its_first_1024_slots() -> None:
    rows = spread(1_500)
    index = index_of(*rows)
    assert len(index) == 1_500
    assert visible(index, everything()) == set(range(1, 1_501))


def test_a_row_past_the_first_slots_is_found_by_its_own_vector() -> None:
    rows = spread(1_500)
    index = index_of(*rows)
    target = rows[1_299]
    assert target.vector is not None
    assert ids(index.search(target.vector, everything(), 1)) == [target.id]


def test_growth_keeps_what_was_there() -> None:
    index = index_of(row(1, unit(1.0), tags=("kept",)), *spread(1_100, start=2))
    assert 1 in visible(index, everything(tags=("kept",)))


def test_a_deleted_rows_slot_is_reused() -> None:
    index = index_of(*spread(1_024))
    capacity = index.vectors.shape[0]
    index.apply(IndexDelta(revision=2, deleted=[7]))
    index.apply(IndexDelta(revision=3, upserted=[row(5_000, unit(0.0, 1.0))]))
    assert index.vectors.shape[0] == capacity


def test_a_reused_slot_answers_for_its_new_row_only() -> None:
    index = index_of(*spread(1_024))
    index.apply(IndexDelta(revision=2, deleted=[7]))
    index.apply(IndexDelta(revision=3, upserted=[row(5_000, unit(0.0, 0.0, 1.0))]))
    hits = index.search(unit(0.0, 0.0, 1.0), everything(), 1)
    assert ids(hits) == [5_000]


def test_a_rewritten_row_keeps_one_slot() -> None:
    index = index_of(row(1, unit(1.0)))
    index.apply(IndexDelta(revision=2, upserted=[row(1, unit(0.0, 1.0), scope=Scope.SWARM)]))
    assert len(index) == 1
    assert ids(index.search(unit(0.0, 1.0), everything(scope=Scope.SWARM), 5)) == [1]


# -- removal ------------------------------------------------------------------------------


def test_a_deleted_row_is_gone() -> None:
    index = index_of(row(1), row(2))
    index.apply(IndexDelta(revision=2, deleted=[1]))
    assert visible(index, everything()) == {2}


def test_a_row_whose_new_vector_is_not_ready_leaves_the_index() -> None:
    index = index_of(row(1), row(2))
    waiting = row(1)
    waiting.vector = None  # its content changed; the new vector comes later
    index.apply(IndexDelta(revision=2, upserted=[waiting]))
    assert visible(index, everything()) == {2}


def test_deleting_an_unknown_id_changes_nothing() -> None:
    index = index_of(row(1))
    index.apply(IndexDelta(revision=2, deleted=[99]))
    assert visible(index, everything()) == {1}


def test_apply_moves_the_revision() -> None:
    index = index_of(row(1), revision=41)
    index.apply(IndexDelta(revision=42))
    assert index.revision == 42


def test_a_removed_id_in_also_is_not_returned() -> None:
    index = index_of(row(1), row(2))
    index.apply(IndexDelta(revision=2, deleted=[2]))
    assert ids(index.search(unit(1.0), everything(), 1, also=[2])) == [1]


# -- the mask -----------------------------------------------------------------------------


def test_another_agents_private_memory_is_masked() -> None:
    index = index_of(row(1), row(2, agent_id="bob"))
    assert visible(index, everything()) == {1}


def test_a_swarm_memory_is_visible_to_everyone() -> None:
    index = index_of(row(1, agent_id="bob", scope=Scope.SWARM))
    assert visible(index, everything(Caller("carol", Role.WORKER, "x"))) == {1}


def test_a_session_memory_is_visible_in_its_session_only() -> None:
    index = index_of(
        row(1, scope=Scope.SESSION, session_id="s1"), row(2, scope=Scope.SESSION, session_id="s2")
    )
    assert visible(index, everything()) == {1}


def test_a_caller_the_index_has_never_seen_sees_no_private_memory() -> None:
    index = index_of(row(1), row(2, scope=Scope.SESSION, session_id="s1"))
    assert visible(index, everything(Caller("carol", Role.WORKER, "s1"))) == set()


def test_the_scope_filter() -> None:
    index = index_of(
        row(1), row(2, scope=Scope.SWARM), row(3, scope=Scope.SESSION, session_id="s1")
    )
    assert visible(index, everything(scope=Scope.SWARM)) == {2}


def test_the_source_filter() -> None:
    index = index_of(row(1), row(2, source=Source.FILE_INDEX))
    assert visible(index, everything(source=Source.FILE_INDEX)) == {2}


def test_every_asked_tag_must_be_there() -> None:
    index = index_of(row(1, tags=("a",)), row(2, tags=("a", "b")), row(3, tags=("b", "c")))
    assert visible(index, everything(tags=("a", "b"))) == {2}


def test_a_memory_expiring_now_is_expired() -> None:
    index = index_of(row(1, expires_at=NOW), row(2, expires_at=NOW + 1), row(3))
    assert visible(index, everything()) == {2, 3}


def test_expired_memories_are_there_when_asked_for() -> None:
    index = index_of(row(1, expires_at=NOW - 1), row(2))
    assert visible(index, everything(include_expired=True)) == {1, 2}


def test_a_kept_mask_ends_when_a_memory_it_lets_through_expires() -> None:
    """The mask is kept between searches of the same caller and filters; the next search
    after a visible memory's expiry does not reuse it."""
    index = index_of(row(1, expires_at=NOW + 10), row(2, expires_at=NOW + 20), row(3))
    assert visible(index, everything()) == {1, 2, 3}
    assert visible(index, Visibility(caller=ALICE, now=NOW + 5)) == {1, 2, 3}
    assert visible(index, Visibility(caller=ALICE, now=NOW + 10)) == {2, 3}
    assert visible(index, Visibility(caller=ALICE, now=NOW + 25)) == {3}
    assert visible(index, Visibility(caller=ALICE, now=NOW)) == {1, 2, 3}  # an earlier time


def test_a_kept_mask_is_not_used_for_another_caller_filter_or_delta() -> None:
    index = index_of(row(1), row(2, agent_id="bob"), row(3, source=Source.FILE_INDEX))
    assert visible(index, everything()) == {1, 3}
    assert visible(index, everything(Caller("bob", Role.WORKER, "s1"))) == {2}
    assert visible(index, everything(source=Source.FILE_INDEX)) == {3}
    index.apply(IndexDelta(revision=2, upserted=[row(4)], deleted=[3]))
    assert visible(index, everything()) == {1, 4}


def test_also_respects_the_mask() -> None:
    index = index_of(row(1), row(2, agent_id="bob"))
    assert ids(index.search(unit(1.0), everything(), 1, also=[2])) == [1]


# -- order and cut ------------------------------------------------------------------------


def test_hits_are_the_k_nearest_best_first() -> None:
    index = index_of(*spread(50))
    query = unit(1.0)
    hits = index.search(query, everything(), 5)
    scores = index.vectors[: len(index)] @ query
    best = sorted(range(1, 51), key=lambda i: -float(scores[i - 1]))[:5]
    assert ids(hits) == best


def test_scores_are_cosine_similarities() -> None:
    index = index_of(row(1, unit(1.0, 1.0)))
    [(_, score)] = index.search(unit(1.0), everything(), 1)
    assert abs(score - np.sqrt(0.5)) < 1e-6


def test_scores_never_rise_down_the_list() -> None:
    index = index_of(*spread(200))
    scores = [score for _, score in index.search(unit(0.3, 1.0), everything(), 40)]
    assert scores == sorted(scores, reverse=True)


def test_k_larger_than_the_visible_rows_returns_them_all() -> None:
    index = index_of(row(1), row(2), row(3, agent_id="bob"))
    assert len(index.search(unit(1.0), everything(), 100)) == 2


def test_also_comes_after_the_top_k_with_its_own_score() -> None:
    index = index_of(row(1, unit(1.0)), row(2, unit(1.0, 0.1)), row(3, unit(0.0, 1.0)))
    hits = index.search(unit(1.0), everything(), 1, also=[3, 1])
    assert hits == [(1, 1.0), (3, 0.0)]


def test_also_alone_with_k_zero() -> None:
    index = index_of(row(1, unit(1.0)), row(2, unit(0.0, 1.0)))
    assert ids(index.search(unit(1.0), everything(), 0, also=[2])) == [2]


def test_an_empty_index_finds_nothing() -> None:
    assert VectorIndex(DIMENSION).search(unit(1.0), everything(), 10) == []
