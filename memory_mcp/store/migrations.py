"""Bring a database made by an older memory-mcp up to the current tables, in place.

`create_all` makes missing tables but never changes existing ones, so columns added since
are added here with ALTER TABLE ADD COLUMN and backfilled, and indexes added since are
created. Every step checks first, so it is a no-op on an up-to-date store, and runs inside
init_schema's write transaction: two processes opening an old file at once take turns.

The last step stamps the store with a digest of the code that decides its schema
(`code_stamp`): a store stamped by this very code is up to date, and opening it reads one
row instead of checking every table (init_schema; 12 ms of CPU of every command, hook and
server start). Any change to that code changes the digest, and the next open runs every
check again, once."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, insert, inspect, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.models import Scope, Source
from memory_mcp.store import write_context
from memory_mcp.store.memories_table import MEMORIES, M, next_revision
from memory_mcp.store.schema import (
    Base,
    StoreMetaRow,
)
from memory_mcp.store.sqlite.ddl import (
    SQLITE_FTS_DDL,
    SQLITE_IDENT_DDL,
    SQLITE_KEYWORD_TOTALS_DDL,
)

# (table, column, SQL type) in the order they were added.
ADDED_COLUMNS = (
    ("memories", "updated_by", "VARCHAR(128)"),
    ("memories", "about_agent", "VARCHAR(128)"),
    ("memory_history", "updated_by", "VARCHAR(128)"),
    ("memories", "written_session", "VARCHAR(128)"),
    ("memories", "written_order", "INTEGER"),
    ("memories", "context", "TEXT"),
    ("embeddings", "whole_only", "BOOLEAN"),
    # Projects (rules/projects.py): every memory made before them holds everywhere ('*'),
    # and keeps its identity (models.NewMemory.identity is unchanged for '*').
    ("memories", "project", "VARCHAR(100) NOT NULL DEFAULT '*'"),
    ("memories", "task", "VARCHAR(256)"),
    ("memories", "archived_at", "FLOAT"),
    ("memory_links", "target_project", "VARCHAR(100) NOT NULL DEFAULT '*'"),
    ("agent_tokens", "projects", "TEXT"),  # NULL: every project, as every token was
    ("oauth_login_codes", "projects", "TEXT"),  # and every sign-in and grant
    ("oauth_codes", "projects", "TEXT"),
    ("oauth_grants", "projects", "TEXT"),
    # Validity windows (rules/validity.py): every memory made before them holds from when
    # it was made, and none has been corrected.
    ("memories", "valid_from", "FLOAT"),
    ("memories", "valid_to", "FLOAT"),
    ("memories", "superseded_by", "INTEGER"),
    # A JSON object or array as the value (checks/json_values.py); every older one is text.
    ("memories", "value_json", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("memory_history", "value_json", "BOOLEAN NOT NULL DEFAULT FALSE"),
    ("memories", "kind", "VARCHAR(40)"),  # NULL: not said, as every memory before kinds
    ("memories", "quarantined", "BOOLEAN NOT NULL DEFAULT FALSE"),
)
# store_meta's row naming the rule the stored write-time contexts were made by.
CONTEXT_RECIPE = "context_recipe"
# store_meta's row holding `code_stamp()` of the code that last brought the store up to date.
SCHEMA_STAMP = "schema_stamp"
# The modules whose text decides what init_schema makes (tables, indexes, keyword index
# and triggers, PostgreSQL's objects, these migrations), relative to the package.
SCHEMA_CODE = (
    "store/schema.py",
    "store/migrations.py",
    "store/repository.py",
    "store/sqlite/ddl.py",
    "store/postgres/ddl.py",
    "store/postgres/pgvector_search.py",
)
# Indexes added since, as idempotent DDL (SQLite and PostgreSQL alike).
ADDED_INDEXES = (
    "CREATE INDEX IF NOT EXISTS ix_memories_key_lower ON memories (lower(key))",
    "CREATE INDEX IF NOT EXISTS ix_memories_updated ON memories (updated_at, id)",
    "CREATE INDEX IF NOT EXISTS ix_memories_created ON memories (created_at, id)",
    "CREATE INDEX IF NOT EXISTS ix_memory_history_versions ON memory_history (memory_id, version)",
    "CREATE INDEX IF NOT EXISTS ix_memories_written "
    "ON memories (updated_by, written_session, written_order, id)",
    "CREATE INDEX IF NOT EXISTS ix_memories_project ON memories (project, updated_at, id)",
)


@functools.cache
def code_stamp() -> int | None:
    """A digest of SCHEMA_CODE's files and the write-time context's rule, as a positive
    32-bit number (store_meta's column is PostgreSQL's INTEGER); None, and every open
    checks everything, when a file cannot be read."""
    digest = hashlib.sha256(f"{write_context.RECIPE}".encode())
    package = Path(__file__).resolve().parent.parent
    for name in SCHEMA_CODE:
        try:
            digest.update((package / name).read_bytes())
        except OSError:
            return None
    return int.from_bytes(digest.digest()[:4], "big") & 0x7FFFFFFF


# What `schema_state` finds.
CURRENT = "current"  # stamped by this code: nothing to do
EMPTY = "empty"  # no table at all: a new SQLite file
OTHER = "other"  # anything else: check everything


def schema_state(sync_conn: Connection) -> str:
    """CURRENT, EMPTY or OTHER (a read; init_schema decides under the write lock)."""
    stamp = code_stamp()
    tables = set(inspect(sync_conn).get_table_names())  # the current schema's, any database
    if not tables:
        return EMPTY
    if stamp is None or "store_meta" not in tables:
        return OTHER
    stored = sync_conn.scalar(select(StoreMetaRow.value).where(StoreMetaRow.name == SCHEMA_STAMP))
    return CURRENT if stored == stamp else OTHER


def create_new_sqlite(sync_conn: Connection) -> bool:
    """Everything init_schema's checks make in an empty SQLite file, in one transaction on
    the writer's thread (15 ms of CPU instead of 37: one trip, not ~40 awaited statements;
    tests/store/test_schema_stamp.py compares the two). False, and nothing done, when the
    file is not empty any more (another process made it first): the caller checks it."""
    if sync_conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar():
        return False
    Base.metadata.create_all(sync_conn, checkfirst=False)
    for ddl in (*ADDED_INDEXES, *SQLITE_FTS_DDL, *SQLITE_IDENT_DDL, *SQLITE_KEYWORD_TOTALS_DDL):
        sync_conn.exec_driver_sql(ddl)
    rows = [
        {"name": "revision", "value": 0},
        {"name": CONTEXT_RECIPE, "value": write_context.RECIPE},
    ]
    stamp = code_stamp()
    if stamp is not None:
        rows.append({"name": SCHEMA_STAMP, "value": stamp})
    sync_conn.execute(insert(StoreMetaRow), rows)
    return True


async def stamp(conn: AsyncConnection) -> None:
    """The last step of init_schema, in its transaction: this code made the store current."""
    await _put_meta(conn, SCHEMA_STAMP, code_stamp())


async def _put_meta(conn: AsyncConnection, name: str, value: int | None) -> None:
    """store_meta's row `name` holds `value` (no row for None), whether it was there or not."""
    await conn.execute(delete(StoreMetaRow).where(StoreMetaRow.name == name))
    if value is not None:
        await conn.execute(insert(StoreMetaRow).values(name=name, value=value))


def _columns(sync_conn: Connection) -> dict[str, set[str]]:
    """The columns of each table ADDED_COLUMNS names, from an empty result: the inspector
    would warn about a type it does not know (pgvector's, on `embeddings`)."""
    return {
        table: set(sync_conn.exec_driver_sql(f"SELECT * FROM {table} LIMIT 0").keys())
        for table in {table for table, _, _ in ADDED_COLUMNS}
    }


async def migrate(conn: AsyncConnection) -> list[str]:
    """Add and backfill what an older store lacks; returns the columns it added."""
    existing = await conn.run_sync(_columns)
    added = []
    for table, column, sql_type in ADDED_COLUMNS:
        if column not in existing[table]:
            await conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
            added.append(f"{table}.{column}")
    for ddl in ADDED_INDEXES:
        await conn.exec_driver_sql(ddl)
    if "memories.updated_by" in added:
        # Before this column only the owner could have written a memory's value (or so
        # the store recorded): the owner is the best answer there is.
        await conn.exec_driver_sql(
            "UPDATE memories SET updated_by = agent_id WHERE updated_by IS NULL"
        )
    if "memory_history.updated_by" in added:
        await conn.exec_driver_sql(
            "UPDATE memory_history SET updated_by = (SELECT agent_id FROM memories "
            "WHERE memories.id = memory_history.memory_id) WHERE updated_by IS NULL"
        )
    if "memories.about_agent" in added:
        await _learnings_belong_to_their_lead(conn)
    if "memories.valid_from" in added:
        await conn.exec_driver_sql(
            "UPDATE memories SET valid_from = created_at WHERE valid_from IS NULL"
        )
    if "memories.written_session" in added:
        await _older_session_memories_gain_context(conn)
    await _contexts_by_the_current_rule(conn)
    return added


async def _contexts_by_the_current_rule(conn: AsyncConnection) -> None:
    """Contexts made by another rule (write_context.RECIPE: which neighbours lend) are
    recomputed once, so that every memory is found the way a new one would be."""
    recipe = await conn.scalar(
        select(StoreMetaRow.value).where(StoreMetaRow.name == CONTEXT_RECIPE)
    )
    if recipe == write_context.RECIPE:
        return
    await conn.run_sync(write_context.refresh_all)
    await _put_meta(conn, CONTEXT_RECIPE, write_context.RECIPE)


async def _older_session_memories_gain_context(conn: AsyncConnection) -> None:
    """Memories of session scope were written in their session: they take it as their
    writer's session, before anything written from now on (written_order 0, then by id:
    the order they were first written), and get their context. Older agent and swarm
    memories never recorded the session they were written in: they carry no context and
    lend none (rewriting one places it in the writer's session then)."""
    placed = (
        update(MEMORIES)
        .where(
            M.scope == Scope.SESSION.value,
            M.source != Source.FILE_INDEX.value,
            M.session_id != "",
            M.written_session.is_(None),
        )
        .values(written_session=M.session_id, written_order=0)
        .returning(M.id)
    )
    ids = list(await conn.scalars(placed))
    await conn.run_sync(write_context.refresh, ids)


async def _learnings_belong_to_their_lead(conn: AsyncConnection) -> None:
    """Older stores made the agent a learning was about its owner (so it could delete
    it). Hand each such learning to the lead recorded in its `injected_by` and keep the
    agent it is about in `about_agent`."""
    rows = (
        await conn.execute(
            select(M.id, M.agent_id, M.metadata).where(
                M.scope == "swarm", M.key.startswith("learning:"), M.about_agent.is_(None)
            )
        )
    ).all()
    moves: list[dict[str, Any]] = []
    for row in rows:
        try:
            metadata = json.loads(row.metadata)
        except ValueError:
            continue
        lead = metadata.get("injected_by") if isinstance(metadata, dict) else None
        about = metadata.get("target_agent") if isinstance(metadata, dict) else None
        if isinstance(lead, str) and lead and isinstance(about, str) and about:
            moves.append({"id": row.id, "lead": lead, "about": about})
    if not moves:
        return
    revision = await conn.run_sync(next_revision)  # other processes' indexes see the owner
    for move in moves:
        await conn.execute(
            update(MEMORIES)
            .where(M.id == move["id"])
            .values(
                agent_id=move["lead"],
                updated_by=move["lead"],
                about_agent=move["about"],
                revision=revision,
            )
        )


__all__ = ["ADDED_COLUMNS", "ADDED_INDEXES", "migrate"]
