"""PostgreSQL-only DDL, run after `create_all` in init_schema's write transaction (which
holds the store's advisory lock, so two processes starting at once take turns). Every
statement is idempotent."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# The text search configuration: English stemming, like SQLite's porter tokenizer.
TS_CONFIG = "english"

# Key, value, tags and the write-time context (store/write_context.py) weighted A, B, C,
# D (ts_rank's weights array is {D, C, B, A}); a generated column, so the index is in step
# with the row in the writing transaction.
PG_DDL = (
    "CREATE EXTENSION IF NOT EXISTS vector",
    f"""ALTER TABLE memories ADD COLUMN IF NOT EXISTS search_text tsvector
        GENERATED ALWAYS AS (
            setweight(to_tsvector('{TS_CONFIG}', key), 'A')
            || setweight(to_tsvector('{TS_CONFIG}', value), 'B')
            || setweight(to_tsvector('{TS_CONFIG}', tags), 'C')
            || setweight(to_tsvector('{TS_CONFIG}', coalesce(context, '')), 'D')
        ) STORED""",
    "CREATE INDEX IF NOT EXISTS ix_memories_search_text ON memories USING gin (search_text)",
    # ANALYZE keeps ten lexemes per unit of statistics target as search_text's most
    # common ones, which the keyword arm reads to leave out words too common to rank
    # (tsvector.py). With the default 100, the 1,000th lexeme of 1M real texts was in
    # ~9,900 memories, so every word rarer than that counted as rare and was ranked (a
    # keyword arm p50 of 60 ms); with 1,000 it is ~1,500, under the budget (27 ms).
    "ALTER TABLE memories ALTER COLUMN search_text SET STATISTICS 1000",
    # One pgvector column without a fixed dimension; each dimension in use gets its own
    # partial HNSW index (hnsw_index_ddl), created the first time a vector of it is saved.
    "ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS embedding vector",
)


def hnsw_index_ddl(dimension: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS ix_embeddings_hnsw_{dimension} ON embeddings "
        f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
        f"WHERE dimension = {dimension}"
    )


async def create_postgres_objects(conn: AsyncConnection) -> None:
    await _drop_search_text_without_context(conn)
    for ddl in PG_DDL:
        await conn.exec_driver_sql(ddl)


async def _drop_search_text_without_context(conn: AsyncConnection) -> None:
    """A generated column cannot be altered: one made before the context column is
    dropped (its GIN index with it) and made again by PG_DDL, which fills it from every
    row. Older memories have no context until they are rewritten."""
    expression = await conn.scalar(
        text(
            "SELECT generation_expression FROM information_schema.columns "
            "WHERE table_name = 'memories' AND column_name = 'search_text' "
            "AND table_schema = current_schema()"
        )
    )
    if expression is not None and "context" not in expression:
        await conn.exec_driver_sql("ALTER TABLE memories DROP COLUMN search_text")
