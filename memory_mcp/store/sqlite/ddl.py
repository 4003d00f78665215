"""SQLite's own schema objects beside the tables (store/schema.py), as
store/postgres/ddl.py holds PostgreSQL's: the FTS5 keyword indexes and the keyword counters,
kept in step by triggers, and `create_sqlite_objects`, which makes or brings them up to
date when a store opens (after the tables and migrations.py's columns)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from memory_mcp.store.sqlite.match import FTS_TOKENIZE

# Full-text index over key, value, tags and the write-time context, kept in step by
# triggers inside the writing transaction: a memory is findable by its words the moment
# the write commits. Its fifth column holds one token naming the memory's project
# (`project_token`): a search ANDs its words with its projects' tokens, so FTS5 walks
# past other projects' entries inside the index instead of handing each to SQL to check
# against `memories` (100k memories in 20 projects: a common word's count 28 -> 2.4 ms).
# The token is the project's name in hex (one token whatever `/`, `.` or `-` it holds;
# `*` is `x2a`). The index reads its content through a view that spells the token, so
# FTS5's rebuild, integrity-check and highlight() see what the triggers wrote.
_TOKEN = "'x' || lower(hex({row}.project))"
_FTS_ROW = "{row}.id, {row}.key, {row}.value, {row}.tags, {row}.context, " + _TOKEN
SQLITE_FTS_DDL = [
    "CREATE VIEW IF NOT EXISTS memories_fts_source AS SELECT id, key, value, tags, context, "
    f"{_TOKEN.format(row='memories')} AS project FROM memories",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
        key, value, tags, context, project, content='memories_fts_source', content_rowid='id',
        tokenize='{FTS_TOKENIZE}')""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, key, value, tags, context, project)
        VALUES ({_FTS_ROW.format(row="new")});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags, context, project)
        VALUES ('delete', {_FTS_ROW.format(row="old")});
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS memories_fts_update
    AFTER UPDATE OF key, value, tags, context, project ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, key, value, tags, context, project)
        VALUES ('delete', {_FTS_ROW.format(row="old")});
        INSERT INTO memories_fts(rowid, key, value, tags, context, project)
        VALUES ({_FTS_ROW.format(row="new")});
    END""",
]


# Identifiers as whole tokens (a search for one was a 1M store's slowest): a second FTS5
# index whose tokenizer keeps `_` inside a token, so `gcloud_alpha_compute` is one entry to
# look up. In the index above it is the phrase `gcloud alpha compute`, each token in a large
# share of a store of man pages, and matching the phrase walks their position lists (the 1M
# store's p95). A query word with `_` is looked up here (store/sqlite/fts5.py); its parts
# alone, in the index above, as before. Only memories with a `_` in their words are indexed:
# a store of chat turns holds next to none. The view and the triggers' conditions are one
# expression, so a memory is removed from it exactly when it was added.
IDENT_TOKENIZE = "porter unicode61 remove_diacritics 2 tokenchars '_'"
_HAS_IDENT = "instr({row}.key || {row}.value || {row}.tags || coalesce({row}.context, ''), '_')"
_IDENT_ROW = "{row}.id, {row}.key, {row}.value, {row}.tags, {row}.context"
_IDENT_ADD = (
    "INSERT INTO memory_identifiers(rowid, key, value, tags, context) "
    f"SELECT {_IDENT_ROW.format(row='new')} WHERE {_HAS_IDENT.format(row='new')};"
)
_IDENT_TAKE = (
    "INSERT INTO memory_identifiers(memory_identifiers, rowid, key, value, tags, context) "
    f"SELECT 'delete', {_IDENT_ROW.format(row='old')} WHERE {_HAS_IDENT.format(row='old')};"
)
SQLITE_IDENT_DDL = [
    "CREATE VIEW IF NOT EXISTS memory_identifiers_source AS SELECT id, key, value, tags, "
    f"context FROM memories WHERE {_HAS_IDENT.format(row='memories')}",
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS memory_identifiers USING fts5(
        key, value, tags, context, content='memory_identifiers_source', content_rowid='id',
        tokenize="{IDENT_TOKENIZE}")""",
    "CREATE TRIGGER IF NOT EXISTS memory_identifiers_insert AFTER INSERT ON memories "
    f"BEGIN {_IDENT_ADD} END",
    "CREATE TRIGGER IF NOT EXISTS memory_identifiers_delete AFTER DELETE ON memories "
    f"BEGIN {_IDENT_TAKE} END",
    "CREATE TRIGGER IF NOT EXISTS memory_identifiers_update "
    f"AFTER UPDATE OF key, value, tags, context ON memories BEGIN {_IDENT_TAKE} {_IDENT_ADD} END",
]
# Filled once when made: on a new store at no cost, on an older one the migration.
SQLITE_IDENT_REBUILD = "INSERT INTO memory_identifiers(memory_identifiers) VALUES ('rebuild')"


def _owner(row: str) -> str:
    return f"CASE WHEN {row}.scope = 'swarm' THEN '' ELSE {row}.agent_id END"


def _chars(row: str) -> str:
    return (
        f"length({row}.key) + length({row}.value) + length({row}.tags)"
        f" + coalesce(length({row}.context), 0)"
    )


_ADD = (
    f"INSERT INTO keyword_totals(owner, project, memories, chars) VALUES ({_owner('new')}, "
    f"new.project, 1, {_chars('new')}) ON CONFLICT(owner, project) DO UPDATE SET "
    "memories = memories + 1, chars = chars + excluded.chars;"
)
_TAKE = (
    f"UPDATE keyword_totals SET memories = memories - 1, chars = chars - ({_chars('old')}) "
    f"WHERE owner = {_owner('old')} AND project = old.project;"
)
# The size and total length (characters) of each owner's memories ('' for the swarm's) in
# each project: what a caller's keyword statistics count is the swarm's and its own in the
# projects its search covers, never another agent's private memories nor another
# project's (store/sqlite/fts5.py). Kept by triggers in the writing transaction, as the
# index is; filled from `memories` when made (KEYWORD_TOTALS_FILL).
SQLITE_KEYWORD_TOTALS_DDL = [
    """CREATE TABLE IF NOT EXISTS keyword_totals (
        owner TEXT NOT NULL, project TEXT NOT NULL, memories INTEGER NOT NULL,
        chars INTEGER NOT NULL, PRIMARY KEY (owner, project))""",
    f"CREATE TRIGGER IF NOT EXISTS keyword_totals_insert AFTER INSERT ON memories BEGIN {_ADD} END",
    "CREATE TRIGGER IF NOT EXISTS keyword_totals_delete AFTER DELETE ON memories "
    f"BEGIN {_TAKE} END",
    "CREATE TRIGGER IF NOT EXISTS keyword_totals_update AFTER UPDATE OF key, value, tags, "
    f"context, scope, agent_id, project ON memories BEGIN {_TAKE} {_ADD} END",
]
KEYWORD_TOTALS_FILL = (
    f"INSERT INTO keyword_totals(owner, project, memories, chars) SELECT {_owner('memories')}, "
    f"project, count(*), sum({_chars('memories')}) FROM memories GROUP BY 1, 2"
)
# Counters made before projects (per owner only): dropped, made again and filled.
SQLITE_KEYWORD_TOTALS_OLD = [
    "DROP TRIGGER IF EXISTS keyword_totals_insert",
    "DROP TRIGGER IF EXISTS keyword_totals_delete",
    "DROP TRIGGER IF EXISTS keyword_totals_update",
    "DROP TABLE IF EXISTS keyword_totals",
]
# A keyword index made before the context column or the project column: dropped
# (create_sqlite_objects), then made again by SQLITE_FTS_DDL and filled from `memories` by this.
SQLITE_FTS_OLD = [
    "DROP TRIGGER IF EXISTS memories_fts_insert",
    "DROP TRIGGER IF EXISTS memories_fts_delete",
    "DROP TRIGGER IF EXISTS memories_fts_update",
    "DROP TABLE IF EXISTS memories_fts",
    "DROP VIEW IF EXISTS memories_fts_source",
]
SQLITE_FTS_REBUILD = "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')"


async def create_sqlite_objects(conn: AsyncConnection) -> None:
    """The keyword indexes and counters, made when missing and filled when new, after the
    tables and migrations.py's columns (the index reads the write-time context)."""
    old = await _keyword_index_lacks(conn, ("context", "project"))
    if old:
        for ddl in SQLITE_FTS_OLD:
            await conn.exec_driver_sql(ddl)
    for ddl in SQLITE_FTS_DDL:
        await conn.exec_driver_sql(ddl)
    if old:
        await conn.exec_driver_sql(SQLITE_FTS_REBUILD)
    # A store from before the identifiers' index fills it once (1M: see
    # docs/lab/benchmark-runs.md).
    made = await conn.exec_driver_sql("PRAGMA table_info(memory_identifiers)")
    fill = not made.all()
    for ddl in SQLITE_IDENT_DDL:
        await conn.exec_driver_sql(ddl)
    if fill:
        await conn.exec_driver_sql(SQLITE_IDENT_REBUILD)
    made = await conn.exec_driver_sql("PRAGMA table_info(keyword_totals)")
    columns = {row._mapping["name"] for row in made}
    if columns and "project" not in columns:  # counted before projects
        for ddl in SQLITE_KEYWORD_TOTALS_OLD:
            await conn.exec_driver_sql(ddl)
    fill = "project" not in columns  # a store from before these counters
    for ddl in SQLITE_KEYWORD_TOTALS_DDL:
        await conn.exec_driver_sql(ddl)
    if fill:
        await conn.exec_driver_sql(KEYWORD_TOTALS_FILL)


async def _keyword_index_lacks(conn: AsyncConnection, wanted: tuple[str, ...]) -> list[str]:
    """The columns of `wanted` an existing FTS5 index lacks: one made before the
    write-time context column (store/write_context.py; their memories have no context
    until rewritten) or before the project column (store/schema.py). init_schema makes it
    again and refills it from `memories`, once (create_sqlite_objects)."""
    table = await conn.exec_driver_sql("PRAGMA table_info(memories_fts)")
    columns = [row._mapping["name"] for row in table]
    return [column for column in wanted if columns and column not in columns]
