"""A store made before the ownership columns existed opens with today's code: columns are
added and backfilled in place, old learnings move to their lead, and opening it again
changes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import Caller, Role, Scope, SearchRequest, StoreRequest, Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS as WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.keyword import query_terms
from tests.conftest import opened

pytestmark = pytest.mark.anyio

OLD_SCHEMA = Path(__file__).parent.parent / "data" / "schema_before_ownership.sql"
COLUMNS = ", ".join(
    [
        "id",
        "identity",
        "key",
        "value",
        "scope",
        "agent_id",
        "session_id",
        "source",
        "tags",
        "metadata",
        "flags",
        "confidence",
        "pinned",
        "version",
        "content_hash",
        "created_at",
        "updated_at",
        "expires_at",
        "last_accessed_at",
        "last_used_at",
        "access_count",
        "file_path",
        "revision",
    ]
)


def old_row(
    memory_id: int,
    key: str,
    value: str,
    agent: str,
    meta: dict[str, str],
    tags: list[str],
    version: int = 1,
    session: str = "",
) -> tuple[object, ...]:
    scope = "session" if session else "swarm"
    return (
        memory_id,
        f"{scope}\x1f{key}",
        key,
        value,
        scope,
        agent,
        session,
        "manual",
        json.dumps(tags),
        json.dumps(meta),
        "[]",
        None,
        0,
        version,
        f"hash{memory_id}",
        1_700_000_000.0,
        1_700_000_100.0,
        None,
        None,
        1_700_000_100.0,
        0,
        None,
        memory_id,
    )


def build_old_store(path: Path, more: list[tuple[object, ...]] | None = None) -> None:
    """What today's main leaves on disk: its DDL, a swarm memory edited once by its
    owner (one history row), and a learning injected about worker-2 (owned by worker-2)."""
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA.read_text())
    rows = [
        old_row(1, "release-day", "We release on Thursdays", "w1", {}, ["process"], 2),
        old_row(
            2,
            "learning:mistake-pattern:abc",
            "Run migrations before the API tests",
            "worker-2",
            {"injected_by": "lead", "category": "mistake-pattern", "target_agent": "worker-2"},
            ["mistake-pattern", "learning"],
        ),
    ]
    rows += more or []
    db.executemany(f"INSERT INTO memories ({COLUMNS}) VALUES ({', '.join('?' * 23)})", rows)
    db.executemany(
        "INSERT INTO memory_tags (memory_id, tag) VALUES (?, ?)",
        [(1, "process"), (2, "mistake-pattern"), (2, "learning")],
    )
    db.execute(
        "INSERT INTO memory_history (memory_id, version, value, tags, metadata, source, "
        "replaced_at) VALUES (1, 1, 'We release on Fridays', '[\"process\"]', '{}', "
        "'manual', 1700000050.0)"
    )
    db.execute("INSERT INTO store_meta (name, value) VALUES ('revision', 2)")
    db.commit()
    db.close()


def columns(path: Path, table: str) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


async def test_an_old_store_gains_the_ownership_columns_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_old_store(path)
    assert "updated_by" not in columns(path, "memories")
    settings = Settings(
        db=str(path), data_dir=tmp_path / "data", memory_dir=tmp_path / "m", watch=False
    )
    worker = Caller("worker-2", Role.WORKER, "s")
    for _ in range(2):  # the second open must find nothing to do, and not fail
        async with opened(settings) as app:
            service = app.service
            old = await service.get(worker, 1)
            assert (old.agent_id, old.updated_by, old.version) == ("w1", "w1", 2)
            history = await service.store.history(1)
            assert [(h["value"], h["updated_by"]) for h in history] == [
                ("We release on Fridays", "w1")
            ]
            learning = await service.get(worker, 2)
            assert (learning.agent_id, learning.about_agent) == ("lead", "worker-2")
            assert learning.updated_by == "lead"
            # The words were indexed by the old triggers and still are.
            found = await service.search(worker, SearchRequest("Thursdays"))
            assert [hit.record.id for hit in found.hits] == [1]
    assert {"updated_by", "about_agent", "written_session", "context"} <= set(
        columns(path, "memories")
    )
    # The keyword index was made again with the write-time context and project columns.
    assert columns(path, "memories_fts") == ["key", "value", "tags", "context", "project"]
    assert "updated_by" in columns(path, "memory_history")

    async with opened(settings) as app:
        service = app.service
        # The rules hold on migrated rows: worker-2 no longer owns the learning about it.
        with pytest.raises(PermissionDeniedError, match="'lead'"):
            await service.deletes.delete(worker, 2)
        with pytest.raises(PermissionDeniedError, match="agent 'w1'"):
            await service.store_memory(
                worker, StoreRequest("release-day", "Any day", scope=Scope.SWARM)
            )
        owner = Caller("w1", Role.WORKER, "s")
        updated = await service.store_memory(
            owner, StoreRequest("release-day", "Mondays", scope=Scope.SWARM)
        )
        assert (updated.record.version, updated.record.updated_by) == (3, "w1")
        lead = Caller("lead", Role.LEAD, "s")
        assert await service.deletes.delete(lead, 2) == 2


async def test_older_session_memories_gain_their_context(tmp_path: Path) -> None:
    """Memories of session scope were written in their session: the upgrade gives them
    the write-time context (store/write_context.py); older swarm memories recorded no
    session and borrow nothing."""
    path = tmp_path / "old.db"
    session = [
        old_row(3, "pottery", "Ines started pottery classes", "w1", {}, [], session="s1"),
        old_row(4, "first", "What are you making first?", "w1", {}, [], session="s1"),
        old_row(5, "mugs", "A set of blue mugs", "w1", {}, [], session="s1"),
        old_row(6, "elsewhere", "Pottery fair in May", "w1", {}, [], session="s2"),
    ]
    build_old_store(path, session)
    settings = Settings(
        db=str(path), data_dir=tmp_path / "data", memory_dir=tmp_path / "m", watch=False
    )
    writer = Caller("w1", Role.WORKER, "s1")
    vis = Visibility(caller=writer, now=0.0)
    for _ in range(2):  # opening again changes nothing
        async with opened(settings) as app:
            store = app.service.store
            found = await store.keyword_search(query_terms("classes"), vis, 10, WEIGHTS)
            assert sorted(memory_id for memory_id, _ in found) == [3, 4, 5]
            # Thursdays: the swarm memory (id 1) lends to none, not even the next one.
            found = await store.keyword_search(query_terms("thursdays"), vis, 10, WEIGHTS)
            assert [memory_id for memory_id, _ in found] == [1]
    async with opened(settings) as app:
        later = await app.service.store_memory(
            writer, StoreRequest("later", "and cups", scope=Scope.SESSION)
        )
        found = await app.service.store.keyword_search(query_terms("classes"), vis, 10, WEIGHTS)
    # Written after them in the same session, it borrows too.
    assert sorted(memory_id for memory_id, _ in found) == [3, 4, 5, later.record.id]


async def test_an_old_store_gains_the_links_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_old_store(path)
    assert columns(path, "memory_links") == []
    settings = Settings(
        db=str(path), data_dir=tmp_path / "data", memory_dir=tmp_path / "m", watch=False
    )
    lead = Caller("lead", Role.LEAD, "s")
    async with opened(settings) as app:
        made = await app.service.links.link(lead, 1, 2, "follows")
        assert [(link.source_id, link.target_id) for link in made.added] == [(1, 2)]
    async with opened(settings) as app:  # a second open keeps it, and deletes still work
        [shown], _ = await app.service.links.links_of(lead, await app.service.get(lead, 2))
        assert (shown.direction, shown.far.id, shown.link.relation) == ("in", 1, "follows")
        assert await app.service.deletes.delete(lead, 1) == 1
        assert (await app.service.links.links_of(lead, await app.service.get(lead, 2)))[0] == []
    assert "target_owner" in columns(path, "memory_links")
