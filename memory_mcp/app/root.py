"""The composition root: the only place that reads Settings and wires the parts together."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from memory_mcp.app.context import AppContext
from memory_mcp.app.reads import caller_of, policy_from
from memory_mcp.app.startup import prepare_store_location
from memory_mcp.models import Caller
from memory_mcp.notes.file_memories import FileIndexService
from memory_mcp.notes.folders import note_folders
from memory_mcp.notes.indexer import NoteIndexer
from memory_mcp.rules.service import MemoryService
from memory_mcp.search.ports import VectorSearch
from memory_mcp.semantic.embeddings import Embedder, SentenceTransformerEmbedder
from memory_mcp.semantic.in_process_index import InProcessIndex
from memory_mcp.semantic.passages import vector_model
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.settings import Settings
from memory_mcp.store.engine import Engines, create_engines
from memory_mcp.store.repository import MemoryStore

if TYPE_CHECKING:
    from memory_mcp.auth.oauth import OAuthGrants
    from memory_mcp.auth.tokens import AgentTokens
    from memory_mcp.notes.watcher import NoteWatcher

log = logging.getLogger(__name__)
T = TypeVar("T")

ACCESS_FLUSH_SECONDS = 1.0


def embedder_from(settings: Settings) -> Embedder:
    """The configured runtime, not yet loading (`wait_ready` or `start` begins that)."""
    if settings.embedder == "sentence-transformers":
        return SentenceTransformerEmbedder()
    if settings.embedder == "e5-multilingual":
        from memory_mcp.semantic.e5_embedder import E5Embedder

        return E5Embedder()
    from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
    from memory_mcp.semantic.onnx_model import ensure_in_child

    return OnnxEmbedder(lambda: ensure_in_child(settings.data_dir, settings.model_dir))


def vectors_for(
    engines: Engines, store: MemoryStore, embedder: Embedder, passages_after_answer: bool = True
) -> Vectors:
    """The vector backend (search/ports.py's VectorSearch): the database's own search
    where its Dialect has one (PostgreSQL: pgvector), else a numpy index in this process
    (SQLite)."""
    model = vector_model(embedder.model_name)
    in_database = engines.dialect.vector_search
    search: VectorSearch[Any, Any] = (
        in_database(engines, model) if in_database else InProcessIndex(store.vectors, model)
    )
    return Vectors(store.vectors, embedder, time.time, search, passages_after_answer)


def note_indexer(settings: Settings, service: MemoryService, caller: Caller) -> NoteIndexer:
    return NoteIndexer(
        FileIndexService(service.note_memories),
        caller,
        note_folders(settings),
        settings.note_max_bytes,
        settings.note_max_chunks,
        settings.note_allow_hardlinks,
    )


def auth_of(engines: Engines, settings: Settings) -> tuple[AgentTokens, OAuthGrants]:
    """The HTTP transports' bearer tokens and OAuth grants, imported when first asked for
    (AppContext.tokens, .oauth)."""
    from memory_mcp.auth.oauth import OAuthGrants
    from memory_mcp.auth.tokens import AgentTokens
    from memory_mcp.store.oauth_rows import OAuthStore
    from memory_mcp.store.token_rows import TokenStore

    tokens = AgentTokens(TokenStore(engines))
    oauth = OAuthGrants(
        OAuthStore(engines),
        tokens,
        settings.oauth_access_token_seconds,
        grants_per_agent=settings.max_sessions_per_agent,
    )
    return tokens, oauth


def note_watcher(notes: NoteIndexer) -> NoteWatcher:
    from memory_mcp.notes.watcher import NoteWatcher  # watchfiles: for a server only

    return NoteWatcher(notes)


@asynccontextmanager
async def open_app(
    settings: Settings,
    embedder: Embedder | None = None,
    background: bool = True,
    create: bool = True,
) -> AsyncIterator[AppContext]:
    """Open the store (fast) and, with `background`, start the model loading and the
    workers without waiting for them: the MCP handshake is answered meanwhile.
    `create=False` (commands that only read) raises StoreMissingError instead of creating
    a store."""
    prepare_store_location(settings, create)
    engines = create_engines(settings.database_url, settings.synchronous)
    store = MemoryStore(engines)
    try:
        await store.init_schema()
        embedder = embedder or embedder_from(settings)
        after = settings.passage_vectors == "after-answer"
        vectors = vectors_for(engines, store, embedder, after)
        service = MemoryService(store, embedder, policy_from(settings), vectors)
        caller = caller_of(settings)
        notes = note_indexer(settings, service, caller)
        turns = anyio.Semaphore(settings.max_concurrent_calls)

        def auth() -> tuple[AgentTokens, OAuthGrants]:
            return auth_of(engines, settings)

        if not background:  # CLI commands and tests: no workers, errors stay unwrapped
            yield AppContext(settings, service, caller, notes, auth, turns=turns)
            return
        watcher = note_watcher(notes) if settings.watch else None
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(service.vectors.keep_embedded)
            tasks.start_soon(purge_worker, service, settings.purge_interval_seconds)
            tasks.start_soon(access_worker, service)
            if watcher is not None:
                tasks.start_soon(watcher.run)
            try:
                yield AppContext(settings, service, caller, notes, auth, turns, watcher)
            finally:
                if watcher is not None:
                    watcher.stop()
                tasks.cancel_scope.cancel()
    finally:
        await store.close()


def run_with_app(
    settings: Settings,
    job: Callable[[AppContext], Awaitable[T]],
    background: bool = False,
    create: bool = True,
) -> T:
    """Open the app (store, service, caller) for one CLI command, run `job`, close it."""

    async def runner() -> T:
        async with open_app(settings, background=background, create=create) as app:
            return await job(app)

    return anyio.run(runner)


async def purge_worker(service: MemoryService, interval: float) -> None:
    while True:
        try:
            with anyio.CancelScope(shield=True):  # see Vectors.keep_embedded
                purged = await service.purge_expired()
                faded = await service.decay()
            if purged:
                log.info("purged %d expired memories", purged)
            if faded:
                ids = [f.record.id for f in faded]
                log.info(
                    "archived %d unconfirmed memories under the confidence floor: %s", len(ids), ids
                )
        except Exception:  # a top-level loop: log and keep serving
            log.exception("purge failed; retrying later")
        await anyio.sleep(interval)


async def access_worker(service: MemoryService) -> None:
    """Write the reads counted by memory-get, in one batch a second (store/access_counts.py)."""
    while True:
        await anyio.sleep(ACCESS_FLUSH_SECONDS)
        try:
            with anyio.CancelScope(shield=True):  # see Vectors.keep_embedded
                await service.flush_accesses()
        except Exception:  # a top-level loop: log and keep serving; the counts are kept
            log.exception("saving read counts failed; retrying")
