"""Vectors: the one component that owns meaning search — embedding memories and queries,
storing their vectors, and the vector backend that finds the nearest ones (`search`, a
VectorSearch of search/ports.py, picked by the composition root). The rules hold one
(`Gate.vectors`, rules/gate.py) and call nothing else for vectors. This layer computes and
keeps vectors; the rules decide and write memories. Over 500 lines: the writers below
share one set of queues and locks (what a store is embedding now, the passage queue, the
query count), which must stay in one place to stay consistent.

Who writes vectors
- `embedding` (a WriteEmbedding), around a memory's write (Gate.write), when the model is
  loaded and the write asked for it: the model embeds the whole text while the write
  transaction commits (its fsync is disk time, the model's is CPU time), then that vector
  is saved in a transaction that does not wait for the disk (a vector can be made again;
  the memory's own commit did wait), before store_memory returns: a memory is found by
  meaning at once, and the near-duplicate check uses the vector just computed, not a read
  of it (store_memory's check runs beside that save: Gate.write_and_check).
  A text of several passages is saved so marked `whole_only` and queued for
  `complete_passages` (a worker `keep_embedded` starts), which saves the memory's vector
  (passages.py: the whole text's and its passages' summed) in its place moments later;
  a search in between ranks the memory with its whole text's vector (the answer waits
  only for what the answer and the very next search need: a store's latency is an
  agent's turn). Without that worker (the
  CLI, tests) or with Settings.passage_vectors "before-answer", the passages are embedded
  before the answer. Notes never are (`embed_now=False`): a big note's chunks would hold
  up every note saved after it.
- `embed_pending`, for every stored text with no memory's vector from the current model:
  texts written while the model loaded, notes, texts written by other processes (the CLI,
  hooks, other servers), and texts left `whole_only` by a full passage queue or a process
  stopped before their passages were in. `keep_embedded` (the server's background
  worker) runs it whenever the store's revision moves. It takes texts in the store's fair order
  (StoredVectors.missing: a small note is not queued behind a big one).
- `embed_texts`, for given texts (`memory-mcp import`, a batch of its file at a time): those
  of them with no vector yet, in one model call, which the embedder spreads over its threads.
Vectors are stored once per (content hash, model) (`embeddings`, store/stored_vectors.py): a change
of tags, metadata or expiry keeps the vector, and a text written twice is embedded once.
Saving one bumps the revision of every memory using it, so every process's index sees it.

When the index syncs
- On SQLite the backend is `InProcessIndex` (semantic/in_process_index.py): every vector in
  a numpy matrix with the facts needed to filter it (semantic/vector_index.py). Before each
  search, and after each background pass, `catch_up` reads the rows whose revision is newer than
  the index's plus the tombstones of deleted ones, in one snapshot, and applies them: a
  write by any process is seen at the next search. It first asks whether
  anything was committed at all since it last looked (PRAGMA data_version, microseconds,
  no trip to a thread), so a search over an unchanged store reads nothing for it. On
  PostgreSQL the backend (pgvector) searches inside the database: nothing to catch up.

What the locks protect
- `InProcessIndex._lock`: one catch-up at a time. Two overlapping ones would read deltas
  from the same revision, and the older could be applied after the newer, moving the index
  back. A search holds it for its shortlist; the background jobs only for their short
  ends (a coarse index attached; a persist's snapshot, then the rows changed while its
  arrays were written), never for their long parts (in_process_index.py).
- `Vectors._embed_lock`: one `embed_pending` or `embed_texts` at a time in a process (the
  background worker, an import, a test), so no missing text is embedded twice.
- `_queries_waiting` is a count, not a lock: the model embeds one call at a time, so a query
  embedding waits for the background call in progress, and `embed_pending` starts no new
  call while a query waits."""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import numpy as np

from memory_mcp.models import MemoryRecord
from memory_mcp.search.ports import VectorSearch
from memory_mcp.semantic import passages
from memory_mcp.semantic.embeddings import Embedder, EmbeddingUnavailableError
from memory_mcp.semantic.passages import (
    add_passages,
    add_passages_of,
    embed_memories,
    embed_whole,
    unit,
)
from memory_mcp.store.memories_table import content_hash

log = logging.getLogger(__name__)

QUERY_YIELD_SECONDS = 0.01
# Query vectors kept for a repeated search text (a retry, the same prompt block again):
# 128 x 384 floats, 200 KB.
QUERY_VECTOR_CACHE = 128
# Vectors of the memories this process wrote last, by content hash: the near-duplicate
# check right after a write reads its vector here, not from the store.
WRITTEN_VECTOR_CACHE = 16
# The background worker: how often it looks for new texts, and how big a bite it takes.
# One batch is about one note chunk (a note saved meanwhile is in the next), embedded in
# short calls: a search's query embedding waits for at most one such call.
EMBED_POLL_SECONDS = 1.0
# Texts waiting for their passages' vectors (complete_passages): a burst of stores beyond
# this leaves the rest to the catch-up, which embeds them in batches.
PASSAGE_QUEUE = 256
EMBED_BATCH_CHARS = 2_000
# Texts this process stored while the model loaded (a write embeds nothing then),
# remembered so that the first search once it is loaded embeds them before it looks: a
# memory stored a moment before is found by meaning, not a second later when the
# background worker gets to it. A search embeds at most SEARCH_EMBEDS of them (a short
# model call); the rest are named in its notices until the worker has them.
STORED_WHILE_LOADING = 256
SEARCH_EMBEDS = 32
EMBED_CALL_CHARS = 1_000


class VectorRows(Protocol):
    """Where vectors are kept: store/stored_vectors.py's StoredVectors (SQLite and PostgreSQL
    bytes; PgStoredVectors adds the pgvector copy)."""

    async def save(
        self,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
        now: float,
        *,
        durable: bool = True,
        whole_only: bool = False,
    ) -> None: ...

    async def has(self, model: str, digest: str) -> bool: ...

    async def vector(self, model: str, digest: str) -> np.ndarray | None: ...

    async def missing(self, model: str, limit: int) -> list[tuple[str, str]]: ...

    async def embedded(self, model: str, digests: Collection[str]) -> set[str]: ...

    async def revision(self) -> int: ...


class Vectors:
    def __init__(
        self,
        rows: VectorRows,
        embedder: Embedder,
        clock: Callable[[], float],
        search: VectorSearch[Any, Any],
        passages_after_answer: bool = True,
    ) -> None:
        """`search`: the vector backend the composition root picked (search/ports.py).
        `passages_after_answer`: a store answers once its whole text's vector is known,
        and the background worker adds its passages' (WriteEmbedding); False: a store
        waits for them (Settings.passage_vectors)."""
        self.passages_after_answer = passages_after_answer
        self.rows = rows
        self.embedder = embedder
        self.clock = clock
        self.search = search
        self._embed_lock = anyio.Lock()
        self._queries_waiting = 0  # query embeddings in flight; background batches wait
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # last used last
        self._written: OrderedDict[str, np.ndarray] = OrderedDict()  # content hash -> vector
        # Content hashes a WriteEmbedding is embedding now, or has queued for the passage
        # worker: the background worker leaves them alone (it would embed the same text
        # again, on the same two cores).
        self._embedding_now: set[str] = set()
        # Texts whose passages are to come (complete_passages): content hash, the whole
        # text's vector as the model gave it, the passages. `_passages_later` while the
        # passage worker runs.
        self._passages_queue: deque[tuple[str, np.ndarray, list[str]]] = deque()
        self._passages_waiting = anyio.Event()
        self._passages_busy = False
        self._passages_later = False
        self._stored_while_loading: OrderedDict[str, str] = OrderedDict()  # hash -> text

    @property
    def model(self) -> str:
        """What memory vectors are stored under: the model and how texts become vectors."""
        return passages.vector_model(self.embedder.model_name)

    # -- searching --------------------------------------------------------------------------

    async def model_ready(self, wait_seconds: float) -> bool:
        """Whether the vector arm can run: a model still loading gets a bounded wait, so
        a client that asks at once gets the same recall as one that waits."""
        if not self.embedder.is_ready():
            with anyio.move_on_after(wait_seconds):
                try:
                    await self.embedder.wait_ready()
                except EmbeddingUnavailableError:
                    return False
        return self.embedder.is_ready()

    async def embed_query(self, text: str) -> np.ndarray:
        """The model embeds one call at a time: a query waits for the background batch in
        progress, and embed_pending starts no new batch while a query is waiting."""
        cached = self._query_vectors.get(text)
        if cached is not None:  # the same question again (a retry, a prompt block)
            self._query_vectors.move_to_end(text)
            return cached
        self._queries_waiting += 1
        try:
            query: np.ndarray = (await self.embedder.embed([text]))[0]
        finally:
            self._queries_waiting -= 1
        query.setflags(write=False)  # shared by every search with this text
        self._query_vectors[text] = query
        if len(self._query_vectors) > QUERY_VECTOR_CACHE:
            self._query_vectors.popitem(last=False)
        return query

    async def memory_vector(self, record: MemoryRecord) -> np.ndarray | None:
        """A stored memory's vector from the current model, or None while it is pending:
        one this process just wrote from memory, any other from the store."""
        written = self._written.get(record.content_hash)
        if written is not None:
            return written
        return await self.rows.vector(self.model, record.content_hash)

    # -- writing ----------------------------------------------------------------------------

    def embedding(self, text: str, now: float) -> WriteEmbedding:
        """A memory's text to embed beside its write, then save beside what follows it (the
        rules' write drives it: rules/gate.py). `now`: the write's time, the vector's too."""
        return WriteEmbedding(self, text, now)

    def _queue_passages(self, digest: str, whole: np.ndarray, parts: list[str]) -> bool:
        """Hand a text's passages to the worker; False when its queue is full (the text is
        then the catch-up's, as after a crash)."""
        if len(self._passages_queue) >= PASSAGE_QUEUE:
            log.info("passage queue full: %s left to the catch-up", digest[:12])
            return False
        self._passages_queue.append((digest, whole, parts))
        self._passages_waiting.set()
        return True

    async def complete_passages(self) -> None:
        """The passage worker (started by `keep_embedded`): the memory's vector of each
        text queued by a `WriteEmbedding`, saved in place of its whole text's. Searches come
        first: it starts no model call while a query embedding waits. While it runs,
        stores leave their passages to it."""
        self._passages_later = True
        try:
            while True:
                if not self._passages_queue:
                    self._passages_waiting = anyio.Event()
                    await self._passages_waiting.wait()
                    continue
                batch = self._take_passages()
                self._passages_busy = True
                try:
                    while self._queries_waiting:
                        await anyio.sleep(QUERY_YIELD_SECONDS)
                    with anyio.CancelScope(shield=True):  # see keep_embedded
                        items = [(whole, parts) for _, whole, parts in batch]
                        done = await add_passages_of(self.embedder, items, EMBED_CALL_CHARS)
                        saved = [(digest, v) for (digest, _, _), v in zip(batch, done, strict=True)]
                        await self.rows.save(self.model, saved, self.clock(), durable=False)
                    for digest, vector in saved:
                        if digest in self._written:
                            self._remember_written(digest, vector)
                except Exception:  # a top-level loop: the catch-up embeds them later
                    log.exception("embedding memories' passages failed")
                finally:
                    for digest, _, _ in batch:
                        self._embedding_now.discard(digest)
                    self._passages_busy = False
        finally:
            self._passages_later = False
            for digest, _, _ in self._passages_queue:  # the catch-up's, at the next start
                self._embedding_now.discard(digest)
            self._passages_queue.clear()

    def _take_passages(self) -> list[tuple[str, np.ndarray, list[str]]]:
        """The queue's first texts, up to EMBED_BATCH_CHARS of passages (at least one): a
        burst of stores is caught up in a few calls, not one each."""
        batch = [self._passages_queue.popleft()]
        chars = sum(len(part) for part in batch[0][2][1:])
        while self._passages_queue:
            more = sum(len(part) for part in self._passages_queue[0][2][1:])
            if chars + more > EMBED_BATCH_CHARS:
                break
            batch.append(self._passages_queue.popleft())
            chars += more
        return batch

    async def passages_done(self) -> None:
        """Wait until the passage worker has nothing queued (tests, benchmarks)."""
        while self._passages_queue or self._passages_busy:
            await anyio.sleep(0.005)

    async def _catch_up_quietly(self) -> None:
        """The check's first read, done while the model runs; a failure is logged, and the
        check reads again (and reports its own error)."""
        try:
            await self.search.catch_up()
        except Exception:
            log.exception("catching the index up beside a store failed")

    def _remember_written(self, digest: str, vector: np.ndarray) -> None:
        vector.setflags(write=False)  # handed to the near-duplicate check as it is
        self._written[digest] = vector
        if len(self._written) > WRITTEN_VECTOR_CACHE:
            self._written.popitem(last=False)

    async def _save_written(
        self, digest: str, vector: np.ndarray, whole_only: bool, now: float
    ) -> None:
        try:
            await self.rows.save(
                self.model, [(digest, vector)], now, durable=False, whole_only=whole_only
            )
        except Exception:  # e.g. the store busy: the memory is in, the worker embeds it
            self._written.pop(digest, None)
            log.exception("saving the vector of a memory just written failed")

    def remember_unembedded(self, digest: str, text: str) -> None:
        """A text stored while the model loaded (embed_stored_while_loading)."""
        self._stored_while_loading[digest] = text
        while len(self._stored_while_loading) > STORED_WHILE_LOADING:
            self._stored_while_loading.popitem(last=False)  # the worker embeds it anyway

    async def embed_stored_while_loading(self) -> int:
        """Before a search's vector arm, the model loaded: embed the texts this process
        stored while it loaded (SEARCH_EMBEDS at most; those the worker embedded since
        cost one read), so the search finds them by meaning. How many still wait."""
        if not self._stored_while_loading:
            return 0
        taken = list(self._stored_while_loading.items())[:SEARCH_EMBEDS]
        try:
            await self.embed_texts([text for _, text in taken])
        except Exception:  # the search goes on by keyword for these; the worker retries
            log.exception("embedding the memories stored while the model loaded failed")
            return len(self._stored_while_loading)
        for digest, _ in taken:
            self._stored_while_loading.pop(digest, None)
        return len(self._stored_while_loading)

    async def has_pending(self) -> bool:
        """Whether some stored text has no vector from the current model yet."""
        return bool(await self.rows.missing(self.model, 1))

    async def embed_pending(
        self,
        batch_size: int = 128,
        progress: Callable[[int], None] | None = None,
        max_batches: int | None = None,
        batch_chars: int | None = None,
        call_chars: int | None = None,
    ) -> int:
        """Embed stored contents that have no vector from the current model yet, in the
        store's fair order (StoredVectors.missing): all of them, or at most `max_batches`
        batches.
        `batch_chars` cuts each batch to about that many characters (at least one text):
        the model embeds one call at a time, so with `call_chars` (see
        passages.embed_memories) a search's query embedding waits for at most one short
        call."""
        done = 0
        batches = 0
        async with self._embed_lock:
            while max_batches is None or batches < max_batches:
                batches += 1
                missing = [
                    (digest, text)
                    for digest, text in await self.rows.missing(self.model, batch_size)
                    if digest not in self._embedding_now  # a WriteEmbedding has them
                ]
                if not missing:
                    return done
                if batch_chars is not None:
                    missing = _first_within(missing, batch_chars)
                while self._queries_waiting:  # searches first
                    await anyio.sleep(QUERY_YIELD_SECONDS)
                vectors = await embed_memories(
                    self.embedder, [text for _, text in missing], call_chars
                )
                await self.rows.save(
                    self.model,
                    [(digest, vectors[i]) for i, (digest, _) in enumerate(missing)],
                    self.clock(),
                )
                done += len(missing)
                if progress:
                    progress(len(missing))
        return done

    async def embed_a_few_pending(self, max_texts: int, max_chars: int) -> bool:
        """For a command with no background worker (the CLI's search): embed at most
        `max_texts` of the stored texts with no vector (about `max_chars`, at least one), in
        the store's fair order, so each such command catches the store up a little. Whether
        some are still waiting after them."""
        async with self._embed_lock:
            missing = [
                (digest, text)
                for digest, text in await self.rows.missing(self.model, max_texts + 1)
                if digest not in self._embedding_now
            ]
            batch = _first_within(missing[:max_texts], max_chars) if max_texts > 0 else []
            if batch:
                vectors = await embed_memories(self.embedder, [text for _, text in batch])
                await self.rows.save(
                    self.model,
                    [(digest, vectors[i]) for i, (digest, _) in enumerate(batch)],
                    self.clock(),
                )
        return len(missing) > len(batch)

    async def unembedded(self, texts: Sequence[str]) -> list[str]:
        """The distinct `texts` (memory values) with no vector from the current model, in
        their order."""
        by_hash = {content_hash(text): text for text in texts}
        done = await self.rows.embedded(self.model, list(by_hash))
        return [text for digest, text in by_hash.items() if digest not in done]

    async def embed_texts(self, texts: Sequence[str]) -> int:
        """Embed those of `texts` (memory values, e.g. a batch of an import) that have no
        vector from the current model yet, in one model call (the embedder spreads a call
        over its threads): how many were embedded."""
        model = self.model
        async with self._embed_lock:
            missing = [(content_hash(text), text) for text in await self.unembedded(texts)]
            if not missing:
                return 0
            while self._queries_waiting:  # searches first
                await anyio.sleep(QUERY_YIELD_SECONDS)
            vectors = await embed_memories(self.embedder, [text for _, text in missing])
            await self.rows.save(
                model, [(d, vectors[i]) for i, (d, _) in enumerate(missing)], self.clock()
            )
        return len(missing)

    async def keep_embedded(self) -> None:
        """The server's background worker: load the model, then keep every stored text
        embedded, including texts written by other processes on the same database, and
        the index caught up with them."""
        try:
            await self.embedder.wait_ready()
        except EmbeddingUnavailableError as exc:
            log.error("semantic search is off: %s; keyword search still works", exc)
            return
        async with anyio.create_task_group() as group:
            if self.passages_after_answer:
                group.start_soon(self.complete_passages)
            await self._catch_up_forever()

    async def _catch_up_forever(self) -> None:
        checked_revision = -1
        while True:
            try:
                # Each step is shielded: shutdown waits for the current batch instead of
                # cutting a query off, which would leave a half-closed aiosqlite connection.
                with anyio.CancelScope(shield=True):
                    revision = await self.rows.revision()
                if revision != checked_revision:
                    while True:
                        with anyio.CancelScope(shield=True):
                            if not await self.embed_pending(
                                max_batches=1,
                                batch_chars=EMBED_BATCH_CHARS,
                                call_chars=EMBED_CALL_CHARS,
                            ):
                                await self.search.catch_up()
                                await self.search.persist_if_due(self.clock())
                                break
                    # Not shielded: a shutdown abandons a build (a minute at 1M).
                    if await self.search.build_coarse_if_due():
                        with anyio.CancelScope(shield=True):
                            await self.search.persist_if_due(self.clock())
                    checked_revision = revision
            except Exception:  # a top-level loop: log and keep serving
                log.exception("embedding worker failed; retrying")
            await anyio.sleep(EMBED_POLL_SECONDS)


class WriteEmbedding:
    """One memory's text, embedded while the transaction that writes it commits, then its
    vector saved while what follows the write runs. The rules drive it in two steps, each
    an `async with` around their own work (rules/gate.py), so nothing of theirs is handed
    down here:

        embedding = vectors.embedding(text, now)
        async with embedding.beside_write(catch_up=True):
            outcome = await store.upsert(...)      # the model embeds meanwhile
        async with embedding.saving():
            check = await find_similar(...)        # the vector is saved meanwhile

    The write's commit waits for the disk (an fsync: milliseconds of waiting), the model
    computes (milliseconds of CPU): side by side a store costs the longer of the two
    instead of their sum. What the answer waits for is the durable write and the whole
    text's vector: the near-duplicate check and a search right after the store use it. The
    passages' vectors (passages.py) follow off the answer's path when the background worker
    runs (`keep_embedded`): the whole text's vector is saved marked `whole_only` and the
    text queued (`_passages_queue`, bounded); the worker saves the memory's vector in its
    place. A text the queue has no room for, or that a stopped or killed process left
    queued, is embedded by the catch-up (`embed_pending`: such a text counts as missing).
    Without the worker (the CLI, tests) the passages are embedded before the write step
    ends, as the answer's vector.

    The vector's commit does not wait for the disk (`durable=False`): it is derived data,
    and the memory's commit did wait; a vector lost to a power cut is embedded again by the
    background worker. Nothing is embedded when the model is not loaded yet (the background
    worker does it when it is) or the text has a memory's vector already; a write that
    fails saves no vector. A failure to embed or to save the vector is logged and leaves it
    to the background worker: the memory is stored either way. While the text is being
    embedded here (or is queued for its passages) the background worker leaves it alone."""

    def __init__(self, vectors: Vectors, text: str, now: float) -> None:
        self.vectors = vectors
        self.text = text
        self.now = now
        self.digest = content_hash(text)
        self.parts = passages.passages(text)
        self.later = vectors._passages_later and len(self.parts) > 1
        self.whole: np.ndarray | None = None  # the whole text's vector as the model gave it
        self.vector: np.ndarray | None = None  # the one saved

    async def _lacks_vector(self) -> bool:
        return not await self.vectors.rows.has(self.vectors.model, self.digest)

    async def _embed(self) -> None:
        embedder = self.vectors.embedder
        try:
            if not embedder.is_ready():
                self.vectors.remember_unembedded(self.digest, self.text)
                return
            self.whole = await embed_whole(embedder, self.text, needed=self._lacks_vector)
            if self.whole is None:
                return
            if self.later:
                self.vector = unit(self.whole)
            else:
                self.vector = await add_passages(embedder, self.whole, self.parts)
        except Exception:  # the memory is stored regardless; the worker retries
            log.exception("embedding a memory as it was written failed")

    @asynccontextmanager
    async def beside_write(self, *, catch_up: bool = False) -> AsyncIterator[None]:
        """The model embeds the text while the body (the write) runs. A write that fails
        raises as it is (not in a task group's error) once the model is done, and saves no
        vector. `catch_up`: once the write is in, the vector index is caught up with the
        store while the model still runs, so a near-duplicate check after it reads nothing
        on the store's path (Vectors.search.catch_up)."""
        self.vectors._embedding_now.add(self.digest)
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._embed)
                try:
                    yield
                except Exception as exc:  # raised once the model is done
                    failure = exc
                else:
                    if catch_up:
                        await self.vectors._catch_up_quietly()
        except BaseException:
            self.vectors._embedding_now.discard(self.digest)
            raise
        if failure is not None:
            self.vectors._embedding_now.discard(self.digest)
            raise failure

    @asynccontextmanager
    async def saving(self) -> AsyncIterator[None]:
        """The vector (if the model made one) saved while the body runs; the body reads it
        from memory (Vectors.memory_vector), and the save ends before this does: a search
        after the store finds the memory by meaning. The body's error is raised as it is,
        once the save ends."""
        vectors = self.vectors
        queued = False
        failure: Exception | None = None
        try:
            async with anyio.create_task_group() as group:
                if self.vector is not None:
                    vectors._remember_written(self.digest, self.vector)
                    if self.later and self.whole is not None:
                        queued = vectors._queue_passages(self.digest, self.whole, self.parts)
                    group.start_soon(
                        vectors._save_written, self.digest, self.vector, self.later, self.now
                    )  # logs its errors
                try:
                    yield
                except Exception as exc:  # raised as it is, once the save ends
                    failure = exc
            if failure is not None:
                raise failure
        finally:
            if not queued:  # a queued text stays the passage worker's until it is done
                vectors._embedding_now.discard(self.digest)


def _first_within(items: list[tuple[str, str]], max_chars: int) -> list[tuple[str, str]]:
    """The leading (digest, text) pairs whose texts total at most `max_chars`; at least one."""
    taken, total = 0, 0
    for _, text in items:
        if taken and total + len(text) > max_chars:
            break
        taken += 1
        total += len(text)
    return items[:taken]
