"""A store made before projects opens with today's code: every memory becomes `*` with its
id, identity, versions, links and vectors, a token becomes one of every project, and
opening it again changes nothing. On SQLite the store is the one today's release wrote
(tests/data/store_before_projects.sql, sqlite3's dump of it); on PostgreSQL today's schema
without the new columns and index stands in for it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.models import Caller, Role, Scope, SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from memory_mcp.store.sqlite.ddl import SQLITE_FTS_OLD, SQLITE_KEYWORD_TOTALS_OLD
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, UNSTAMP, opened, pg_query

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

OLD_STORE = Path(__file__).parent.parent / "data" / "store_before_projects.sql"
IN_ALPHA = Caller("w1", Role.WORKER, "s9", project="alpha")


def rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


MEMORIES = "SELECT id, identity, key, value, version, agent_id, content_hash FROM memories"
KEYWORD_COLUMNS = [("key",), ("value",), ("tags",), ("context",), ("project",)]
# The keyword index before projects: no project column, content read from `memories`.
INDEX_BEFORE_PROJECTS = [
    """CREATE VIRTUAL TABLE memories_fts USING fts5(key, value, tags, context,
        content='memories', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, key, value, tags, context)
        VALUES (new.id, new.key, new.value, new.tags, new.context);
    END""",
    "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
]


def index_is_whole(path: Path) -> None:
    """The keyword index has its project column and holds what its content says."""
    assert rows(path, "SELECT name FROM pragma_table_info('memories_fts')") == KEYWORD_COLUMNS
    rows(path, "INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")


@SQLITE_ONLY  # the file today's release wrote
async def test_a_store_of_todays_release_opens_with_every_memory_in_every_project(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(OLD_STORE.read_text())
    db.close()
    before = rows(path, MEMORIES)
    # The columns a store of that release has (later releases add their own, with defaults).
    history_sql = (
        "SELECT id, memory_id, version, value, tags, metadata, source, replaced_at, updated_by "
        "FROM memory_history ORDER BY id"
    )
    history = rows(path, history_sql)
    links = rows(path, "SELECT id, source_id, target_id, relation FROM memory_links")
    vectors = rows(path, "SELECT count(*) FROM embeddings")
    assert len(before) == 5 and links and vectors[0][0] >= 5
    settings = Settings(db=str(path), data_dir=tmp_path / "data", memory_dir=tmp_path / "m")
    for _ in range(2):  # the second open finds nothing to do
        async with opened(settings) as app:
            service = app.service
            records = [r async for r in service.all_records()]
            assert {r.project for r in records} == {"*"}
            assert {(r.task, r.archived_at) for r in records} == {(None, None)}
            # Read from a project, `*` is there: by its words, and listed.
            found = await service.search(IN_ALPHA, SearchRequest("make ship-it"))
            assert found.hits[0].record.key == "deploy"
            assert (await app.tokens.listing())[0].projects is None
    assert rows(path, MEMORIES) == before  # ids, identities, versions: as they were
    assert rows(path, history_sql) == history
    assert rows(path, "SELECT id, source_id, target_id, relation FROM memory_links") == links
    assert rows(path, "SELECT count(*) FROM embeddings") == vectors
    assert rows(path, "SELECT DISTINCT target_project FROM memory_links") == [("*",)]
    index = rows(path, "SELECT sql FROM sqlite_master WHERE name = 'ix_memories_project'")
    assert "project, updated_at, id" in index[0][0]
    index_is_whole(path)  # made again with each memory's project, once
    async with opened(settings) as app:
        # An old memory is updated where it is (`*`), not copied into the project.
        again = await app.service.store_memory(
            Caller("w1", Role.WORKER, "s9"),
            StoreRequest("deploy", "Deploy with make release", Scope.SWARM),
        )
        assert (again.record.id, again.record.version) == (before[0][0], 3)
        new = await app.service.store_memory(IN_ALPHA, StoreRequest("deploy", "alpha's"))
        assert new.record.project == "alpha" and new.record.id not in {r[0] for r in before}


NEW_COLUMNS = (
    ("memories", "project"),
    ("memories", "task"),
    ("memories", "archived_at"),
    ("memory_links", "target_project"),
    ("agent_tokens", "projects"),
)


async def test_the_migration_adds_the_columns_and_the_index(
    make_settings: Callable[..., Settings], db_backend: str, request: pytest.FixtureRequest
) -> None:
    """Today's schema without what projects added, and memories in it: opening adds the
    columns (every memory `*`) and the index the project filter uses."""
    settings = make_settings()
    async with opened(settings) as app:
        made = await app.service.store_memory(
            Caller("w1", Role.WORKER, "s"), StoreRequest("k", "a memory from before")
        )
    drop = ["DROP INDEX ix_memories_project", UNSTAMP]
    drop += [f"ALTER TABLE {table} DROP COLUMN {column}" for table, column in NEW_COLUMNS]
    if db_backend == "sqlite":
        db = sqlite3.connect(settings.database_file or "")
        # The keyword counters' and index's triggers read the project (a store before
        # all three): the index as it was then.
        for statement in [*SQLITE_KEYWORD_TOTALS_OLD, *SQLITE_FTS_OLD, *drop]:
            db.execute(statement)
        for statement in INDEX_BEFORE_PROJECTS:
            db.execute(statement)
        db.commit()
        db.close()
    else:
        # A read within projects on PostgreSQL: the covering index (dropped with the
        # columns), the vectors' hash index and their storage in the row (pgvector_search).
        drop += [
            "DROP INDEX ix_embeddings_content_hash",
            "ALTER TABLE embeddings ALTER COLUMN embedding SET STORAGE EXTERNAL",
        ]
        pg_query(request.getfixturevalue("pg_server"), settings.database_url, "; ".join(drop))
    async with opened(settings) as app:
        record = await app.service.get(Caller("w1", Role.WORKER, "s"), made.record.id)
        assert (record.project, record.key, record.version) == ("*", "k", 1)
        assert (await app.service.tasks.project_counts(IN_ALPHA)) == {"*": 1}
        found = await app.service.search(IN_ALPHA, SearchRequest("memory from before"))
        assert [(h.record.id, h.parts and h.parts.bm25 is not None) for h in found.hits] == [
            (made.record.id, True)
        ]
    if db_backend == "sqlite":
        index_is_whole(Path(settings.database_file or ""))
    else:
        made_again = pg_query(
            request.getfixturevalue("pg_server"),
            settings.database_url,
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix_%'; "
            "SELECT 'storage ' || attstorage::text FROM pg_attribute "
            "WHERE attrelid = 'embeddings'::regclass AND attname = 'embedding'",
        )
        for name in ("ix_memories_project", "ix_memories_project_visible"):
            assert f" {name}\n" in made_again
        assert "ix_embeddings_content_hash" in made_again and "storage m" in made_again
