"""The persisted index written without holding the index (InProcessIndex.persist_if_due,
semantic/index_file.py's two steps): searches and catch-ups go on while its arrays are
written, and the slots changed meanwhile (a memory's new vector, its new tags, a deleted
memory, a new one in the freed slot, one past the snapshot's slots, a grow of the arrays)
are right once the file is read back and caught up, its coarse index too. Real files,
numpy and faiss; the store a real SQLite file."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import StoreRequest, Visibility
from memory_mcp.semantic import coarse_index, index_file, quantised_index
from memory_mcp.semantic import in_process_index as vectors_module
from memory_mcp.semantic.quantised_index import QuantisedIndex
from memory_mcp.settings import Settings
from memory_mcp.store.index_rows import IndexDelta
from tests.conftest import SQLITE_ONLY, opened
from tests.semantic.test_index_file import no_page_reads, search_of
from tests.semantic.test_quantised_index import both, rows_of, unit_rows

COUNT = 40
LISTS = 4
QUERIES = ["topic3 detail3", "topic17 remark17", "brand new words", "zebra quartz"]


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quantised from 10 vectors on; a coarse index of a few lists, every one probed (so
    it lists every slot it holds). Every visible memory stays a candidate and is
    re-scored exactly (SHORTLIST and RESCORE_EXTRA exceed the store): an index and its
    copy read back give the same answers even where they put a memory in another slot."""
    monkeypatch.setattr(vectors_module, "QUANTISE_FROM", 10)
    monkeypatch.setattr(quantised_index, "BITS_FROM", 0)
    monkeypatch.setattr(quantised_index, "SHORTLIST", 2 * COUNT)
    monkeypatch.setattr(quantised_index, "RESCORE_EXTRA", 2 * COUNT)
    monkeypatch.setattr(coarse_index, "LISTS", LISTS)
    monkeypatch.setattr(coarse_index, "PROBES", LISTS)


class HeldWrite:
    """index_file.write_arrays held until `release` is set: the test changes the store and
    searches while a save's arrays are being written. `rows_first`: the arrays are
    written before the hold (the file has the snapshot's rows, which the changes then
    make stale), else after it (the file has the changed rows already)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rows_first: bool = True) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        original = index_file.write_arrays

        def held(snapshot: index_file.Snapshot, fresh: Path) -> None:
            if rows_first:
                original(snapshot, fresh)
            self.started.set()
            if not self.release.wait(timeout=60):  # never hang the suite
                raise TimeoutError("the held write was never released")
            if not rows_first:
                original(snapshot, fresh)

        monkeypatch.setattr(index_file, "write_arrays", held)


def facts(index: QuantisedIndex) -> dict[int, tuple[Any, ...]]:
    """Everything the index holds of each live memory, by id (the slots may differ
    between an index and its copy read back and caught up)."""
    names = {code: value for value, code in index._codes._codes.items()}
    return {
        memory_id: (
            index.bits[slot].tobytes(),
            index.codes[slot].tobytes(),
            float(index.scales[slot]),
            names[int(index.owner[slot])],
            names[int(index.session[slot])],
            int(index.scope[slot]),
            names[int(index.source[slot])],
            float(index.expires[slot]),
            float(index.updated[slot]),
            index.tags[slot],
        )
        for memory_id, slot in index._slot_of.items()
    }


def coarse_ids(index: QuantisedIndex) -> list[int]:
    """The ids of the memories the coarse index holds (every list probed), each slot
    checked live."""
    assert index.coarse is not None
    slots = index.coarse.search(np.ones(index.dimension, np.float32), len(index.coarse), None)
    assert len(slots) == len(index.coarse) and bool(index.alive[slots].all())
    return sorted(index.ids[slots].tolist())


async def answers(app: AppContext) -> list[dict[int, float]]:
    """Each of QUERIES' hits, every visible memory asked for (the fake embedder gives many
    equal scores, which an index and its copy read back may order differently): id ->
    cosine."""
    vectors = app.service.vectors
    await vectors.search.catch_up()
    found = []
    for text in QUERIES:
        query = await vectors.embed_query(text)
        hits = await vectors.search.nearest(
            query, Visibility(caller=app.caller, now=2e9), 2 * COUNT
        )
        found.append({memory_id: round(score, 5) for memory_id, score in hits})
    return found


async def store(app: AppContext, key: str, value: str, tags: list[str] | None = None) -> int:
    """Store (or update) a memory, embed it and catch the index up: one delta."""
    stored = await app.service.store_memory(app.caller, StoreRequest(key, value, tags=tags or []))
    await app.service.vectors.embed_pending()
    await app.service.vectors.search.catch_up()
    return stored.record.id


async def filled(app: AppContext) -> dict[str, int]:
    ids = {}
    for i in range(COUNT):
        request = StoreRequest(f"k{i}", f"topic{i} detail{i} remark{i}")
        ids[f"k{i}"] = (await app.service.store_memory(app.caller, request)).record.id
    await app.service.vectors.embed_pending()
    await app.service.vectors.search.catch_up()
    assert isinstance(search_of(app).index, QuantisedIndex)
    return ids


@pytest.fixture(params=[True, False], ids=["rows-written-first", "rows-written-last"])
def held_save(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[HeldWrite]:
    held = HeldWrite(monkeypatch, rows_first=request.param)
    yield held
    held.release.set()  # a failed test does not leave the save's thread waiting


async def reopened_state(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, written_revision: int
) -> tuple[dict[int, tuple[Any, ...]], list[dict[int, float]], list[int] | None]:
    """A new server's index (the file read back, caught up from its revision, never built
    from the store): its facts, its answers to QUERIES, its coarse index's ids."""
    pages = no_page_reads(monkeypatch)
    async with opened(settings) as app:
        found = await answers(app)
        search = search_of(app)
        assert search._saved_revision == written_revision  # read from the file
        index = search.index
        assert isinstance(index, QuantisedIndex)
        state = facts(index), found, coarse_ids(index) if index.coarse is not None else None
    assert pages == []
    return state


@SQLITE_ONLY  # the file sits beside a SQLite store
@pytest.mark.anyio
async def test_searches_and_catch_ups_go_on_while_the_arrays_are_written(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    held_save: HeldWrite,
    tmp_path: Path,
) -> None:
    settings = make_settings()
    async with opened(settings) as app:
        ids = await filled(app)
        search = search_of(app)
        written_revision = search.index.revision
        folder = index_file.folder_of(tmp_path / "memory.db")
        folder.mkdir()  # an older index, replaced and removed
        (folder / "meta.json").write_text("{}")
        wrote: list[bool] = []

        async def persist() -> None:
            wrote.append(await search.persist_if_due(now=0.0))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(persist)
            assert await anyio.to_thread.run_sync(held_save.started.wait, 10)
            with anyio.fail_after(20):  # with the lock held by the save: never
                new = await store(app, "new", "zebra quartz")
                await app.service.deletes.delete(app.caller, ids["k3"])
                during = await answers(app)
            assert search.index.revision > written_revision  # applied during the write
            assert max(during[3], key=during[3].__getitem__) == new
            assert ids["k3"] not in during[0] and len(during[0]) == COUNT
            held_save.release.set()
        assert wrote == [True]
        assert isinstance(search.index, QuantisedIndex)
        in_memory = facts(search.index)
        expected = await answers(app)
    assert not folder.with_name(folder.name + ".new").exists()
    assert not folder.with_name(folder.name + ".old").exists()
    state, found, _ = await reopened_state(settings, monkeypatch, written_revision)
    assert state == in_memory
    assert found == expected == during


@SQLITE_ONLY
@pytest.mark.anyio
async def test_slots_changed_during_the_write_are_right_once_read_back(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    held_save: HeldWrite,
) -> None:
    """With a coarse index: a memory appended past the snapshot's slots (the coarse index
    written after the arrays holds it; the file's arrays do not), a memory's new vector,
    another's new tags, two deleted, one new in a freed slot."""
    settings = make_settings()
    async with opened(settings) as app:
        ids = await filled(app)
        search = search_of(app)
        assert await app.service.vectors.search.build_coarse_if_due()
        index = search.index
        assert isinstance(index, QuantisedIndex) and not index._free
        size, written_revision = index._size, index.revision

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(search.persist_if_due, 0.0)
            assert await anyio.to_thread.run_sync(held_save.started.wait, 10)
            with anyio.fail_after(20):
                appended = await store(app, "appended", "brand new words")
                assert index._slot_of[appended] == size  # past the snapshot's slots
                assert await store(app, "k5", "a different text altogether") == ids["k5"]
                assert await store(app, "k6", "topic6 detail6 remark6", ["red"]) == ids["k6"]
                freed = index._slot_of[ids["k9"]]
                for key in ("k8", "k9"):  # one delta each: k9's slot is the one reused
                    await app.service.deletes.delete(app.caller, ids[key])
                    await app.service.vectors.search.catch_up()
                reused = await store(app, "reused", "topic17 remark17 again")
                assert index._slot_of[reused] == freed < size
            held_save.release.set()
        assert search._saved_revision == written_revision and search.index is index
        in_memory = facts(index)
        assert in_memory[ids["k6"]][-1] == frozenset({"red"})
        expected = await answers(app)
        expected_coarse = coarse_ids(index)
    state, found, read_coarse = await reopened_state(settings, monkeypatch, written_revision)
    assert state == in_memory
    assert found == expected
    assert read_coarse == expected_coarse == sorted(in_memory)


def test_a_save_finished_after_deltas_and_a_grow_reads_back_as_the_index(
    tmp_path: Path,
) -> None:
    """index_file's steps on their own: arrays written from a full index (the next memory
    grows them), then deltas, then `finish`; read back and caught up from the snapshot's
    revision, it is the index."""
    vectors = unit_rows(1_100, seed=31)
    rows = rows_of(vectors)
    _, index = both(rows[:1_024])
    assert index._size == index._capacity  # the next new memory grows every array
    index.attach_coarse(index.coarse_build_started()())
    store_file = tmp_path / "memory.db"
    snapshot = index_file.snapshot_of(index)
    index.save_started()
    fresh = index_file.fresh_folder(store_file)
    index_file.write_arrays(snapshot, fresh)
    changed = rows[9]
    changed.vector, changed.tags = unit_rows(1, seed=99)[0], ["blue"]
    since = IndexDelta(revision=2, upserted=[changed, *rows[1_024:1_050]], deleted=[3, 4])
    index.apply(since)
    reused = rows_of(vectors[:1])[0]
    reused.id = 5_000
    index.apply(IndexDelta(revision=3, upserted=[reused]))
    assert index._capacity > 1_024 and index._slot_of[5_000] < 1_024
    index_file.finish(index, snapshot, fresh, store_file, "m1", index.changed_while_saving())
    index.save_ended()
    loaded = index_file.load(store_file, "m1", store_revision=3)
    assert loaded is not None and loaded.revision == 1
    loaded.apply(IndexDelta(revision=3, upserted=[*since.upserted, reused], deleted=[3, 4]))
    assert facts(loaded) == facts(index)
    assert coarse_ids(loaded) == coarse_ids(index) == sorted(index._slot_of)


def test_how_far_behind_the_file_may_be_grows_with_the_index() -> None:
    assert vectors_module.changes_before_save(0) == vectors_module.SAVE_AFTER_CHANGES
    assert vectors_module.changes_before_save(20_000) == vectors_module.SAVE_AFTER_CHANGES
    assert vectors_module.changes_before_save(1_000_000) == 10_000
    assert vectors_module.changes_before_save(250_000) == 2_500
