"""Engines for one database URL: a reader, and a writer whose transactions take the write
lock up front, one at a time and in arrival order, so concurrent processes queue instead of
failing with "database is locked".

Why writes queue here rather than in SQLite's busy handler: SQLite admits one writer per
file and makes the others poll with growing sleeps (up to 100 ms apart). With dozens of
writers in several processes the lock is almost always taken when a poller looks, so some
writers starve past any timeout while others write again and again (measured: p99 31 s and
"database is locked" with 8 processes x 4 writers). So each process lets one write
transaction at a time ask for the lock (an anyio lock: first come, first served), and the
processes hand it over through an OS file lock (`<db>-writelock`, flock), whose waiters the
kernel wakes the moment it is released. SQLite's own lock and busy timeout stay underneath
as the last line (a process that does not take the file lock, e.g. the sqlite3 shell).

On PostgreSQL the hand-over between processes is a transaction-level advisory lock taken
first in every write transaction (`pg_advisory_xact_lock`, released by commit or rollback,
also when the process dies): writes keep the same one-at-a-time semantics as on SQLite
(cap eviction, versions and the revision counter need no other locking), and readers never
wait.

Reads on a search's path (`Engines.read`) take a shorter road on a SQLite file: a plain
synchronous engine (pysqlite) in a worker thread, every statement of one read in one hop.
Through aiosqlite each statement and each fetch is its own round trip between the event
loop and the driver's thread, with a greenlet switch on both ends: reading 60 memories took
4-7 ms that way and 0.6 ms this way (docs/RETRIEVAL.md, search latency). The statements are
the same SQLAlchemy ones; on PostgreSQL `read` runs them through `AsyncConnection.run_sync`.
Writes on a store's path (`Engines.run_write`: a memory's upsert, a vector's save) take the
same road, one hop for the whole transaction, with the same turn and file lock as `write`:
a store's upsert is ~10 statements, and through aiosqlite they cost more CPU than the
model's whole-text embedding (measured by `bench store`)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from memory_mcp.errors import store_error
from memory_mcp.store.sqlite.file import (
    BUSY_TIMEOUT_MS,
    FileWriteLock,
    Synchronous,
    connection_pragmas,
    write_lock_path,
)

if TYPE_CHECKING:
    from memory_mcp.store.dialect import Dialect

# Any constant shared by every memory-mcp process on one PostgreSQL database.
PG_WRITE_LOCK = text("SELECT pg_advisory_xact_lock(7303385861524116736)")
PG_LAZY_COMMIT = text("SET LOCAL synchronous_commit = off")  # Engines.write(durable=False)

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Engines:
    reader: AsyncEngine
    writer: AsyncEngine
    dialect: Dialect  # what differs between the databases (store/dialect.py)
    file_lock: FileWriteLock | None = None  # SQLite files only
    # SQLite: the writer's file without an fsync at commit (see `write`); None: `writer`.
    lazy_writer: AsyncEngine | None = None
    advisory_lock: bool = False  # PostgreSQL
    sync_reader: Engine | None = None  # SQLite files only: see `read`
    # SQLite files only: `run_write`'s engines, with and without the fsync (see `write`).
    sync_writer: Engine | None = None
    sync_lazy_writer: Engine | None = None
    _write_turn: anyio.Lock = field(default_factory=anyio.Lock)
    _watcher: sqlite3.Connection | None = None  # see `commit_count`

    async def read(
        self, statements: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """`statements(conn, *args)` in one read transaction (one snapshot), returning its
        result: on a SQLite file in a worker thread through the synchronous engine, else on
        the async reader through `run_sync`."""
        if self.sync_reader is None:
            async with self.reader.begin() as conn:
                return await conn.run_sync(statements, *args, **kwargs)
        engine = self.sync_reader

        def in_thread() -> T:
            with engine.begin() as conn:
                return statements(conn, *args, **kwargs)

        return await anyio.to_thread.run_sync(in_thread)

    def commit_count(self) -> int | None:
        """A number that moves whenever any connection, of any process, has committed to
        the SQLite file since it was last read (PRAGMA data_version of a connection that
        never writes), read in microseconds on the calling thread: a search asks it to
        know whether its vector index is behind without a read. None off SQLite files."""
        if self.sync_reader is None:
            return None
        if self._watcher is None:
            path = self.sync_reader.url.database
            assert path is not None  # a file: sync_reader exists for files only
            self._watcher = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            row = self._watcher.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None  # unknown: the caller reads instead
        return int(row[0])

    @asynccontextmanager
    async def write(self, *, durable: bool = True) -> AsyncIterator[AsyncConnection]:
        """A write transaction, committed on exit. One at a time per process, first come
        first served, and handed between processes through the file lock.

        `durable=False`: the commit does not wait for the disk (SQLite's synchronous=NORMAL
        on a WAL file, PostgreSQL's synchronous_commit off). It is still atomic, seen by
        every reader at once and kept if the process is killed; only a power cut or an OS
        crash can lose it, never half of it, and the next durable commit makes it durable
        too (the log is written in order). For data the store can make again (a vector:
        the background worker embeds any text without one); never for a memory."""
        writer = self.writer if durable or self.lazy_writer is None else self.lazy_writer
        async with self._write_turn:
            if self.file_lock is None:
                async with writer.begin() as conn:
                    if self.advisory_lock:
                        await conn.execute(PG_WRITE_LOCK)
                        if not durable:
                            await conn.execute(PG_LAZY_COMMIT)
                    yield conn
                return
            with anyio.CancelScope(shield=True):
                await self.file_lock.acquire()
            try:
                async with writer.begin() as conn:
                    yield conn
            finally:
                self.file_lock.release()

    async def run_write(
        self,
        statements: Callable[Concatenate[Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """`statements(conn, *args)` in one write transaction (`write`'s turn, lock and
        commit, fsync included), returning its result: on a SQLite file in one worker-thread
        trip through the synchronous writer, else through `run_sync` inside `write`."""
        return await self._run_write(statements, True, *args, **kwargs)

    async def run_lazy_write(
        self,
        statements: Callable[Concatenate[Connection, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """`run_write` whose commit does not wait for the disk (`write(durable=False)`)."""
        return await self._run_write(statements, False, *args, **kwargs)

    async def _run_write(
        self,
        statements: Callable[Concatenate[Connection, P], T],
        durable: bool,
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        lazy = None if durable else self.sync_lazy_writer
        engine = lazy or self.sync_writer
        if engine is None or self.file_lock is None:
            async with self.write(durable=durable) as conn:
                return await conn.run_sync(statements, *args, **kwargs)
        file_lock = self.file_lock

        def in_thread() -> T:
            with engine.begin() as conn:
                return statements(conn, *args, **kwargs)

        async with self._write_turn:
            with anyio.CancelScope(shield=True):
                await file_lock.acquire()
            try:
                # Not abandoned on cancel: the transaction commits or rolls back whole
                # before the lock is given back.
                return await anyio.to_thread.run_sync(in_thread)
            finally:
                file_lock.release()

    async def dispose(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        for engine in (self.sync_reader, self.sync_writer, self.sync_lazy_writer):
            if engine is not None:
                engine.dispose()
        await self.reader.dispose()
        if self.writer is not self.reader:
            await self.writer.dispose()
        if self.lazy_writer is not None:
            await self.lazy_writer.dispose()
        if self.file_lock is not None:
            self.file_lock.close()


def _translate_errors(engine: Engine) -> None:
    """Turn the database's operational failures into the project's errors at the source,
    so every caller (MCP tool, CLI, worker) can say what happened and whether to retry.
    The driver's own text (SQL, paths) goes to the log, never into the error message."""

    @event.listens_for(engine, "handle_error")
    def _on_error(context: Any) -> None:
        error = context.sqlalchemy_exception
        if not isinstance(error, OperationalError):
            return  # integrity errors and bugs keep their own types
        raise store_error(context.original_exception) from error


def _sqlite_engine(url: str, begin_statement: str, synchronous: Synchronous) -> AsyncEngine:
    engine = create_async_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    _configure_sqlite(engine.sync_engine, begin_statement, synchronous)
    return engine


def _sync_sqlite_engine(url: str, begin_statement: str, synchronous: Synchronous) -> Engine:
    """The same file through pysqlite, for `Engines.read` and `Engines.run_write` (no
    aiosqlite hop per statement). Its pool hands a connection to whichever worker thread
    uses it next."""
    sync_url = make_url(url).set(drivername="sqlite")
    engine = create_engine(
        sync_url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
    )
    _configure_sqlite(engine, begin_statement, synchronous)
    return engine


def _configure_sqlite(engine: Engine, begin_statement: str, synchronous: Synchronous) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the driver so that BEGIN is ours to choose.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in connection_pragmas(synchronous, BUSY_TIMEOUT_MS):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin_statement)

    _translate_errors(engine)


def _write_lock_path(url: str) -> Path | None:
    database = make_url(url).database
    return write_lock_path(database) if database else None


def create_engines(url: str, synchronous: Synchronous = "full") -> Engines:
    """The engines for `url`, and its Dialect: the one place the store asks which database
    it is on (a third database is a branch here and a folder like store/sqlite/)."""
    if url.startswith("sqlite"):
        from memory_mcp.store.sqlite.dialect import SQLITE

        # A deferred transaction that reads and then writes cannot wait for the lock
        # (SQLite returns SQLITE_BUSY at once); BEGIN IMMEDIATE waits at the start instead.
        lock_path = _write_lock_path(url)
        return Engines(
            reader=_sqlite_engine(url, "BEGIN", synchronous),
            writer=_sqlite_engine(url, "BEGIN IMMEDIATE", synchronous),
            dialect=SQLITE,
            # SQLite cannot change synchronous inside a transaction, and SQLAlchemy begins
            # one on a connection's first statement: a second pool, set up without the fsync.
            # (A file only, like sync_reader: an in-memory database would be another one.)
            lazy_writer=_sqlite_engine(url, "BEGIN IMMEDIATE", "normal")
            if synchronous == "full" and lock_path
            else None,
            file_lock=FileWriteLock(lock_path) if lock_path else None,
            # A file only: an in-memory database would be another, empty one.
            sync_reader=_sync_sqlite_engine(url, "BEGIN", synchronous) if lock_path else None,
            sync_writer=_sync_sqlite_engine(url, "BEGIN IMMEDIATE", synchronous)
            if lock_path
            else None,
            sync_lazy_writer=_sync_sqlite_engine(url, "BEGIN IMMEDIATE", "normal")
            if synchronous == "full" and lock_path
            else None,
        )
    # Settings accept a SQLite path or a postgresql:// URL only (settings.database_url).
    # Imported here: a SQLite store never loads the PostgreSQL parts.
    from memory_mcp.store.postgres.dialect import POSTGRES

    engine = create_async_engine(url, pool_pre_ping=True)
    _translate_errors(engine.sync_engine)
    return Engines(reader=engine, writer=engine, dialect=POSTGRES, advisory_lock=True)
