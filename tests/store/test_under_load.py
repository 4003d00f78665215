"""Behaviour under load and with a damaged store, through the in-process MCP client on a real
SQLite file: reads never wait for writers, a busy store says so, unexpected failures never
leak their text, damaged rows are skipped, tool calls take turns, commits are fsynced.
(Real server processes on one file: tests/store/test_processes.py and tests/store/test_crash.py.)"""

from __future__ import annotations

import io
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.types import TextContent, TextResourceContents

from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.errors import StoreBusyError
from memory_mcp.mcp.server import build_server
from memory_mcp.models import Caller, SearchRequest, StoreRequest
from memory_mcp.rules.service import MemoryService
from memory_mcp.settings import Settings
from memory_mcp.store import engine
from memory_mcp.transfer.jsonl import export_lines
from tests.conftest import FakeEmbedder, call, call_error, opened

pytestmark = pytest.mark.anyio


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


@asynccontextmanager
async def write_lock_held(db: Path) -> AsyncIterator[sqlite3.Connection]:
    """Another connection holds SQLite's write lock (as a long import or the sqlite3 shell
    would) until the block ends.

    The lock is taken in a worker thread: the server's embedding worker may be half-way
    through a write whose next step needs the event loop, and a BEGIN that waited on the
    loop's own thread would keep that write from ever finishing."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=60, check_same_thread=False)
    try:
        await anyio.to_thread.run_sync(conn.execute, "BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


def db_path(settings: Settings) -> Path:
    assert settings.db is not None
    return Path(settings.db)


async def test_get_answers_while_another_connection_holds_the_write_lock(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 2000)  # a get that waits fails fast
    settings = make_settings()
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        stored = await call(client, "memory-store", key="k", value="the ferry leaves at nine")
        async with write_lock_held(db_path(settings)):
            with anyio.fail_after(20):
                first = await call(client, "memory-get", id=stored["id"])
                second = await call(client, "memory-get", id=stored["id"])
        assert (first["access_count"], second["access_count"]) == (1, 2)
    # The counts reach the file (at the latest when the server stops).
    with sqlite3.connect(db_path(settings)) as conn:
        count = conn.execute("SELECT access_count FROM memories").fetchone()[0]
    assert count == 2


async def test_a_busy_store_says_so_and_that_a_retry_helps(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 300)  # give up quickly for the test
    settings = make_settings()
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await call(client, "memory-store", key="k", value="first")
        async with write_lock_held(db_path(settings)):
            text = await call_error(client, "memory-store", key="k2", value="second")
        assert "busy" in text
        assert "retry" in text
        assert "database is locked" not in text  # the driver's words stay in the log
        await call(client, "memory-store", key="k2", value="second")  # the retry works


async def test_a_sweep_that_finds_nothing_expired_waits_for_no_writer(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every agent's server sweeps expired memories as it starts: one that finds none must
    not queue behind (or hold up) another process's write. One that finds some waits its
    turn like any other write."""
    monkeypatch.setattr(engine, "BUSY_TIMEOUT_MS", 300)
    async with opened(make_settings()) as app:
        service, caller = app.service, app.caller
        now = [1_000_000.0]
        service.clock = lambda: now[0]
        await service.store_memory(caller, StoreRequest("brief", "gone soon", ttl_seconds=10))
        async with write_lock_held(db_path(app.settings)):
            assert await service.purge_expired() == 0
            now[0] += 11
            with pytest.raises(StoreBusyError):
                await service.purge_expired()
        assert await service.purge_expired() == 1


async def test_an_unexpected_failure_is_named_without_its_internals(
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("no such column: secret_col in SELECT * FROM /srv/db/memory.db")

    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        monkeypatch.setattr(MemoryService, "search", broken)
        with caplog.at_level(logging.ERROR):
            text = await call_error(client, "memory-search", query="anything")
    assert "internal error" in text
    assert "may not help" in text
    assert "secret_col" not in text
    assert "SELECT" not in text
    assert "secret_col" in caplog.text, "the details go to the server log"


DAMAGE = {
    # A date no valid write can produce (year 9999 at a negative UTC offset), as older
    # versions stored it; and JSON columns edited by hand.
    "expires_at": "UPDATE memories SET expires_at = 253402318800.0 WHERE key = 'bad-date'",
    "tags": "UPDATE memories SET tags = '[\"unclosed' WHERE key = 'bad-tags'",
    "metadata": "UPDATE memories SET metadata = '{nope' WHERE key = 'bad-meta'",
    "scope": "UPDATE memories SET scope = 'planet' WHERE key = 'bad-scope'",
}


async def test_damaged_rows_are_skipped_by_every_read_path(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = make_settings()
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        good = await call(client, "memory-store", key="good", value="otter notes", scope="swarm")
        bad_ids = []
        for key in ("bad-date", "bad-tags", "bad-meta", "bad-scope"):
            stored = await call(
                client, "memory-store", key=key, value=f"otter {key}", scope="swarm", tags=["t"]
            )
            bad_ids.append(stored["id"])
    with sqlite3.connect(db_path(settings)) as conn:
        for statement in DAMAGE.values():
            assert conn.execute(statement).rowcount == 1

    with caplog.at_level(logging.WARNING):
        async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
            found = await call(client, "memory-search", query="otter", limit=50)
            assert [r["key"] for r in found["results"]] == ["good"]
            assert (await call(client, "memory-get", id=good["id"]))["key"] == "good"
            for bad_id in bad_ids:
                text = await call_error(client, "memory-get", id=bad_id)
                assert "damaged" in text
                assert "Traceback" not in text
            prompt = await client.get_prompt("memory-context", {"query": "otter"})
            message = prompt.messages[0].content
            assert isinstance(message, TextContent)
            prompt_text = message.text
            assert 'key="good"' in prompt_text
            assert "bad-" not in prompt_text
            resource = await client.read_resource("memory://context")
            contents = resource.contents[0]
            assert isinstance(contents, TextResourceContents)
            resource_text = contents.text
            assert 'key="good"' in resource_text
            assert "bad-" not in resource_text
        async with opened(settings) as app:
            out = io.StringIO()
            assert await export_lines(app.service.store.iter_records(), out) == 1
            assert '"key": "good"' in out.getvalue()
    skipped = [r for r in caplog.records if "skipping damaged memory" in r.getMessage()]
    assert len({r.getMessage() for r in skipped}) == 4, "each bad row is logged"
    assert all("\n" not in r.getMessage() for r in skipped), "one line each"

    # The command a user runs: exit 0, the good memory exported.
    export = [
        "export",
        "--all",
        "--db",
        str(db_path(settings)),
        "--output",
        str(tmp_path / "out.jsonl"),
    ]
    assert await anyio.to_thread.run_sync(main, export) == 0
    assert '"key": "good"' in (tmp_path / "out.jsonl").read_text()
    capsys.readouterr()


async def test_tool_calls_take_turns_in_arrival_order(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst is worked on a few calls at a time, first come first served, so the early
    calls finish early (the latency numbers are in `python -m bench stress`)."""
    real_search = MemoryService.search
    running = 0
    most_running = 0
    started: list[str] = []

    async def counting_search(
        self: MemoryService, caller: Caller, request: SearchRequest
    ) -> object:
        nonlocal running, most_running
        running += 1
        most_running = max(most_running, running)
        started.append(request.query)
        try:
            await anyio.sleep(0.01)  # hold the turn across a few scheduler rounds
            return await real_search(self, caller, request)
        finally:
            running -= 1

    monkeypatch.setattr(MemoryService, "search", counting_search)
    settings = make_settings(max_concurrent_calls=3)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await call(client, "memory-store", key="k", value="heron")
        queries = [f"heron {i}" for i in range(30)]
        async with anyio.create_task_group() as tasks:
            for query in queries:
                tasks.start_soon(partial(call, client, "memory-search", query=query))
                await anyio.sleep(0)  # send them in this order
    assert most_running == 3
    assert started == queries


async def test_commits_are_fsynced_unless_told_otherwise(
    make_settings: Callable[..., Settings],
) -> None:
    default = Settings.model_fields["synchronous"].default  # make_settings says "normal"
    for setting, expected in ((default, 2), ("normal", 1)):  # PRAGMA synchronous: 2 FULL, 1 NORMAL
        async with opened(make_settings(synchronous=setting)) as app:
            engines = app.service.store._engines  # the pragma is per connection
            for eng in (engines.reader, engines.writer):
                async with eng.connect() as conn:
                    value = (await conn.exec_driver_sql("PRAGMA synchronous")).scalar()
                assert value == expected, (setting, eng)
            assert engines.sync_writer is not None  # a store's upsert: Engines.run_write
            with engines.sync_writer.connect() as sync_conn:
                value = sync_conn.exec_driver_sql("PRAGMA synchronous").scalar()
            assert value == expected, (setting, "sync_writer")
