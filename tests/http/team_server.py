"""A real team server for tests: `memory-mcp serve --transport streamable-http|sse` spawned
on 127.0.0.1 with a free port, tokens made by the real `memory-mcp token add` (run in this
process: `cli`), and the SDK's own HTTP clients. Used by the HTTP tests, the permission
matrix over HTTP and the hooks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from memory_mcp.cli.main import main
from tests.conftest import in_process

EXE = str(Path(sys.executable).with_name("memory-mcp"))
TRANSPORTS = ("streamable-http", "sse")
START_DEADLINE_SECONDS = 120.0  # a busy 2-core machine; normally ~2 s


def server_env(tmp: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp / "home"),
        "XDG_DATA_HOME": str(tmp / "xdg"),
        "MEMORY_MCP_MEMORY_DIR": str(tmp / "notes"),
        "HF_HUB_OFFLINE": "1",
    }


async def stored_keys(db: Path | str) -> list[str]:
    """The keys of every memory in the store (a SQLite file or a URL), read directly."""
    from memory_mcp.settings import database_url
    from memory_mcp.store.engine import create_engines
    from memory_mcp.store.repository import MemoryStore

    store = MemoryStore(create_engines(database_url(str(db), Path("."))))
    try:
        return [record.key async for record in store.iter_records()]
    finally:
        await store.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def home_of(db: Path | str) -> Path:
    """The folder a test keeps beside its store: a SQLite file's own; for a PostgreSQL URL
    the caller says (`home=`)."""
    if "://" in str(db):
        raise ValueError("a PostgreSQL store has no folder: pass home=")
    return Path(db).parent


def cli(argv: list[str], home: Path) -> str:
    """`memory-mcp ARGV` run in this process, in the environment a spawned one gets
    (`server_env(home)`), failing as `check=True` would: its stdout. A process paid ~1 s
    of imports for each token; the README test runs the token commands as processes."""
    return cli_output(argv, home)[0]


def cli_output(argv: list[str], home: Path) -> tuple[str, str]:
    """`cli`'s run: (stdout, stderr)."""
    code, out, err = cli_run(argv, server_env(home))
    if code != 0:
        raise RuntimeError(f"memory-mcp {' '.join(argv)} exited {code}: {err}")
    return out, err


def cli_run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`memory-mcp ARGV` run in this process with `env` as its whole environment:
    (exit code, stdout, stderr)."""
    return in_process(lambda: main(argv), environment=env)


def token_add(
    db: Path | str,
    agent: str,
    role: str = "worker",
    home: Path | None = None,
    another: bool = False,
) -> str:
    """The real CLI (`cli`); the token is the last stdout line. `db`: a SQLite file or a
    URL. `another`: the agent has a token already."""
    argv = ["token", "add", agent, "--role", role, "--db", str(db)]
    out = cli(argv + (["--another"] if another else []), home or home_of(db))
    return out.strip().splitlines()[-1]


def token_revoke(db: Path | str, agent: str, home: Path | None = None) -> None:
    cli(["token", "revoke", agent, "--db", str(db)], home or home_of(db))


@dataclass
class TeamServer:
    transport: str
    base: str  # http://127.0.0.1:PORT
    db: Path | str  # a SQLite file or a PostgreSQL URL
    process: subprocess.Popen[bytes]
    tmp: Path  # the server's HOME, logs
    port: int = 0
    args: tuple[str, ...] = ()  # what followed `--port`, for `restart`
    env: dict[str, str] | None = None  # `start`'s env, for `restart`

    @property
    def log(self) -> str:
        """What the server wrote on stderr so far."""
        return (self.tmp / f"server-{self.port}.log").read_text(errors="replace")

    @property
    def url(self) -> str:
        return f"{self.base}/sse" if self.transport == "sse" else f"{self.base}/mcp"

    def health(self) -> httpx2.Response:
        return httpx2.get(f"{self.base}/healthz", timeout=10)

    def wait_healthy(self, deadline_seconds: float = START_DEADLINE_SECONDS) -> dict[str, Any]:
        """Poll /healthz until store and model are up (the model loads in the background)."""
        deadline = time.monotonic() + deadline_seconds
        with httpx2.Client(timeout=10) as http:  # one for all the polls: see `start`
            while True:
                body: dict[str, Any] = http.get(f"{self.base}/healthz").json()
                if body.get("model") == "up" or time.monotonic() > deadline:
                    return body
                time.sleep(0.2)

    @asynccontextmanager
    async def client(self, token: str) -> AsyncIterator[Client]:
        """One connection (one MCP session). Legacy mode: the initialize handshake and a
        session, as Claude Code and Claude Desktop connect today."""
        headers = {"Authorization": f"Bearer {token}"}
        if self.transport == "sse":
            transport = sse_client(self.url, headers=headers, timeout=60)
            async with Client(transport, mode="legacy", read_timeout_seconds=120) as client:
                yield client
            return
        async with create_mcp_http_client(headers=headers) as http:  # ours to close
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, mode="legacy", read_timeout_seconds=120) as client:
                yield client


def _listening(http: httpx2.Client, base: str) -> bool:
    try:
        http.get(f"{base}/healthz", timeout=5)
    except httpx2.TransportError:
        return False
    return True


def start(
    tmp: Path, transport: str, db: Path | str, *args: str, env: dict[str, str] | None = None
) -> TeamServer:
    """`env`: the server's whole environment instead of server_env(tmp)."""
    port = free_port()
    with (tmp / f"server-{port}.log").open("wb") as log:  # the child keeps its own copy
        process = subprocess.Popen(
            [EXE, "serve", "--transport", transport, "--db", str(db), "--port", str(port), *args],
            env=server_env(tmp) if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    server = TeamServer(transport, base, db, process, tmp, port, tuple(args), env)
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    # One client for every poll: a client made per request (httpx2.get) sets up its TLS
    # context each time, ~20 ms of CPU, and a busy machine polls ~25 times per start.
    with httpx2.Client() as http:
        while not _listening(http, server.base):
            if process.poll() is not None:
                where = f"{tmp}/server-{port}.log"
                raise RuntimeError(f"server exited {process.returncode}: see {where}")
            if time.monotonic() > deadline:
                stop(server)
                raise RuntimeError("server did not listen in time")
            time.sleep(0.2)
    return server


def stop(server: TeamServer) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=30)


def restart(server: TeamServer) -> None:
    """Stop `server`'s process and start a new one on the same store with the same
    arguments; `server` names the new process from then on (another port), so a fixture
    that yielded it goes on with it and stops it at the end."""
    stop(server)
    new = start(server.tmp, server.transport, server.db, *server.args, env=server.env)
    server.process, server.base, server.port = new.process, new.base, new.port


@contextmanager
def running(
    tmp: Path, transport: str, db: Path | str, *args: str, env: dict[str, str] | None = None
) -> Iterator[TeamServer]:
    server = start(tmp, transport, db, *args, env=env)
    try:
        yield server
    finally:
        stop(server)
