"""A store stamped by this code opens without checking every table (store/migrations.py,
code_stamp); a store stamped by any other code, or by none, is checked and brought up to
date once, and stamped."""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memory_mcp
from memory_mcp.settings import Settings
from memory_mcp.store import migrations, schema
from memory_mcp.store.engine import create_engines
from memory_mcp.store.postgres import ddl, pgvector_search
from memory_mcp.store.repository import MemoryStore
from memory_mcp.store.sqlite import ddl as sqlite_ddl
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

INDEX = "ix_memories_key_lower"  # one of migrations.ADDED_INDEXES, on both stores


async def _stamp_and_index(settings: Settings) -> tuple[int | None, bool]:
    async with opened(settings) as app, app.service.store._engines.write() as conn:
        stamp = await conn.scalar(
            schema.StoreMetaRow.__table__.select()
            .with_only_columns(schema.StoreMetaRow.value)
            .where(schema.StoreMetaRow.name == migrations.SCHEMA_STAMP)
        )
        if conn.dialect.name == "sqlite":
            found = f"SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = '{INDEX}'"
        else:
            found = f"SELECT 1 FROM pg_indexes WHERE indexname = '{INDEX}'"
        index = (await conn.exec_driver_sql(found)).first() is not None
    return stamp, index


async def _run(settings: Settings, sql: str) -> None:
    async with opened(settings) as app, app.service.store._engines.write() as conn:
        await conn.exec_driver_sql(sql)


async def test_only_a_store_stamped_by_other_code_is_checked_again(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    current = migrations.code_stamp()
    assert current is not None
    assert await _stamp_and_index(settings) == (current, True)  # a new store, stamped
    # Damage only a check would mend: with this code's stamp, an open does not look.
    await _run(settings, f"DROP INDEX {INDEX}")
    assert await _stamp_and_index(settings) == (current, False)
    # Stamped by another version: every check runs once, and the stamp is this code's.
    await _run(
        settings,
        f"UPDATE store_meta SET value = {current ^ 1} WHERE name = '{migrations.SCHEMA_STAMP}'",
    )
    assert await _stamp_and_index(settings) == (current, True)


def test_the_stamp_covers_every_module_that_makes_the_schema() -> None:
    """What init_schema runs is defined in SCHEMA_CODE's files: moving any of it elsewhere
    must add that file, or a change there would not reach stamped stores."""
    package = Path(memory_mcp.__file__).resolve().parent
    makers: list[Any] = [
        MemoryStore._init_schema,
        migrations.migrate,
        migrations.create_new_sqlite,
        schema.Base,
        sqlite_ddl.create_sqlite_objects,
        ddl.create_postgres_objects,
        pgvector_search.fill_pgvector_column,
    ]
    files = {Path(inspect.getsourcefile(maker) or "").resolve() for maker in makers}
    files |= {Path(schema.__file__).resolve()}  # the tables
    files |= {Path(sqlite_ddl.__file__).resolve()}  # SQLITE_FTS_DDL and the other statements
    assert {str(f.relative_to(package)) for f in files} <= set(migrations.SCHEMA_CODE)
    assert all((package / name).is_file() for name in migrations.SCHEMA_CODE)


def _dump(path: Path) -> list[tuple[object, ...]]:
    """Every table, index, trigger and view with its SQL, and every row of every table but
    the keyword indexes' own (FTS5's shadow tables: empty in both, whose SQL is above)."""
    with sqlite3.connect(path) as db:
        objects = db.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        rows = sorted(
            (name, *row)
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'memories_fts%' AND name NOT LIKE 'memory_identifiers%' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).fetchall()
            for row in db.execute(f"SELECT * FROM {name}").fetchall()
        )
    return [*objects, *rows]


@SQLITE_ONLY
async def test_a_new_file_is_made_as_every_check_would_make_it(tmp_path: Path) -> None:
    """create_new_sqlite (one trip) against the checks run on an empty file."""
    made = {}
    for way in ("new", "checked"):
        path = tmp_path / f"{way}.db"
        store = MemoryStore(create_engines(f"sqlite+aiosqlite:///{path}"))
        try:
            if way == "new":
                await store.init_schema()
            else:
                await store._bring_up_to_date()
        finally:
            await store.close()
        made[way] = _dump(path)
    assert made["new"] == made["checked"]
    assert ("table", "memories_fts", "memories_fts") in [m[:3] for m in made["new"]]
