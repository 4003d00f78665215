"""Engines for one database URL: a reader, and a writer whose transactions take the write
lock up front, so concurrent processes queue instead of failing with "database is locked"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

BUSY_TIMEOUT_MS = 30_000


@dataclass
class Engines:
    reader: AsyncEngine
    writer: AsyncEngine

    @property
    def is_sqlite(self) -> bool:
        return self.reader.dialect.name == "sqlite"

    async def dispose(self) -> None:
        await self.reader.dispose()
        if self.writer is not self.reader:
            await self.writer.dispose()


def _sqlite_engine(url: str, begin_statement: str) -> AsyncEngine:
    engine = create_async_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the driver so that BEGIN is ours to choose.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin_statement)

    return engine


def create_engines(url: str) -> Engines:
    if url.startswith("sqlite"):
        # A deferred transaction that reads and then writes cannot wait for the lock
        # (SQLite returns SQLITE_BUSY at once); BEGIN IMMEDIATE waits at the start instead.
        return Engines(
            reader=_sqlite_engine(url, "BEGIN"),
            writer=_sqlite_engine(url, "BEGIN IMMEDIATE"),
        )
    engine = create_async_engine(url, pool_pre_ping=True)
    return Engines(reader=engine, writer=engine)
