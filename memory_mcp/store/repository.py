"""MemoryStore: every SQL statement of the project. It knows tables, not rules: the
service decides who may do what and hands the store finished decisions. Over 500 lines:
it is the store's one front (the rules hold one and nothing else of the store); each
method is a short turn on the engine, the statements themselves live in the modules it
calls."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Collection, Sequence
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import Connection, and_, func, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement

from memory_mcp.errors import (
    MemoryMcpError,
    StoreBusyError,
    StoreUnavailableError,
)
from memory_mcp.models import (
    BatchItem,
    BatchOutcome,
    Caps,
    KeywordFinds,
    KeywordQuery,
    MemoryRecord,
    NewMemory,
    PastVersion,
    Position,
    RankFacts,
    Scope,
    Source,
    UpsertOutcome,
    Visibility,
)
from memory_mcp.store import (
    batch_writes,
    eviction,
    migrations,
    note_keys,
    rescope,
    validity_rows,
    write_context,
    writes,
)
from memory_mcp.store import browsing as browse
from memory_mcp.store import read_statements as reads
from memory_mcp.store.access_counts import AccessTally, PendingAccess
from memory_mcp.store.browsing import BulkDeletion, Selection
from memory_mcp.store.engine import Engines
from memory_mcp.store.keyword import KeywordIndex
from memory_mcp.store.link_rows import LinkStore
from memory_mcp.store.memories_table import (
    IN_CHUNK,
    MEMORIES,
    M,
    next_revision,
    readable_records,
    record_from_row,
    visible_to,
)
from memory_mcp.store.schema import (
    Base,
    MemoryRow,
    StoreMetaRow,
)
from memory_mcp.store.sqlite.file import BUSY_TIMEOUT_MS
from memory_mcp.store.task_agent_rows import TaskAgentRows

log = logging.getLogger(__name__)


# How long a search trusts the soonest expiry among lending memories it last read
# (forget_expired): another process's write is seen within this.
FORGET_RECHECK_SECONDS = 5.0


class MemoryStore:
    def __init__(self, engines: Engines) -> None:
        self._engines = engines
        self._accesses = AccessTally()
        # The database's own parts come from its Dialect (store/dialect.py), chosen with
        # the engines: the keyword arm, and the vectors' statements (store/stored_vectors.py),
        # which memory_mcp/semantic/vectors.py uses.
        self._keywords: KeywordIndex = engines.dialect.keywords
        self.vectors = engines.dialect.stored_vectors(engines)
        self.links = LinkStore(engines)  # the links between memories (store/link_rows.py)
        # No memory that lends words expires before this (forget_expired): a search
        # before it skips the check, a read of ~5 ms under load that would be on every
        # search. This process's writes with an expiry bring it forward; other
        # processes' are seen within FORGET_RECHECK_SECONDS.
        self._lenders_hold_until = -math.inf
        self.task_agents = TaskAgentRows(engines)  # who a task is (store/task_agent_rows.py)

    @property
    def largest_id(self) -> int:
        """The largest id the `memories` table holds: SQLite's INTEGER is 64-bit, the
        PostgreSQL schema's INTEGER 32-bit (its driver refuses a bigger parameter)."""
        return self._engines.dialect.largest_id

    async def close(self) -> None:
        # Reads counted since the last flush; a store too busy to take them within a few
        # seconds loses them (a read count, never a memory).
        with anyio.move_on_after(5, shield=True):
            try:
                await self.flush_accesses()
            except MemoryMcpError as exc:
                log.warning("read counts not saved: %s", exc)
        await self._engines.dispose()

    async def init_schema(self) -> None:
        try:
            await self._init_schema_when_free()
        except (DBAPIError, StoreUnavailableError) as exc:
            # Opening is the operator's business (CLI, server start): name the file and the
            # driver's reason, which the engine's error hook keeps out of tool errors.
            cause = exc if isinstance(exc, DBAPIError) else exc.__cause__
            if not isinstance(cause, DBAPIError):
                raise
            url = self._engines.writer.url.render_as_string(hide_password=True)
            raise StoreUnavailableError(
                f"cannot open the memory store {url}: {cause.orig}"
            ) from exc

    async def _init_schema_when_free(self) -> None:
        """_init_schema, again while the store is busy, up to the busy timeout. Opening a
        file another process is making this moment can be refused at once: a connection's
        `PRAGMA journal_mode = WAL` does not wait in SQLite's busy handler as statements
        do. Every step of opening checks first and is one transaction, so a retry is safe."""
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        while True:
            try:
                await self._init_schema()
                return
            except StoreBusyError:
                if time.monotonic() > deadline:
                    raise
                await anyio.sleep(0.05)

    async def _init_schema(self) -> None:
        # Read first, without the write lock: a store this code stamped needs nothing, and
        # a command or hook that only reads never waits for another process's writes here.
        # A file not there yet is made under the write lock, not by this read's connection.
        file = self._engines.sync_reader.url.database if self._engines.sync_reader else None
        if file and not Path(file).exists():
            state = migrations.EMPTY
        else:
            state = await self._engines.read(migrations.schema_state)
        if state == migrations.CURRENT:
            return
        if state == migrations.EMPTY and self._engines.sync_writer is not None:
            if await self._engines.run_write(migrations.create_new_sqlite):
                return
        await self._bring_up_to_date()

    async def _bring_up_to_date(self) -> None:
        """Every check and step of migrations.py, then the stamp: any store, of any age."""
        async with self._engines.write() as conn:
            await conn.run_sync(Base.metadata.create_all)
            # Columns first: the keyword index (FTS5 triggers, PostgreSQL's generated
            # column) reads the write-time context column.
            await migrations.migrate(conn)
            await self._engines.dialect.create_objects(conn)
            exists = await conn.scalar(
                select(StoreMetaRow.value).where(StoreMetaRow.name == "revision")
            )
            if exists is None:
                await conn.execute(insert(StoreMetaRow).values(name="revision", value=0))
            await migrations.stamp(conn)

    # -- writes ---------------------------------------------------------------------------

    async def upsert(
        self,
        new: NewMemory,
        *,
        expected_version: int | None,
        now: float,
        cap: Caps,
        may_overwrite_others: bool = False,
        take_over: bool = False,
    ) -> UpsertOutcome:
        """Insert or update by identity in one transaction; history keeps the old value.

        `new.agent_id` is the writer: the owner of a new memory, `updated_by` of an update.
        An existing memory owned by someone else (a swarm memory: only swarm identities
        leave the owner out) is refused unless `may_overwrite_others`, a decision the
        service makes (memory_mcp/rules/permissions.py); it is checked here, on the row read
        under the write lock, so no other writer can slip in between the check and the
        write. `take_over` (with `may_overwrite_others`): the writer becomes its owner."""

        def upsert(conn: Connection, reads: dict[int, PendingAccess]) -> UpsertOutcome:
            # This process's counted reads go first, so eviction sees them.
            writes.write_accesses(conn, reads)
            return writes.upsert_row(
                conn, new, expected_version, now, cap, may_overwrite_others, take_over
            )

        if new.expires_at is not None:
            self._lenders_hold_until = min(self._lenders_hold_until, new.expires_at)
        for attempt in range(3):
            reads = self._accesses.take()
            try:
                return await self._engines.run_write(upsert, reads)
            except BaseException as exc:
                self._accesses.put_back(reads)
                if not isinstance(exc, IntegrityError):
                    raise
                # Another writer created the same identity between our read and insert
                # (possible on PostgreSQL); the retry sees it and updates instead.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def upsert_each(
        self, items: Sequence[tuple[NewMemory, int | None, bool]], *, now: float, cap: Caps
    ) -> list[UpsertOutcome]:
        """Upsert each of `items` (the memory, its expected version, whether it may update
        another agent's) as `upsert` does, in order, in ONE transaction: the outcome of
        each, or the first error and nothing written (store_memory with `memories`)."""

        for attempt in range(3):
            reads = self._accesses.take()
            try:
                return await self._engines.run_write(
                    batch_writes.upsert_each, reads, items, now, cap
                )
            except BaseException as exc:
                self._accesses.put_back(reads)
                if not isinstance(exc, IntegrityError) or attempt == 2:
                    raise  # (IntegrityError: see upsert; the retry updates instead)
        raise AssertionError("unreachable")

    async def upsert_many(self, items: Sequence[BatchItem], *, cap: Caps) -> BatchOutcome:
        """Write a batch in ONE transaction (import): all of it is committed or none, so a
        process killed at any moment leaves whole batches. Memories not stored yet are
        inserted in a few statements; identical ones are skipped without a write; the
        rest (updates, a key repeated in the batch) go through `writes.upsert_row` in order. An item
        the store refuses (another agent's swarm memory) is named in the outcome and
        nothing of it is written; the others are. The cap is enforced once per batch."""
        expiries = [item.memory.expires_at for item in items if item.memory.expires_at]
        self._lenders_hold_until = min([self._lenders_hold_until, *expiries])
        for attempt in range(3):
            reads = self._accesses.take()
            try:
                return await self._engines.run_write(writes.upsert_batch, reads, items, cap)
            except BaseException as exc:
                self._accesses.put_back(reads)
                if not isinstance(exc, IntegrityError) or attempt == 2:
                    raise  # (IntegrityError: see upsert; the retry updates instead)
        raise AssertionError("unreachable")

    def touch(self, memory_id: int, now: float) -> int:
        """Count a read without writing now (store/access_counts.py): returns how many of this
        memory's reads are not in the store yet, this one included."""
        return self._accesses.add(memory_id, now)

    async def flush_accesses(self) -> int:
        """Write the counted reads now (the server does it every second); on failure they
        are kept for the next try."""
        if not len(self._accesses):
            return 0
        reads = self._accesses.take()
        try:
            await self._engines.run_write(writes.write_accesses, reads)
        except BaseException:
            self._accesses.put_back(reads)
            raise
        return len(reads)

    async def delete(self, memory_ids: Sequence[int]) -> int:
        if not memory_ids:
            return 0
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            return await conn.run_sync(writes.delete_ids, list(memory_ids), revision)

    async def place(
        self,
        memory_ids: Sequence[int],
        *,
        project: Any = writes.KEEP,
        task: Any = writes.KEEP,
        field: str,
        moved_by: str | None = None,
        now: float | None = None,
    ) -> list[int]:
        """Move memories to another project and/or task, all or none (writes.place; a
        move to another project by `moved_by` is a new version of each, at `now`)."""
        if not memory_ids:
            return []
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            return await conn.run_sync(
                writes.place, list(memory_ids), project, task, field, revision, moved_by, now
            )

    async def rescope(
        self, memory_id: int, version: int, scope: Scope, session_id: str, writer: str, now: float
    ) -> MemoryRecord:
        """Move a memory to another scope in place, a new version (store/rescope.py)."""
        return await self._engines.run_write(
            rescope.rescope, memory_id, version, scope, session_id, writer, now
        )

    async def place_clashes(
        self, memory_ids: Sequence[int], *, project: Any = writes.KEEP, task: Any = writes.KEEP
    ) -> list[str]:
        """The keys of `memory_ids` that `place` would refuse to move there (a read)."""
        if not memory_ids:
            return []
        return await self._engines.read(writes.place_clashes, list(memory_ids), project, task)

    async def archive(self, memory_ids: Sequence[int], now: float) -> None:
        if not memory_ids:
            return
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.run_sync(writes.archive, list(memory_ids), now, revision)

    async def reopen(self, memory_ids: Sequence[int]) -> None:
        """Archived memories (a completed task's) working memories again."""
        if not memory_ids:
            return
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.run_sync(writes.archive, list(memory_ids), None, revision)

    async def task_records(self, project: str, task: str) -> list[MemoryRecord]:
        """Every memory of `task` in `project`, archived ones too, by id."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(MEMORIES).where(M.project == project, M.task == task).order_by(M.id)
            )
            return readable_records(rows)

    async def has_project(self, project: str) -> bool:
        """Whether any memory is in `project` (one indexed lookup)."""
        async with self._engines.reader.connect() as conn:
            found = await conn.scalar(select(M.id).where(M.project == project).limit(1))
            return found is not None

    async def projects_named_like(self, project: str) -> list[str]:
        """The projects whose names differ from `project` only in case."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.scalars(
                select(M.project).where(func.lower(M.project) == project.lower()).distinct()
            )
            return sorted(rows.all())

    async def quarantined_records(self, limit: int) -> list[MemoryRecord]:
        """The memories held for approval (rules/quarantine.py), oldest first: every
        agent's, for the lead's review (no Visibility lets them through)."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(MEMORIES).where(M.quarantined).order_by(M.id).limit(limit)
            )
            return readable_records(rows)

    async def release(self, memory_ids: Sequence[int]) -> None:
        """Serve the quarantined memories `memory_ids` from now on (approved); their
        versions and history stay as they are."""
        if not memory_ids:
            return
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.execute(
                update(MEMORIES)
                .where(M.id.in_(list(memory_ids)), M.quarantined)
                .values(quarantined=False, revision=revision)
            )

    async def unconfirmed(self, sources: Collection[str]) -> list[MemoryRecord]:
        """The memories of `sources` that decay could archive (rules/decay.py): not
        pinned, not archived, not held for approval; every agent's."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(MEMORIES)
                .where(
                    M.source.in_(list(sources)),
                    M.pinned.is_(False),
                    M.archived_at.is_(None),
                    M.quarantined.is_(False),
                )
                .order_by(M.id)
            )
            return readable_records(rows)

    async def project_counts(self, vis: Visibility) -> dict[str, int]:
        """How many memories `vis` shows in each project."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(M.project, func.count()).where(visible_to(vis)).group_by(M.project)
            )
            return {row[0]: int(row[1]) for row in rows}

    async def purge_expired(self, now: float) -> int:
        """Delete the memories expired by `now`. It reads first: most sweeps find nothing,
        and those take no write lock (every agent's server sweeps as it starts)."""
        if not await self._engines.read(reads.any_expired, now):
            return 0
        async with self._engines.write() as conn:
            ids = list((await conn.scalars(select(M.id).where(reads.expired_by(now)))).all())
            if not ids:
                return 0
            revision = await conn.run_sync(next_revision)
            return await conn.run_sync(writes.delete_ids, ids, revision, now)

    async def forget_expired(self, now: float) -> int:
        """Take the words of memories expired by `now` back from their neighbours'
        contexts (write_context.forget_expired). Almost always there are none: then no
        read before the soonest expiry among the lenders (or the recheck), and no write."""
        if now < self._lenders_hold_until:
            return 0
        forgotten = 0
        soonest = await self._engines.read(reads.soonest_lender_expiry)
        if soonest is not None and soonest <= now:
            async with self._engines.write() as conn:
                forgotten = await conn.run_sync(write_context.forget_expired, now)
            soonest = await self._engines.read(reads.soonest_lender_expiry)
        recheck = now + FORGET_RECHECK_SECONDS
        self._lenders_hold_until = recheck if soonest is None else min(soonest, recheck)
        return forgotten

    async def close_window(self, old_id: int, new_id: int, at: float) -> None:
        """Memory `old_id` is superseded by `new_id` from `at` (validity_rows.close_window)."""
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.run_sync(validity_rows.close_window, old_id, new_id, at, revision)

    async def open_window(self, memory_id: int) -> None:
        """Memory `memory_id` holds again (validity_rows.open_window)."""
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.run_sync(validity_rows.open_window, memory_id, revision)

    async def versions_at(self, memory_ids: Sequence[int], at: float) -> dict[int, PastVersion]:
        if not memory_ids:
            return {}
        return await self._engines.read(validity_rows.versions_at, list(memory_ids), at)

    async def past_versions_holding(
        self, terms: list[str], vis: Visibility, limit: int
    ) -> list[PastVersion]:
        return await self._engines.read(validity_rows.past_versions_holding, terms, vis, limit)

    async def get(self, memory_id: int) -> MemoryRecord | None:
        """The memory, or None; DamagedMemoryError if its row cannot be read."""
        return await self._engines.read(reads.record_by_id, memory_id)

    async def fetch_many(self, memory_ids: Sequence[int]) -> dict[int, MemoryRecord]:
        if not memory_ids:
            return {}
        return await self._engines.read(reads.records_by_id, list(memory_ids))

    async def rank_facts(
        self, memory_ids: Sequence[int], whole: Sequence[int] = ()
    ) -> tuple[dict[int, RankFacts], dict[int, MemoryRecord]]:
        """What ranking needs of `memory_ids` (no text, no JSON to parse), and in the same
        read the whole records of `whole` (those likely to be returned): a search reads
        this for its candidates, and whole records for its results only."""
        if not memory_ids and not whole:
            return {}, {}
        return await self._engines.read(reads.facts_and_records, list(memory_ids), list(whole))

    async def recent(self, vis: Visibility, limit: int) -> list[MemoryRecord]:
        """Visible memories, pinned first, then most recently used (the prompt-block pool)."""
        return await self._engines.read(reads.recent, vis, limit)

    # -- file-backed memories (notes) -------------------------------------------------------

    @staticmethod
    def _file_owner(scope: Scope, agent_id: str | None, source: Source) -> ColumnElement[bool]:
        conditions = [M.scope == scope.value, M.source == source.value]
        if agent_id is not None:
            conditions.append(M.agent_id == agent_id)
        return and_(*conditions)

    async def records_for_file(
        self, file_path: str, scope: Scope, agent_id: str | None, source: Source
    ) -> list[MemoryRecord]:
        """Every memory recorded from `file_path`, expired ones included."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(MEMORIES)
                .where(M.file_path == file_path, self._file_owner(scope, agent_id, source))
                .order_by(M.id)
            )
            return readable_records(rows)

    async def file_paths(
        self, prefix: str, scope: Scope, agent_id: str | None, source: Source
    ) -> set[str]:
        """The distinct file paths starting with `prefix` that have memories."""
        async with self._engines.reader.connect() as conn:
            paths = await conn.scalars(
                select(M.file_path)
                .where(
                    M.file_path.startswith(prefix, autoescape=True),
                    self._file_owner(scope, agent_id, source),
                )
                .distinct()
            )
            return {p for p in paths if p is not None}

    async def rename_keys(self, renames: Sequence[tuple[int, str]]) -> int:
        """Give memories new keys in place (store/note_keys.py): a note's older keys."""
        if not renames:
            return 0
        return await self._engines.run_write(note_keys.rename_keys, list(renames))

    async def set_expiry(self, memory_ids: Sequence[int], expires_at: float | None) -> None:
        """Move the expiry of these memories without a new version (their content is the
        same); the revision moves so every process's vector index sees the new expiry."""
        if not memory_ids:
            return
        async with self._engines.write() as conn:
            revision = await conn.run_sync(next_revision)
            await conn.execute(
                update(MemoryRow)
                .where(M.id.in_(list(memory_ids)))
                .values(expires_at=expires_at, revision=revision)
            )

    async def owners(self, identities: Collection[str]) -> dict[str, tuple[int, str]]:
        """(id, owner) of each of `identities` that is stored: an import checks before
        writing that it may update them."""
        wanted = list(dict.fromkeys(identities))
        found: dict[str, tuple[int, str]] = {}
        async with self._engines.reader.connect() as conn:
            for start in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[start : start + IN_CHUNK]
                rows = await conn.execute(
                    select(M.identity, M.id, M.agent_id).where(M.identity.in_(chunk))
                )
                found.update({row[0]: (row[1], row[2]) for row in rows})
        return found

    async def keyword_search(
        self,
        terms: Sequence[str],
        vis: Visibility,
        limit: int,
        column_weights: tuple[float, float, float, float],
    ) -> list[tuple[int, float]]:
        """(id, BM25 relevance, larger is better) for visible memories containing any of
        `terms` (from `keyword.query_terms`), best first (store/keyword.py's KeywordIndex)."""
        hits, _ = await self._engines.read(
            self._keywords.keyword_hits, terms, vis, limit, column_weights
        )
        return hits

    async def keyword_finds(self, query: KeywordQuery, vis: Visibility) -> KeywordFinds:
        """A search's keyword arm in one read (one snapshot, and on SQLite one trip to a
        worker thread), while the model embeds the query: the BM25 hits, the exact
        candidates, and what ranking needs of them."""
        return await self._engines.read(reads.keyword_finds, self._keywords, query, vis)

    async def context_lenders(
        self, memory_ids: Sequence[int], terms: Sequence[str], vis: Visibility
    ) -> dict[int, list[tuple[int, str]]]:
        """The memories `vis` shows that lent each of `memory_ids` words of `terms` through
        its context (record_reads.context_lenders): search's `explain`."""
        if not memory_ids or not terms:
            return {}
        return await self._engines.read(
            reads.context_lenders, self._keywords, list(memory_ids), list(terms), vis
        )

    async def iter_records(
        self, vis: Visibility | None = None, batch: int = 500
    ) -> AsyncIterator[MemoryRecord]:
        """Every memory by id, or only those `vis` lets its caller see."""
        last = 0
        condition = visible_to(vis) if vis is not None else None
        while True:
            stmt = select(MEMORIES).where(M.id > last)
            if condition is not None:
                stmt = stmt.where(condition)
            async with self._engines.reader.connect() as conn:
                rows = (await conn.execute(stmt.order_by(M.id).limit(batch))).all()
            if not rows:
                return
            for record in readable_records(rows):
                yield record
            last = rows[-1].id

    async def history(
        self, memory_id: int, below: int | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """The replaced versions of a memory (older than version `below`, the newest `limit`
        of them, when given), oldest first, as stored: `updated_by` wrote the version,
        `replaced_at` is when the next one replaced it; `tags` and `metadata` are JSON text."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(reads.history_page(memory_id, below, limit))
            newest_first = [
                {
                    "version": r.version,
                    "value": r.value,
                    "tags": r.tags,
                    "metadata": r.metadata,
                    "source": r.source,
                    "replaced_at": r.replaced_at,
                    "updated_by": r.updated_by,
                    "value_json": bool(r.value_json),
                }
                for r in rows
            ]
            return newest_first[::-1]

    # -- browsing and bulk deletes (store/browsing.py) ---------------------------------------

    async def list_page(
        self, selection: Selection, after: Position | None, limit: int
    ) -> tuple[list[MemoryRecord], Position | None]:
        """Up to `limit` memories after `after`, newest first, and where the page ended if
        more follow (None: this was the last page)."""
        async with self._engines.reader.connect() as conn:
            walk = self._engines.dialect.walks_order_index
            stmt = browse.page_statement(selection, after, limit + 1, walk)
            rows = (await conn.execute(stmt)).all()
        if len(rows) <= limit:
            return readable_records(rows), None
        last = rows[limit - 1]
        at = last.updated_at if selection.order == "updated" else last.created_at
        return readable_records(rows[:limit]), Position(float(at), int(last.id))

    async def keyed(self, key: str, vis: Visibility, limit: int) -> list[MemoryRecord]:
        """The memories `vis` lets through whose key is `key` (memory-get by key), oldest
        first; `lower(key)` is indexed (search looks keys up ignoring case)."""
        async with self._engines.reader.connect() as conn:
            rows = await conn.execute(
                select(MEMORIES)
                .where(func.lower(M.key) == func.lower(key), M.key == key, visible_to(vis))
                .order_by(M.id)
                .limit(limit)
            )
            return readable_records(rows)

    async def get_by_identity(self, identity: str) -> MemoryRecord | None:
        """The memory with this upsert identity (NewMemory.identity), if stored."""
        async with self._engines.reader.connect() as conn:
            row = (await conn.execute(select(MEMORIES).where(M.identity == identity))).first()
            return record_from_row(row) if row else None

    async def bulk_delete(
        self,
        vis: Visibility,
        *,
        updated_before: float | None,
        agent_id: str,
        swarm_too: bool,
        limit: int,
        dry_run: bool,
        spared_swarm_prefix: str | None = None,
    ) -> BulkDeletion:
        """Delete the oldest `limit` memories `vis` shows (last updated at or before
        `updated_before`) that `agent_id` may delete (see browse.changeable_by), in one
        write transaction: the ones chosen are exactly the ones deleted. `dry_run` chooses
        the same way, reads only, and deletes nothing."""
        matching = browse.bulk_condition(vis, updated_before)
        changeable = and_(matching, browse.changeable_by(agent_id, swarm_too, spared_swarm_prefix))
        if dry_run:
            async with self._engines.reader.connect() as conn:
                return await self._choose(conn, matching, changeable, limit)
        async with self._engines.write() as conn:
            chosen = await self._choose(conn, matching, changeable, limit)
            if chosen.ids:
                revision = await conn.run_sync(next_revision)
                await conn.run_sync(writes.delete_ids, chosen.ids, revision)
            return chosen

    @staticmethod
    async def _choose(
        conn: AsyncConnection,
        matching: ColumnElement[bool],
        changeable: ColumnElement[bool],
        limit: int,
    ) -> BulkDeletion:
        rows = (await conn.execute(browse.oldest_first(changeable, limit))).all()
        matched = await browse.count(conn, changeable)
        refused = await browse.count(conn, matching) - matched
        return BulkDeletion([row.id for row in rows], readable_records(rows), matched, refused)

    async def count(self, agent_id: str | None = None) -> int:
        stmt = select(func.count()).select_from(MemoryRow)
        if agent_id is not None:
            stmt = stmt.where(M.agent_id == agent_id)
        async with self._engines.reader.connect() as conn:
            return int(await conn.scalar(stmt) or 0)

    async def cap_usage(self, agent_id: str, identities: Collection[str]) -> tuple[int, int]:
        """How many of `agent_id`'s memories count toward its cap, and how many of
        `identities` (memories it would write) are not stored yet."""
        wanted = list(dict.fromkeys(identities))
        async with self._engines.reader.connect() as conn:
            counted = int(
                await conn.scalar(
                    select(func.count()).where(*eviction.counted_toward_cap(agent_id))
                )
                or 0
            )
            stored = 0
            for start in range(0, len(wanted), 500):  # under SQLite's bound-variable limit
                chunk = wanted[start : start + 500]
                stored += int(
                    await conn.scalar(select(func.count()).where(M.identity.in_(chunk))) or 0
                )
        return counted, len(wanted) - stored
