"""PostgreSQL as the store's Dialect (store/dialect.py): the tsvector keyword arm, pgvector
searching the vectors in the database, its own schema objects, and what a copy into it
needs (its id sequences moved past the copied ids, the pgvector column filled)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.store.dialect import Dialect
from memory_mcp.store.postgres import tsvector
from memory_mcp.store.postgres.ddl import create_postgres_objects
from memory_mcp.store.postgres.pgvector_search import (
    PgStoredVectors,
    PgvectorSearch,
    fill_pgvector_column,
)

# The schema's INTEGER is 32-bit here (asyncpg refuses a bigger parameter).
LARGEST_ID = 2**31 - 1
# Integer ids that a sequence hands out (SQLite's AUTOINCREMENT follows the largest id
# inserted by itself).
SEQUENCED = ("memories", "memory_history", "memory_links", "agent_tokens", "oauth_grants")


async def create_objects(conn: AsyncConnection) -> None:
    """The tsvector column and its index, and the pgvector column filled (vectors copied
    from SQLite or saved by an older version) with an HNSW index per dimension."""
    await create_postgres_objects(conn)
    await fill_pgvector_column(conn)


async def after_copy(writing: AsyncConnection) -> None:
    await _advance_sequences(writing)
    await fill_pgvector_column(writing)


async def _advance_sequences(writing: AsyncConnection) -> None:
    """Ids were inserted as they were: the next id each sequence hands out must be past
    them (and past every tombstoned id: a memory id is never reused)."""
    for name in SEQUENCED:
        floor = "SELECT max(memory_id) FROM memory_tombstones" if name == "memories" else "0"
        await writing.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                f"greatest(({floor}), (SELECT max(id) FROM {name}), 1))"
            )
        )


POSTGRES = Dialect(
    name="postgresql",
    keywords=tsvector,
    stored_vectors=PgStoredVectors,
    create_objects=create_objects,
    largest_id=LARGEST_ID,
    vector_search=PgvectorSearch,
    after_copy=after_copy,
)
