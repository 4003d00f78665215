"""The server answers the MCP handshake before it opens the store (memory_mcp/app/background.py):
nothing on the way to `initialize` imports SQLAlchemy or numpy or waits for the database,
a tool call waits for the store, and a store that cannot be opened is named in the error."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, call_error
from tests.mcp.test_stdio_e2e import EXE, server_env

pytestmark = pytest.mark.anyio

STORE_IMPORTS = ("sqlalchemy", "aiosqlite", "numpy", "memory_mcp.app.root", "memory_mcp.store")
PACKAGES_UNDER = tuple(f"{name}." for name in STORE_IMPORTS)


def test_the_serve_path_imports_no_store_before_the_handshake() -> None:
    script = (
        "import json, sys\n"
        "import memory_mcp.cli.main, memory_mcp.mcp.server\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    loaded = {
        m for m in json.loads(done.stdout) if m in STORE_IMPORTS or m.startswith(PACKAGES_UNDER)
    }
    assert not loaded, f"imported before the handshake: {sorted(loaded)}"


async def test_initialize_is_answered_while_the_store_is_still_locked(tmp_path: Path) -> None:
    """Another process holds the store's write lock (as a long import would): the server
    still answers the handshake, and the first tool call is served once the lock is free."""
    db = tmp_path / "shared.db"
    lock = os.open(f"{db}-writelock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    params = StdioServerParameters(
        command=EXE, args=["serve", "--db", str(db), "--no-watch"], env=server_env(tmp_path)
    )
    try:
        async with Client(params, read_timeout_seconds=120) as client:
            assert client.server_info is not None
            assert client.server_info.name == "memory-mcp"
            assert not db.exists(), "answered before the store was created"
            fcntl.flock(lock, fcntl.LOCK_UN)
            await call(client, "store_memory", key="k", value="lemur migration")
            found = await call(client, "memory-search", query="lemur")
            assert [hit["key"] for hit in found["results"]] == ["k"]
    finally:
        os.close(lock)


async def test_a_store_that_cannot_be_opened_is_reported_by_every_tool_call(
    tmp_path: Path,
) -> None:
    """A valid SQLite file that passes the start-up check but cannot be migrated (its
    `memories` is a view): each call says the store failed, and the server stays up."""
    db = tmp_path / "odd.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE VIEW memories AS SELECT 1 AS id")
    settings = Settings(db=str(db), data_dir=tmp_path / "data", watch=False)
    server = build_server(settings, FakeEmbedder(), open_app=open_app)
    async with Client(server) as client:
        for _ in range(2):
            error = await call_error(client, "memory-search", query="anything")
            assert "the memory store cannot be read or written" in error


async def test_a_postgresql_store_is_served_over_stdio(tmp_path: Path, pg_url: str) -> None:
    """The start-up check has no file to read for a PostgreSQL URL: the store opens after
    the handshake as a SQLite one does."""
    params = StdioServerParameters(
        command=EXE, args=["serve", "--db", pg_url, "--no-watch"], env=server_env(tmp_path)
    )
    async with Client(params, read_timeout_seconds=120) as client:
        await call(client, "store_memory", key="k", value="lemur migration")
        found = await call(client, "memory-search", query="lemur")
        assert [hit["key"] for hit in found["results"]] == ["k"]


async def test_an_unreachable_postgresql_server_is_named_by_the_tool_calls(tmp_path: Path) -> None:
    """Nothing listens on port 1: the handshake is answered, and each call says the store
    cannot be reached (not a traceback on stderr and a closed pipe)."""
    url = "postgresql+asyncpg://nobody@127.0.0.1:1/memories"
    params = StdioServerParameters(
        command=EXE, args=["serve", "--db", url, "--no-watch"], env=server_env(tmp_path)
    )
    async with Client(params, read_timeout_seconds=120) as client:
        assert client.server_info is not None
        error = await call_error(client, "memory-search", query="anything")
        assert "the memory store did not open: cannot reach it" in error


async def test_a_client_that_leaves_while_the_store_opens_leaves_nothing_open(
    make_settings: Callable[..., Settings],
) -> None:
    """The app opens in the background, so a client can leave while it is still opening
    (the notes watcher just started): everything it made is closed, nothing is left for
    the garbage collector to warn about."""
    settings = make_settings(memory_dir=make_settings().data_dir.parent / "notes")
    settings.memory_dir.mkdir(parents=True)  # type: ignore[union-attr]
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await client.list_tools()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []
