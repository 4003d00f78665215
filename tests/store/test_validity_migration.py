"""A store made before validity windows (rules/validity.py) opens with today's code, on
SQLite and PostgreSQL: the columns are added, every memory holds from when it was made
and none is closed, reads and corrections work on it, and PostgreSQL's covering index is
made again with the window's columns."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest

from memory_mcp.models import Caller, Role, SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, UNSTAMP, opened, pg_query

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

WINDOW = ("valid_from", "valid_to", "superseded_by")
W1 = Caller("w1", Role.WORKER, "s")


async def test_an_older_store_gains_the_window(
    make_settings: Callable[..., Settings], db_backend: str, request: pytest.FixtureRequest
) -> None:
    settings = make_settings()
    async with opened(settings) as app:
        made = await app.service.store_memory(W1, StoreRequest("port", "The port is 8080."))
    drop = [UNSTAMP, *(f"ALTER TABLE memories DROP COLUMN {column}" for column in WINDOW)]
    if db_backend == "sqlite":
        db = sqlite3.connect(settings.database_file or "")
        for statement in drop:
            db.execute(statement)
        db.commit()
        db.close()
    else:
        server = request.getfixturevalue("pg_server")
        # The covering index as it was before (dropping the columns dropped it).
        drop.append(
            "CREATE INDEX ix_memories_project_visible ON memories (project) INCLUDE "
            "(scope, agent_id, session_id, expires_at, task, archived_at, content_hash, id)"
        )
        pg_query(server, settings.database_url, "; ".join(drop))
    async with opened(settings) as app:
        old = await app.service.get(W1, made.record.id)
        assert old.valid_from == old.created_at and old.valid_to is None
        found = await app.service.search(W1, SearchRequest("port"))
        assert [hit.record.id for hit in found.hits] == [old.id]
        new = await app.service.store_memory(
            W1, StoreRequest("port-now", "The port is 9090.", supersedes=old.id)
        )
        closed = await app.service.get(W1, old.id)
        assert closed.superseded_by == new.record.id and closed.valid_to is not None
        found = await app.service.search(W1, SearchRequest("port"))
        assert [hit.record.id for hit in found.hits] == [new.record.id]
    if db_backend == "postgresql":
        definition = pg_query(
            request.getfixturevalue("pg_server"),
            settings.database_url,
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_memories_project_visible'",
        )
        assert "valid_to" in definition
