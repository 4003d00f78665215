"""Copy a whole store to another database (SQLite <-> PostgreSQL): every table of the
schema row for row, ids, versions, history, vectors and token hashes included, in ONE
write transaction on the target that ends with a count of every table against the source.
A failure or a count that differs leaves the target as it was.

The target must be empty unless `replace` is given, which empties it first (in the same
transaction): running the same copy again gives the same target. Derived data is made by
the target itself: SQLite's FTS5 rows by its triggers, PostgreSQL's tsvector by its
generated column and the pgvector copy of each vector (and its HNSW index) from the
stored bytes (its Dialect's `after_copy`, store/postgres/dialect.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Table, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.errors import InvalidInputError
from memory_mcp.store.engine import Engines, create_engines
from memory_mcp.store.repository import MemoryStore
from memory_mcp.store.schema import Base, StoreMetaRow

BATCH = 1000  # rows per INSERT: a few MB of vectors at most


@dataclass
class CopyReport:
    counts: dict[str, int] = field(default_factory=dict)  # table -> rows copied
    replaced: dict[str, int] = field(default_factory=dict)  # table -> rows the target had


def tables() -> list[Table]:
    """Every table of the schema, parents before children."""
    return list(Base.metadata.sorted_tables)


async def _counts(conn: AsyncConnection) -> dict[str, int]:
    return {
        t.name: int(await conn.scalar(select(func.count()).select_from(t)) or 0) for t in tables()
    }


async def _open(url: str) -> tuple[MemoryStore, Engines]:
    engines = create_engines(url)
    store = MemoryStore(engines)
    try:
        await store.init_schema()  # an older store is brought up to date first
    except BaseException:
        await store.close()
        raise
    return store, engines


async def copy_store(source_url: str, target_url: str, replace: bool = False) -> CopyReport:
    if source_url == target_url:
        raise InvalidInputError("--to", "it is the source store itself")
    source, source_engines = await _open(source_url)
    try:
        target, target_engines = await _open(target_url)
        try:
            return await _copy(source_engines, target_engines, replace)
        finally:
            await target.close()
    finally:
        await source.close()


async def empty_store(url: str) -> None:
    """Delete every memory, vector, token and tombstone of the store at `url` (made first
    if missing; the revision counter stays and keeps counting): for a benchmark that
    reuses one database."""
    store, engines = await _open(url)
    try:
        async with engines.write() as writing:
            for table in reversed(tables()):
                if table.name != StoreMetaRow.__tablename__:
                    await writing.execute(delete(table))
    finally:
        await store.close()


async def _copy(source: Engines, target: Engines, replace: bool) -> CopyReport:
    report = CopyReport()
    # One read transaction: a snapshot of the source, even while its server writes.
    async with source.reader.begin() as reading, target.write() as writing:
        report.counts = await _counts(reading)
        before = await _counts(writing)
        # The revision counter is there from the start; it is copied like the rest.
        held = {t: n for t, n in before.items() if n and t != StoreMetaRow.__tablename__}
        if held:
            if not replace:
                held_text = ", ".join(f"{n} {t}" for t, n in held.items())
                raise InvalidInputError(
                    "--to",
                    f"the target store is not empty ({held_text}); nothing was copied. "
                    "--replace empties it first (everything in it is lost)",
                )
            report.replaced = held
        for table in reversed(tables()):
            await writing.execute(delete(table))
        for table in tables():
            await _copy_table(reading, writing, table)
        await target.dialect.after_copy(writing)  # what the rows need of the database
        after = await _counts(writing)
        if after != report.counts:
            raise RuntimeError(f"copied counts differ: source {report.counts}, target {after}")
    return report


async def _copy_table(reading: AsyncConnection, writing: AsyncConnection, table: Table) -> None:
    order = list(table.primary_key.columns)
    result = await reading.stream(select(table).order_by(*order))
    async for rows in result.partitions(BATCH):
        await writing.execute(insert(table), [dict(row._mapping) for row in rows])


__all__ = ["CopyReport", "copy_store", "empty_store", "tables"]
