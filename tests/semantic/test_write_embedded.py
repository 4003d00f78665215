"""A store's path (Gate.write with Vectors.embedding, issue 26): the model embeds the text while the
memory's write transaction commits, the memory's commit waits for the disk and the
vector's does not, and the near-duplicate check uses the vector just computed instead of
reading it back. On a real SQLite file (synchronous=FULL, the default) and on PostgreSQL;
the embedder is FAKE where the test is about order and plumbing, not meaning."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import numpy as np
import pytest
from sqlalchemy import Connection, text

from memory_mcp.models import StoreRequest, Visibility
from memory_mcp.semantic import vectors as vectors_module
from memory_mcp.semantic.passages import embed_memories
from memory_mcp.settings import Settings
from memory_mcp.store.engine import Engines
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

DEADLINE = 10.0
DEPLOY = "Deploys run on Fridays at noon from the release branch"
DEPLOY_AGAIN = "Deploys run on Fridays at noon from the release branch, never later"


class StartedEmbedder(FakeEmbedder):
    """FAKE (see FakeEmbedder): tells when a call has started, and counts the texts."""

    def __init__(self) -> None:
        super().__init__()
        self.started = anyio.Event()
        self.texts: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.started.set()
        self.texts.extend(texts)
        return await super().embed(texts)


def full(make_settings: Callable[..., Settings]) -> Settings:
    """The user's default: every durable commit waits for the disk."""
    return make_settings(synchronous="full")


def record_writes(engines: Engines) -> list[bool]:
    """Wrap `engines.write` and `engines._run_write` (one worker-thread trip on a SQLite
    file, through `write` elsewhere: counted once): the `durable` flag of every write
    transaction, in order."""
    flags: list[bool] = []
    write, run_write = engines.write, engines._run_write
    nested = False

    def recording(*, durable: bool = True) -> AbstractAsyncContextManager[Any]:
        if not nested:
            flags.append(durable)
        return write(durable=durable)

    async def running(statements: Any, durable: bool, *args: Any, **kwargs: Any) -> Any:
        nonlocal nested
        flags.append(durable)
        nested = True
        try:
            return await run_write(statements, durable, *args, **kwargs)
        finally:
            nested = False

    setattr(engines, "write", recording)  # noqa: B010 (mypy refuses assigning to a method)
    setattr(engines, "_run_write", running)  # noqa: B010
    return flags


async def test_the_model_starts_before_the_memory_write_ends(
    make_settings: Callable[..., Settings],
) -> None:
    """The write waits here until the model has started: one after the other (the old
    order: commit, then embed) never gets there."""
    embedder = StartedEmbedder()
    async with opened(full(make_settings), embedder) as app:
        store = app.service.store
        upsert = store.upsert

        async def upsert_once_the_model_runs(*args: Any, **kwargs: Any) -> Any:
            with anyio.fail_after(DEADLINE):
                await embedder.started.wait()
            return await upsert(*args, **kwargs)

        store.upsert = upsert_once_the_model_runs  # type: ignore[method-assign]
        outcome = await app.service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        vectors = app.service.vectors
        assert await store.vectors.has(vectors.model, outcome.record.content_hash)
        assert embedder.texts == [DEPLOY]


async def test_one_durable_commit_per_store_and_the_vector_commits_without_waiting(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(full(make_settings), FakeEmbedder()) as app:
        flags = record_writes(app.service.store._engines)
        outcome = await app.service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        assert flags == [True, False]  # the memory, then its vector
        # Stored again unchanged: one transaction that changes nothing, no vector work.
        flags.clear()
        again = await app.service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        assert (again.changed, flags) == (False, [True])
        vectors = app.service.vectors
        assert await vectors.rows.has(vectors.model, outcome.record.content_hash)


async def test_a_refused_write_saves_no_vector_and_raises_its_own_error(
    make_settings: Callable[..., Settings],
) -> None:
    from memory_mcp.errors import VersionConflictError

    async with opened(full(make_settings), FakeEmbedder()) as app:
        await app.service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        flags = record_writes(app.service.store._engines)
        with pytest.raises(VersionConflictError):
            await app.service.store_memory(
                app.caller, StoreRequest("deploys", DEPLOY_AGAIN, expected_version=7)
            )
        assert flags == [True]  # the refused memory's transaction only
        assert await app.service.vectors.unembedded([DEPLOY_AGAIN]) == [DEPLOY_AGAIN]


async def test_the_near_duplicate_check_reuses_the_vector_just_computed(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(full(make_settings), FakeEmbedder()) as app:
        service = app.service
        first = await service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        second = await service.store_memory(app.caller, StoreRequest("deploy-2", DEPLOY_AGAIN))
        rows, reads = service.vectors.rows, []
        vector = rows.vector

        async def counted(model: str, digest: str) -> Any:
            reads.append(digest)
            return await vector(model, digest)

        rows.vector = counted  # type: ignore[method-assign]
        check = await service.gate.similar_to(app.caller, second.record)
        assert reads == []
        assert [m.key for m in check.memories] == ["deploys"]
        assert check.memories[0].id == first.record.id


async def test_the_background_worker_leaves_a_text_being_embedded_alone(
    make_settings: Callable[..., Settings],
) -> None:
    """While a WriteEmbedding embeds a text its memory is already committed; embed_pending
    meanwhile must not embed it a second time."""
    gate = anyio.Event()

    class HeldEmbedder(StartedEmbedder):
        async def embed(self, texts: list[str]) -> np.ndarray:
            vectors = await super().embed(texts)
            await gate.wait()
            return vectors

    embedder = HeldEmbedder()
    async with opened(full(make_settings), embedder) as app:
        service = app.service
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(service.store_memory, app.caller, StoreRequest("deploys", DEPLOY))
            with anyio.fail_after(DEADLINE):
                await embedder.started.wait()
                while not await service.vectors.has_pending():  # the memory is committed
                    await anyio.sleep(0.01)
                assert await service.vectors.embed_pending() == 0
            gate.set()
        assert embedder.texts == [DEPLOY]
        assert not await service.vectors.has_pending()


async def test_a_lazy_commit_skips_the_disk_wait_and_a_durable_one_keeps_it(
    make_settings: Callable[..., Settings], db_backend: str
) -> None:
    """What the database itself says inside each kind of write transaction. SQLite: 2 is
    FULL (an fsync at every commit), 1 NORMAL (none, in WAL mode). PostgreSQL: a durable
    commit keeps the server's own setting (the test server runs with it off, as a
    throwaway; a real one has it on), a lazy one is off whatever the server's is."""
    sqlite = db_backend == "sqlite"
    question = "PRAGMA synchronous" if sqlite else "SHOW synchronous_commit"
    async with opened(full(make_settings), FakeEmbedder()) as app:
        engines = app.service.store._engines
        async with engines.reader.connect() as conn:
            servers_own = (await conn.exec_driver_sql(question)).scalar()
        expected = {True: 2 if sqlite else servers_own, False: 1 if sqlite else "off"}
        for durable in (True, False, True):  # the last: nothing left over from the lazy one
            async with engines.write(durable=durable) as conn:
                said = (await conn.exec_driver_sql(question)).scalar()
            assert said == expected[durable], (durable, said)

        def ask(conn: Connection) -> Any:
            return conn.exec_driver_sql(question).scalar()

        # The store path's writes (a memory's upsert, its vector): one worker-thread trip
        # on a SQLite file, through `write` elsewhere.
        for durable in (True, False, True):
            run = engines.run_write if durable else engines.run_lazy_write
            said = await run(ask)
            assert said == expected[durable], ("run_write", durable, said)


# Three sentences: a whole text and passages (two model calls).
RELEASE = (
    "Deploys run on Fridays at noon from the release branch. The branch is cut on "
    "Thursday evening by whoever is on call. Nobody deploys in the last week of December."
)


async def test_the_model_starts_before_the_vector_read_answers(
    make_settings: Callable[..., Settings],
) -> None:
    """Whether the text has a vector already is read beside the model's first call: the
    read waits here until the model has started, which a read before the model never
    sees."""
    embedder = StartedEmbedder()
    async with opened(full(make_settings), embedder) as app:
        rows = app.service.vectors.rows
        has = rows.has

        async def has_once_the_model_runs(model: str, digest: str) -> bool:
            with anyio.fail_after(DEADLINE):
                await embedder.started.wait()
            return await has(model, digest)

        rows.has = has_once_the_model_runs  # type: ignore[method-assign]
        outcome = await app.service.store_memory(app.caller, StoreRequest("deploys", RELEASE))
        assert len(embedder.texts) > 1  # the whole text and its passages
        assert await has(app.service.vectors.model, outcome.record.content_hash)


async def test_a_text_with_a_vector_is_not_embedded_again_past_its_first_call(
    make_settings: Callable[..., Settings],
) -> None:
    embedder = StartedEmbedder()
    async with opened(full(make_settings), embedder) as app:
        await app.service.store_memory(app.caller, StoreRequest("deploys", RELEASE))
        before = len(embedder.texts)
        flags = record_writes(app.service.store._engines)
        await app.service.store_memory(app.caller, StoreRequest("deploys-copy", RELEASE))
        assert embedder.texts[before:] == [RELEASE]  # its passages were not embedded
        assert flags == [True]  # the memory's transaction; no vector saved over the old one


async def test_store_and_check_reads_the_index_while_the_model_runs(
    make_settings: Callable[..., Settings],
) -> None:
    """The check's catch-up happens while the model embeds (the model here waits for it:
    after the model it would never come), the check names what similar_to names, and
    the vector is saved before the call returns."""
    caught_up = anyio.Event()

    class WaitsForCatchUp(StartedEmbedder):
        async def embed(self, texts: list[str]) -> np.ndarray:
            await caught_up.wait()
            return await super().embed(texts)

    async with opened(full(make_settings), FakeEmbedder()) as app:
        service = app.service
        first = await service.store_memory(app.caller, StoreRequest("deploys", DEPLOY))
        service.vectors.embedder = WaitsForCatchUp()
        catch_up = service.vectors.search.catch_up

        async def noted_catch_up() -> None:
            await catch_up()
            caught_up.set()

        service.vectors.search.catch_up = noted_catch_up  # type: ignore[method-assign]
        with anyio.fail_after(DEADLINE):
            outcome, check = await service.store_and_check(
                app.caller, StoreRequest("deploy-2", DEPLOY_AGAIN)
            )
        assert check.checked and [m.id for m in check.memories] == [first.record.id]
        assert check == await service.gate.similar_to(app.caller, outcome.record)
        vectors = service.vectors
        assert await vectors.rows.has(vectors.model, outcome.record.content_hash)


async def test_a_failed_check_raises_its_own_error_and_the_vector_is_still_saved(
    make_settings: Callable[..., Settings],
) -> None:
    """The check fails (a read error, say) after the memory is in: the caller gets that
    error as it is (not wrapped in a task group's), and the vector saved beside it stays."""

    class ReadFailed(Exception):
        pass

    async with opened(full(make_settings), FakeEmbedder()) as app:
        service = app.service

        async def failing(*_: Any) -> Any:
            raise ReadFailed("the index could not be read")

        service.gate.similar_to = failing  # type: ignore[method-assign,assignment]
        with pytest.raises(ReadFailed):
            await service.store_and_check(app.caller, StoreRequest("deploys", DEPLOY))
        assert await service.vectors.unembedded([DEPLOY]) == []


# -- passages after the answer (issue 39) ---------------------------------------------------

# Three sentences: the whole text and two passages (semantic/passages.py).
CHAT = (
    "Caroline: I went to the support group yesterday and it was really powerful. "
    "The stories people told there stayed with me all evening long. "
    "I think I want to study counseling next year at the college."
)


class PassageGate(FakeEmbedder):
    """FAKE (see FakeEmbedder): a call of several texts (a memory's passages) waits for
    `release`; a call of one text (a whole text, a query) does not."""

    def __init__(self) -> None:
        super().__init__()
        self.release = anyio.Event()

    async def embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) > 1:
            await self.release.wait()
        return await super().embed(texts)


async def stored_vector(app: Any, digest: str) -> tuple[np.ndarray, bool] | None:
    def read(conn: Connection) -> tuple[np.ndarray, bool] | None:
        row = conn.execute(
            text("SELECT vector, whole_only FROM embeddings WHERE content_hash = :digest"),
            {"digest": digest},
        ).first()
        return None if row is None else (np.frombuffer(row[0], dtype=np.float32), bool(row[1]))

    result: tuple[np.ndarray, bool] | None = await app.service.store._engines.read(read)
    return result


async def test_a_store_answers_with_the_whole_vector_and_the_passages_follow(
    make_settings: Callable[..., Settings],
) -> None:
    """With the passage worker running, the store returns while the passages' call is
    still held: the whole text's vector is saved (marked whole_only) and a search finds
    the memory by it; released, the worker puts the memory's vector in its place, the
    same one the inline path and the catch-up compute."""
    embedder = PassageGate()
    async with opened(full(make_settings), embedder) as app:
        vectors = app.service.vectors
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(vectors.complete_passages)
            await anyio.sleep(0)  # the worker is up
            try:
                with anyio.fail_after(DEADLINE):
                    outcome, check = await app.service.store_and_check(
                        app.caller, StoreRequest("group", CHAT)
                    )
                assert check.checked
                digest = outcome.record.content_hash
                saved = await stored_vector(app, digest)
                assert saved is not None
                vector, whole_only = saved
                whole = (await embedder.embed([CHAT]))[0]
                assert whole_only
                assert np.allclose(vector, whole / np.linalg.norm(whole), atol=1e-6)
                await vectors.search.catch_up()
                view = Visibility(caller=app.caller, now=app.service.clock())
                nearest = await vectors.search.nearest(whole, view, 1)
                assert [memory_id for memory_id, _ in nearest] == [outcome.record.id]
                assert await vectors.has_pending()  # the catch-up would do it if the worker died
                assert await vectors.embed_pending() == 0  # ... but leaves it to the worker now
                embedder.release.set()
                with anyio.fail_after(DEADLINE):
                    await vectors.passages_done()
            finally:  # a failed assertion must not leave the worker held
                embedder.release.set()
            tasks.cancel_scope.cancel()
        final = await stored_vector(app, digest)
        expected = (await embed_memories(embedder, [CHAT]))[0]
        assert final is not None and not final[1]
        assert np.allclose(final[0], expected, atol=1e-6)
        assert not await vectors.has_pending()


async def test_passages_left_behind_are_the_catch_up_s(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text the worker never got to (its queue full here; a killed process alike) stays
    marked whole_only, counts as missing, and embed_pending gives it the memory's vector."""
    monkeypatch.setattr(vectors_module, "PASSAGE_QUEUE", 0)
    embedder = PassageGate()
    embedder.release.set()
    async with opened(full(make_settings), embedder) as app:
        vectors = app.service.vectors
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(vectors.complete_passages)
            await anyio.sleep(0)
            outcome = await app.service.store_memory(app.caller, StoreRequest("group", CHAT))
            tasks.cancel_scope.cancel()
        digest = outcome.record.content_hash
        saved = await stored_vector(app, digest)
        assert saved is not None and saved[1]  # whole_only, and nobody is on it
        assert await vectors.has_pending()
        assert await vectors.embed_pending() == 1
        final = await stored_vector(app, digest)
        expected = (await embed_memories(embedder, [CHAT]))[0]
        assert final is not None and not final[1]
        assert np.allclose(final[0], expected, atol=1e-6)


async def test_one_passage_texts_and_the_before_answer_setting_wait_for_nothing_more(
    make_settings: Callable[..., Settings],
) -> None:
    """A text that is one passage has its memory's vector at once; with
    passage_vectors=before-answer no worker starts and a store waits for its passages."""
    for settings, value in (
        (full(make_settings), DEPLOY),
        (make_settings(synchronous="full", passage_vectors="before-answer"), CHAT),
    ):
        embedder = FakeEmbedder()
        async with opened(settings, embedder) as app:
            vectors = app.service.vectors
            assert vectors.passages_after_answer == (settings.passage_vectors == "after-answer")
            async with anyio.create_task_group() as tasks:
                if vectors.passages_after_answer:
                    tasks.start_soon(vectors.complete_passages)
                    await anyio.sleep(0)
                outcome = await app.service.store_memory(app.caller, StoreRequest("k", value))
                tasks.cancel_scope.cancel()
            saved = await stored_vector(app, outcome.record.content_hash)
            expected = (await embed_memories(embedder, [value]))[0]
            assert saved is not None and not saved[1]
            assert np.allclose(saved[0], expected, atol=1e-6)
