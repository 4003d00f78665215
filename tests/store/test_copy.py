"""`memory-mcp copy --from DB --to DB`: a SQLite store to a real PostgreSQL and back, with
ids, versions, history, vectors and tokens; a non-empty target refused unless --replace;
the same copy again gives the same store; new writes after a copy get new ids."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_mcp.cli.main import main
from memory_mcp.models import Caller, Role, Scope, StoreRequest, Visibility
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened
from tests.http.team_server import EXE, server_env


@pytest.fixture
def db_backend() -> str:
    return "postgresql"  # pg_url below; the source is a SQLite file


async def fill(settings: Settings) -> str:
    """Memories of two agents in every scope, one updated twice, one deleted, vectors for
    all, and a token; returns the token."""
    async with opened(settings) as app:
        service = app.service
        bob = Caller("bob", Role.WORKER, "s9")
        for scope in ("agent", "session", "swarm"):
            await service.store_memory(
                app.caller, StoreRequest(f"a-{scope}", "apricot", Scope(scope))
            )
            await service.store_memory(bob, StoreRequest(f"b-{scope}", "blueberry", Scope(scope)))
        for value in ("v1", "v2", "v3"):
            await service.store_memory(app.caller, StoreRequest("changing", f"cherry {value}"))
        gone = await service.store_memory(app.caller, StoreRequest("gone", "damson"))
        await service.deletes.delete(app.caller, gone.record.id)
        await service.vectors.embed_pending()
        return await app.tokens.issue("bob", "worker")


async def snapshot(settings: Settings) -> dict[str, Any]:
    async with opened(settings) as app:
        store = app.service.store
        records = [r async for r in store.iter_records()]
        history = {r.id: await store.history(r.id) for r in records}
        digests = {r.content_hash for r in records}
        vectors = await store.vectors.embedded(app.service.vectors.model, digests)
        return {"records": records, "history": history, "vectors": vectors}


async def use_copy(settings: Settings, token: str) -> tuple[Any, list[tuple[int, float]], int]:
    """What the copy is used for: the token, the vector arm, a new write."""
    async with opened(settings) as app:
        holder = await app.tokens.verify(token)
        # The vector arm on PostgreSQL reads the copied vectors (pgvector column filled).
        query = (await FakeEmbedder().embed(["cherry v3"]))[0]
        vis = Visibility(caller=app.caller, now=app.service.clock())
        nearest = await app.service.vectors.search.nearest(query, vis, 1)
        # A new memory gets an id past every copied (and deleted) one.
        new = await app.service.store_memory(app.caller, StoreRequest("after", "elderberry"))
    return holder, nearest, new.record.id


def settings_for(make_settings: Callable[..., Settings], db: str) -> Settings:
    return make_settings(db=db, watch=False)


def test_sqlite_to_postgresql_and_back(
    make_settings: Callable[..., Settings], pg_url: str, tmp_path: Path, capsys: Any
) -> None:
    source = settings_for(make_settings, str(tmp_path / "source.db"))
    token = anyio.run(fill, source)
    before = anyio.run(snapshot, source)

    assert main(["copy", "--from", str(tmp_path / "source.db"), "--to", pg_url]) == 0
    listing = capsys.readouterr().out
    on_pg = settings_for(make_settings, pg_url)
    assert anyio.run(snapshot, on_pg) == before
    assert "memories\t7" in listing  # 6 + "changing"; "gone" was deleted
    assert "memory_history\t2" in listing

    holder, nearest, new_id = anyio.run(use_copy, on_pg, token)
    assert holder is not None
    assert holder.agent_id == "bob"
    changing = next(r for r in before["records"] if r.key == "changing")
    assert nearest[0][0] == changing.id
    assert new_id > max(r.id for r in before["records"]) + 1  # "gone" not reused

    back = tmp_path / "back.db"
    assert main(["copy", "--from", pg_url, "--to", str(back)]) == 0
    after_pg = anyio.run(snapshot, on_pg)
    assert anyio.run(snapshot, settings_for(make_settings, str(back))) == after_pg


def test_a_non_empty_target_is_refused_unless_replace_and_replace_is_idempotent(
    make_settings: Callable[..., Settings], pg_url: str, tmp_path: Path, capsys: Any
) -> None:
    source_path = str(tmp_path / "source.db")
    source = settings_for(make_settings, source_path)
    anyio.run(fill, source)
    assert main(["copy", "--from", source_path, "--to", pg_url]) == 0
    on_pg = settings_for(make_settings, pg_url)
    first = anyio.run(snapshot, on_pg)
    capsys.readouterr()

    assert main(["copy", "--from", source_path, "--to", pg_url]) == 1
    refusal = capsys.readouterr().err
    assert "not empty" in refusal
    assert "--replace" in refusal
    assert anyio.run(snapshot, on_pg) == first

    assert main(["copy", "--from", source_path, "--to", pg_url, "--replace"]) == 0
    assert anyio.run(snapshot, on_pg) == first


def test_a_missing_source_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    """The real command, as a user runs it."""
    missing, target = tmp_path / "nope.db", tmp_path / "target.db"
    done = subprocess.run(
        [EXE, "copy", "--from", str(missing), "--to", str(target)],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 1
    assert f"no memory store at {missing}" in done.stderr
    assert not missing.exists()
    assert not target.exists()
