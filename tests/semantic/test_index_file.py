"""The quantised index persisted beside its store (semantic/index_file.py, InProcessIndex in
semantic/vectors.py), on a real SQLite file: a server opens it instead of reading every
vector, catches up from its revision when the store moved on (a search meanwhile is
correct: new memories found, deleted ones gone), rewrites it only when it is behind, and
rebuilds from the store when it is of another store, model or format, or damaged."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import StoreRequest, Visibility
from memory_mcp.semantic import in_process_index as vectors_module
from memory_mcp.semantic import index_file, quantised_index
from memory_mcp.semantic.quantised_index import QuantisedIndex
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.settings import Settings
from memory_mcp.store.stored_vectors import StoredVectors
from tests.conftest import SQLITE_ONLY, opened

pytestmark = [pytest.mark.anyio, SQLITE_ONLY]  # the file sits beside a SQLite store

COUNT = 40


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quantised from 10 vectors on, built 7 rows a page, sign bits for every search."""
    monkeypatch.setattr(vectors_module, "QUANTISE_FROM", 10)
    monkeypatch.setattr(vectors_module, "BUILD_PAGE", 7)
    monkeypatch.setattr(quantised_index, "BITS_FROM", 0)
    monkeypatch.setattr(quantised_index, "SHORTLIST", 5)


def search_of(app: AppContext) -> vectors_module.InProcessIndex:
    search = app.service.vectors.search
    assert isinstance(search, vectors_module.InProcessIndex)
    return search


async def nearest(app: AppContext, text: str, k: int = 3) -> list[int]:
    vectors = app.service.vectors
    await vectors.search.catch_up()
    query = await vectors.embed_query(text)
    hits = await vectors.search.nearest(query, Visibility(caller=app.caller, now=2e9), k)
    return [memory_id for memory_id, _ in hits]


async def filled_store(settings: Settings) -> dict[str, int]:
    """COUNT memories, embedded, and the index written beside them: key -> id."""
    async with opened(settings) as app:
        ids = {}
        for i in range(COUNT):
            stored = await app.service.store_memory(
                app.caller, StoreRequest(f"k{i}", f"topic{i} detail{i} remark{i}")
            )
            ids[f"k{i}"] = stored.record.id
        await app.service.vectors.embed_pending()
        await search_of(app).catch_up()
        assert isinstance(search_of(app).index, QuantisedIndex)
        assert await search_of(app).persist_if_due(time.time())
        assert not await search_of(app).persist_if_due(time.time())  # not behind: not rewritten
    return ids


def no_page_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pages: list[int] = []
    original = StoredVectors.rows_page

    async def counting(self: StoredVectors, *args: Any) -> Any:
        pages.append(1)
        return await original(self, *args)

    monkeypatch.setattr(StoredVectors, "rows_page", counting)
    return pages


async def test_a_server_opens_the_persisted_index_without_reading_the_vectors(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = make_settings()
    ids = await filled_store(settings)
    assert (tmp_path / "memory.db.vectors" / "meta.json").exists()
    pages = no_page_reads(monkeypatch)
    async with opened(settings) as app:
        assert (await nearest(app, "topic7 detail7"))[0] == ids["k7"]
        assert len(search_of(app).index) == COUNT
    assert pages == []


async def test_a_stale_index_catches_up_and_is_rewritten(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = make_settings()
    ids = await filled_store(settings)
    # The store moves on while no server holds the index (another process, the CLI).
    async with opened(settings) as app:
        search_of(app)._opened = True  # this one does not look at the file at all
        await app.service.deletes.delete(app.caller, ids["k3"])
        new = await app.service.store_memory(app.caller, StoreRequest("new", "zebra quartz"))
        await app.service.vectors.embed_pending()
    written = index_file.folder_of(tmp_path / "memory.db") / "meta.json"
    before = written.read_text()
    pages = no_page_reads(monkeypatch)
    async with opened(settings) as app:
        assert (await nearest(app, "zebra quartz"))[0] == new.record.id
        assert ids["k3"] not in await nearest(app, "topic3 detail3", k=COUNT + 1)
        assert await search_of(app).persist_if_due(time.time())  # behind the store: rewritten
        assert written.read_text() != before
    assert pages == []
    async with opened(settings) as app:
        assert (await nearest(app, "zebra quartz"))[0] == new.record.id
        assert search_of(app)._saved_revision == search_of(app).index.revision


@pytest.mark.parametrize("damage", ["model", "ahead", "garbage", "short"])
async def test_an_index_not_of_this_store_is_rebuilt_from_it(
    damage: str,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    settings = make_settings()
    ids = await filled_store(settings)
    folder = index_file.folder_of(tmp_path / "memory.db")
    meta = (folder / "meta.json").read_text()
    if damage == "model":
        (folder / "meta.json").write_text(meta.replace('"model": "', '"model": "other-'))
    elif damage == "ahead":  # written for a store that had gone further (a restored copy)
        revision = int(meta.split('"revision": ')[1].split(",")[0])
        (folder / "meta.json").write_text(
            meta.replace(f'"revision": {revision}', f'"revision": {revision + 99}')
        )
    elif damage == "garbage":
        (folder / "meta.json").write_text("{not json")
    else:
        codes = folder / "codes.npy"
        codes.write_bytes(codes.read_bytes()[:-100])
    pages = no_page_reads(monkeypatch)
    async with opened(settings) as app:
        assert (await nearest(app, "topic9 detail9"))[0] == ids["k9"]
        assert len(search_of(app).index) == COUNT
    assert len(pages) >= COUNT // 7  # built from the store, a page at a time


def test_load_reads_the_arrays_back_unchanged(tmp_path: Path) -> None:
    from tests.semantic.test_quantised_index import both, rows_of, unit_rows

    rows = rows_of(unit_rows(300, seed=9), private_to_bob=frozenset({5, 6}))
    rows[10].tags = ["red", "blue"]
    _, index = both(rows)
    index._remove(20)
    index.revision = 4
    store_file = tmp_path / "memory.db"
    index_file.save(index, store_file, "m1")
    loaded = index_file.load(store_file, "m1", store_revision=4)
    assert loaded is not None
    for name in ("bits", "codes", "scales", "ids", "alive", "owner", "scope", "expires"):
        size = index._size
        assert np.array_equal(getattr(loaded, name)[:size], getattr(index, name)[:size])
    assert loaded._slot_of == index._slot_of
    assert loaded.tags[10] == frozenset({"red", "blue"})
    assert loaded._codes._codes == index._codes._codes
    assert index_file.load(store_file, "m1", store_revision=3) is None


async def asking(app: AppContext, text: str) -> tuple[Vectors, np.ndarray, Visibility]:
    """The app's vectors caught up, `text` embedded as a search, and its caller's view."""
    vectors = app.service.vectors
    await vectors.search.catch_up()
    return vectors, await vectors.embed_query(text), Visibility(caller=app.caller, now=2e9)


async def test_a_shortlist_made_beside_the_keyword_arm_gives_the_same_answer(
    make_settings: Callable[..., Settings],
) -> None:
    """A search cuts its shortlist and reads its exact vectors while the keyword arm
    runs (InProcessIndex.prepare); the answer is the one `nearest` gives without it, the keyword
    candidates' cosines included."""
    settings = make_settings()
    ids = await filled_store(settings)
    async with opened(settings) as app:
        vectors, query, vis = await asking(app, "topic7 detail7")
        also = [ids["k30"], ids["k31"]]
        plain = await vectors.search.nearest(query, vis, 3, also)
        prepared = await vectors.search.prepare(query, vis, 3, None)
        assert prepared is not None
        known = await vectors.search.exact_vectors(also, vis)
        assert sorted(known) == sorted(also)
        assert await vectors.search.nearest(query, vis, 3, also, None, prepared, known) == plain
        assert plain[0][0] == ids["k7"] and {ids["k30"], ids["k31"]} <= {i for i, _ in plain}


async def test_a_shortlist_made_before_a_delta_is_not_used(
    make_settings: Callable[..., Settings],
) -> None:
    """A memory deleted and one written between a search's shortlist and its ranking (a
    catch-up applied meanwhile): the deleted one is not returned, the new one is found."""
    settings = make_settings()
    ids = await filled_store(settings)
    async with opened(settings) as app:
        vectors, query, vis = await asking(app, "topic3 detail3 remark3")
        prepared = await vectors.search.prepare(query, vis, 3, None)
        assert prepared is not None
        assert ids["k3"] in prepared.listed.ids
        await app.service.deletes.delete(app.caller, ids["k3"])
        new = await app.service.store_memory(
            app.caller, StoreRequest("again", "topic3 detail3 remark3")
        )
        await vectors.embed_pending()
        await vectors.search.catch_up()
        hits = [i for i, _ in await vectors.search.nearest(query, vis, 3, (), None, prepared)]
        assert ids["k3"] not in hits
        assert hits[0] == new.record.id
