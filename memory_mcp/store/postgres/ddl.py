"""PostgreSQL-only DDL, run after `create_all` in init_schema's write transaction (which
holds the store's advisory lock, so two processes starting at once take turns). Every
statement is idempotent."""

from __future__ import annotations

import re

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# The visibility rule's columns (store/visibility.py), kept beside the project in its index.
PROJECT_VISIBLE_INCLUDES = (
    "scope",
    "agent_id",
    "session_id",
    "expires_at",
    "task",
    "archived_at",
    "quarantined",
    "content_hash",
    "id",
    "valid_from",
    "valid_to",
    "created_at",
)

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
    # A small visible set (a project in a store of many) is ranked exactly: its memories
    # read from the covering index below, each one's vector looked up by content hash
    # (pgvector_search.py). 100k memories in 20 projects, a project's 5,000 (load ~8):
    # 100 ms with the vectors out of line (pgvector's default storage: a row holds the
    # raw bytes and the pgvector copy, over the 2 kB that PostgreSQL keeps in a row),
    # the primary key's btree and the memories' heap pages; 40 ms with the copy in the
    # row (the raw bytes go out of line: read for a search's few keyword candidates
    # only), a hash index and an index-only scan. Rows written before keep their place.
    "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE MAIN",
    "CREATE INDEX IF NOT EXISTS ix_embeddings_content_hash ON embeddings USING hash (content_hash)",
    # The visibility rule's columns (store/visibility.py) for a read within projects: the
    # vector arm's exact ranking and both arms' counts of what the search may see read
    # the index only, not a heap page for each of the project's memories. Every column the
    # rule reads, `quarantined` too: without it the keyword arm's count (LIMIT 2,501) was
    # planned as a scan of the table, 17.5k buffers and 29 ms at 100k memories (load 18),
    # and the vector arm's (LIMIT 20,001) ~10x that once a minute (docs/lab). One made
    # without a column is made again (_index_lacks_a_column).
    "CREATE INDEX IF NOT EXISTS ix_memories_project_visible ON memories (project) "
    f"INCLUDE ({', '.join(PROJECT_VISIBLE_INCLUDES)})",
)


def hnsw_index_ddl(dimension: int) -> str:
    return (
        f"CREATE INDEX IF NOT EXISTS ix_embeddings_hnsw_{dimension} ON embeddings "
        f"USING hnsw ((embedding::vector({dimension})) vector_cosine_ops) "
        f"WHERE dimension = {dimension}"
    )


async def create_postgres_objects(conn: AsyncConnection) -> None:
    await _drop_search_text_without_context(conn)
    await _index_lacks_a_column(conn)
    for ddl in PG_DDL:
        await conn.exec_driver_sql(ddl)


async def _index_lacks_a_column(conn: AsyncConnection) -> None:
    """The covering index made before one of its columns (the validity window's,
    rules/validity.py; `quarantined`) is dropped, and made again by PG_DDL with them: a
    read would otherwise visit the heap, or scan the table."""
    definition = await conn.scalar(
        text(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_memories_project_visible' "
            "AND schemaname = current_schema()"
        )
    )
    included = set(re.findall(r"\w+", definition.partition("INCLUDE")[2])) if definition else set()
    if definition is not None and not set(PROJECT_VISIBLE_INCLUDES) <= included:
        await conn.exec_driver_sql("DROP INDEX ix_memories_project_visible")


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
