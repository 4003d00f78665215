"""The Vectors component (memory_mcp/semantic/vectors.py) through its own interface, on a real
SQLite file: who writes vectors, what its lock and its query priority guarantee, and how
the in-process index follows writes made through another store on the same file."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import anyio
import numpy as np
import pytest

from memory_mcp.models import Caller, NewMemory, Role, Scope, Source, Visibility
from memory_mcp.semantic.in_process_index import InProcessIndex
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.settings import Settings
from memory_mcp.store.engine import create_engines
from memory_mcp.store.repository import MemoryStore
from memory_mcp.store.stored_vectors import StoredVectors
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

ALICE = Caller("alice", Role.WORKER, "s1")
DEADLINE = 60.0


def memory(key: str, value: str) -> NewMemory:
    return NewMemory(
        key=key,
        value=value,
        scope=Scope.SWARM,
        agent_id="alice",
        session_id="",
        source=Source.MANUAL,
    )


async def write(store: MemoryStore, key: str, value: str) -> int:
    outcome = await store.upsert(
        memory(key, value), expected_version=None, now=1.0, cap=0, may_overwrite_others=True
    )
    return outcome.record.id


async def write_embedded(vectors: Vectors, store: MemoryStore, key: str, value: str) -> None:
    """`write` as the rules' gate writes: the model embeds beside it, the vector saved after."""
    embedding = vectors.embedding(value, 1.0)
    async with embedding.beside_write():
        await write(store, key, value)
    async with embedding.saving():
        pass


class RecordingEmbedder(FakeEmbedder):
    """FAKE (see FakeEmbedder), recording the texts of every call; a call whose first text
    contains a word in `gates` waits for that gate to open."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.finished: list[str] = []
        self.gates: dict[str, anyio.Event] = {}

    async def embed(self, texts: list[str]) -> np.ndarray:
        first = texts[0]
        self.calls.append(first)
        for word, gate in self.gates.items():
            if word in first:
                await gate.wait()
        self.finished.append(first)
        return await super().embed(texts)


class CountingRows:
    """StoredVectors, telling each time `missing` has answered."""

    def __init__(self, rows: StoredVectors) -> None:
        self.rows = rows
        self.missing_answered = 0
        self.answered = anyio.Event()

    async def save(
        self,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
        now: float,
        *,
        durable: bool = True,
        whole_only: bool = False,
    ) -> None:
        await self.rows.save(model, items, now, durable=durable, whole_only=whole_only)

    async def has(self, model: str, digest: str) -> bool:
        return await self.rows.has(model, digest)

    async def vector(self, model: str, digest: str) -> np.ndarray | None:
        return await self.rows.vector(model, digest)

    async def missing(self, model: str, limit: int) -> list[tuple[str, str]]:
        found = await self.rows.missing(model, limit)
        self.missing_answered += 1
        self.answered.set()
        self.answered = anyio.Event()
        return found

    async def embedded(self, model: str, digests: Collection[str]) -> set[str]:
        return await self.rows.embedded(model, digests)

    async def revision(self) -> int:
        return await self.rows.revision()


async def wait_until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(DEADLINE):
        while not condition():
            await anyio.sleep(0.01)


def everyone() -> Visibility:
    return Visibility(caller=ALICE, now=2.0)


async def test_a_written_memory_is_embedded_at_once_when_the_model_is_ready(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        store, vectors = app.service.store, app.service.vectors
        await write_embedded(vectors, store, "k", "a fresh memory")
        record = await store.get(1)
        assert record is not None
        assert await store.vectors.has(vectors.model, record.content_hash)


async def test_a_memory_written_while_the_model_loads_waits_for_embed_pending(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder(ready=False)) as app:
        store, vectors = app.service.store, app.service.vectors
        text = "written before the model"
        await write_embedded(vectors, store, "k", text)
        assert await vectors.has_pending()


async def test_one_text_under_two_keys_is_embedded_once(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        await write(app.service.store, "first", "the same words")
        await write(app.service.store, "second", "the same words")
        assert await app.service.vectors.embed_pending() == 1


async def test_two_embed_pending_at_once_embed_each_text_once(
    make_settings: Callable[..., Settings],
) -> None:
    embedder = RecordingEmbedder()
    async with opened(make_settings(), embedder) as app:
        for n in range(20):
            await write(app.service.store, f"k{n}", f"distinct text number {n}")
        done: list[int] = []

        async def run() -> None:
            done.append(await app.service.vectors.embed_pending(batch_size=4))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            tasks.start_soon(run)
    assert sorted(done) == [0, 20]
    assert len(embedder.calls) == 5


async def test_a_waiting_query_goes_before_the_next_background_call(
    make_settings: Callable[..., Settings],
) -> None:
    """The model embeds one call at a time: a query that arrives during a background call
    must not also wait for the next one."""
    embedder = RecordingEmbedder()
    async with opened(make_settings(), embedder) as app:
        store = app.service.store
        await write(store, "older", "background older")
        await write(store, "newer", "background newer")  # the newest goes first
        rows = CountingRows(store.vectors)
        vectors = Vectors(rows, embedder, app.service.clock, app.service.vectors.search)
        first_batch, query = anyio.Event(), anyio.Event()
        embedder.gates = {"newer": first_batch, "question": query}
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(vectors.embed_pending, 1)
            await wait_until(lambda: embedder.calls == ["background newer"])
            tasks.start_soon(vectors.embed_query, "question")
            await wait_until(lambda: len(embedder.calls) == 2)
            answered = rows.answered
            first_batch.set()
            await answered.wait()  # the second batch is read; the loop decides now
            assert embedder.calls == ["background newer", "question"]
            query.set()
    assert embedder.finished == ["background newer", "question", "background older"]


@SQLITE_ONLY  # the in-process index
async def test_the_index_follows_writes_and_deletes_through_another_store(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    async with opened(settings) as app:
        vectors = app.service.vectors
        assert isinstance(vectors.search, InProcessIndex)
        other = MemoryStore(create_engines(settings.database_url))
        try:
            memory_id = await write(other, "elsewhere", "written by another process")
            await vectors.embed_pending()
            query = await vectors.embed_query("written by another process")
            await vectors.search.catch_up()
            assert [i for i, _ in await vectors.search.nearest(query, everyone(), 5)] == [memory_id]
            await other.delete([memory_id])
            await vectors.search.catch_up()
            assert await vectors.search.nearest(query, everyone(), 5) == []
        finally:
            await other.close()
