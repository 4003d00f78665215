"""The team server under load: 16 concurrent HTTP clients x 200 mixed operations against
one real `memory-mcp serve --transport streamable-http|sse` process, then `kill -9` of a
server in the middle of a write burst. Numbers on stdout (a benchmark, not a test):

- load: errors, lost writes (every acknowledged write read back afterwards, by its
  writer, value compared), p50/p95 per tool;
- kill: acknowledged writes before the kill, how many of them are missing after a
  restart, and SQLite's integrity checks (a PostgreSQL store: counted through the server).

    python -m bench.team_load [--db URL] [--clients 16] [--ops 200] [--transport sse]
    python -m bench team ...   (the same, from a clone)

`--db` takes anything `memory-mcp serve --db` takes (a PostgreSQL URL included); default
a fresh SQLite file under --workdir."""

from __future__ import annotations

import argparse
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import numpy as np
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CALL_TIMEOUT_SECONDS = 120
START_DEADLINE_SECONDS = 180
WORDS = (
    "deploy staging database migration cache index token schema query latency worker lead "
    "review branch merge rollback config secret-free build test flaky retry queue"
).split()


@dataclass
class Options:
    db: str | None
    workdir: Path
    clients: int = 16
    ops: int = 200
    transport: str = "streamable-http"
    kill_after: int = 300  # acknowledged writes in the burst before the kill

    @property
    def db_arg(self) -> str:
        return self.db or str(self.workdir / "team.db")

    @property
    def sqlite_file(self) -> Path | None:
        if self.db is None:
            return self.workdir / "team.db"
        return None if "://" in self.db else Path(self.db)


@dataclass
class Tally:
    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    # memory id -> (writer index, value) for every write the server acknowledged
    acknowledged: dict[int, tuple[int, str]] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)


def _env(options: Options) -> dict[str, str]:
    return {
        **os.environ,
        "XDG_DATA_HOME": str(options.workdir / "xdg"),
        "MEMORY_MCP_MEMORY_DIR": str(options.workdir / "notes"),
        "MEMORY_MCP_WATCH": "false",
        "HF_HUB_OFFLINE": "1",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def make_tokens(options: Options) -> list[str]:
    """One agent per client (the first a lead), through the real CLI's code path."""
    from memory_mcp.app.root import open_app
    from memory_mcp.settings import Settings

    settings = Settings(db=options.db_arg, data_dir=options.workdir / "data", watch=False)

    async def issue() -> list[str]:
        async with open_app(settings, background=False) as app:
            return [
                await app.tokens.issue(f"agent-{i}", "lead" if i == 0 else "worker")
                for i in range(options.clients)
            ]

    return anyio.run(issue)


class Server:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        log = (options.workdir / "server.log").open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_mcp.cli", "serve", "--transport", options.transport]
            + ["--db", options.db_arg, "--port", str(self.port)],
            env=_env(options),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()

    @property
    def url(self) -> str:
        return f"{self.base}/sse" if self.options.transport == "sse" else f"{self.base}/mcp"

    def wait_ready(self) -> float:
        """Seconds until /healthz says store and model are up."""
        started = time.monotonic()
        while time.monotonic() - started < START_DEADLINE_SECONDS:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}); see log")
            try:
                if httpx2.get(f"{self.base}/healthz", timeout=5).status_code == 200:
                    return time.monotonic() - started
            except httpx2.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the server was not ready in time")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)

    @asynccontextmanager
    async def client(self, token: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with AsyncExitStack() as stack:
            if self.options.transport == "sse":
                transport: Any = sse_client(self.url, headers=headers, timeout=60)
            else:
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                transport = streamable_http_client(self.url, http_client=http)
            yield await stack.enter_async_context(
                Client(transport, mode="legacy", read_timeout_seconds=CALL_TIMEOUT_SECONDS)
            )


async def timed(client: Client, tally: Tally, tool: str, arguments: dict[str, Any]) -> Any:
    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as exc:  # a benchmark's top level: a broken call is counted, not fatal
        tally.errors[f"{tool}: {type(exc).__name__}: {exc}"[:200]] += 1
        return None
    if result.is_error:
        text = result.content[0].text if result.content else "(no text)"  # type: ignore[union-attr]
        tally.errors[f"{tool}: {text}"[:200]] += 1
        return None
    tally.seconds[tool].append(time.perf_counter() - started)
    return result.structured_content


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12))


async def one_client(server: Server, index: int, token: str, ops: int, tally: Tally) -> None:
    rng = random.Random(index)
    mine: list[int] = []
    async with server.client(token) as client:
        for op in range(ops):
            roll = rng.random()
            if roll < 0.40 or not mine:
                value = f"{sentence(rng)} #{index}-{op}"
                scope = "swarm" if rng.random() < 0.3 else "agent"
                args = {"key": f"c{index}-k{op}", "value": value, "scope": scope}
                stored = await timed(client, tally, "store_memory", args)
                if stored is not None:
                    tally.acknowledged[stored["id"]] = (index, value)
                    mine.append(stored["id"])
            elif roll < 0.70:
                await timed(client, tally, "memory-search", {"query": sentence(rng)[:60]})
            elif roll < 0.90:
                await timed(client, tally, "memory-get", {"id": rng.choice(mine)})
            elif roll < 0.95 and len(mine) > 1:
                victim = mine.pop(rng.randrange(len(mine)))
                if await timed(client, tally, "memory-delete", {"id": victim}) is not None:
                    tally.deleted.add(victim)
            elif index == 0:
                learning = f"{sentence(rng)} (learning {op})"
                args = {"learning": learning, "category": "best-practice"}
                await timed(client, tally, "inject-learning", args)
            else:
                await timed(client, tally, "memory-search", {"query": rng.choice(WORDS)})


async def lost_writes(server: Server, tokens: list[str], tally: Tally) -> int:
    """Every acknowledged, undeleted write read back by its writer, value compared."""
    by_writer: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for memory_id, (writer, value) in tally.acknowledged.items():
        if memory_id not in tally.deleted:
            by_writer[writer].append((memory_id, value))
    missing = 0
    for writer, memories in by_writer.items():
        async with server.client(tokens[writer]) as client:
            for memory_id, value in memories:
                result = await client.call_tool("memory-get", {"id": memory_id})
                data = result.structured_content or {}
                if result.is_error or data.get("value") != value:
                    missing += 1
    return missing


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q) * 1000) if values else 0.0


async def load_phase(options: Options, tokens: list[str]) -> None:
    server = Server(options)
    try:
        ready = server.wait_ready()
        print(f"server ready (store and model up) in {ready:.1f} s", file=sys.stderr)
        tally = Tally()
        started = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for index, token in enumerate(tokens):
                tasks.start_soon(one_client, server, index, token, options.ops, tally)
        elapsed = time.perf_counter() - started
        missing = await lost_writes(server, tokens, tally)
    finally:
        server.stop()
    calls = sum(len(v) for v in tally.seconds.values())
    print(
        f"\n## load: {options.clients} clients x {options.ops} operations over "
        f"{options.transport}, store {options.db_arg}"
    )
    print(
        f"calls ok {calls}, errors {sum(tally.errors.values())}, in {elapsed:.1f} s "
        f"({calls / elapsed:.0f} calls/s)"
    )
    print(
        f"acknowledged writes {len(tally.acknowledged)}, deleted {len(tally.deleted)}, "
        f"lost {missing}"
    )
    print(f"{'tool':<16}{'calls':>7}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for tool, seconds in sorted(tally.seconds.items()):
        print(
            f"{tool:<16}{len(seconds):>7}{pct(seconds, 50):>10.1f}{pct(seconds, 95):>10.1f}"
            f"{pct(seconds, 99):>10.1f}"
        )
    for error, count in tally.errors.most_common(5):
        print(f"error x{count}: {error}")


async def kill_phase(options: Options, tokens: list[str]) -> None:
    """Writers hammer the server; once `kill_after` writes are acknowledged, SIGKILL."""
    server = Server(options)
    tally = Tally()
    server.wait_ready()
    enough = anyio.Event()

    async def writer(index: int) -> None:
        rng = random.Random(1000 + index)
        async with server.client(tokens[index]) as client:
            for op in range(10_000):
                value = f"{sentence(rng)} burst #{index}-{op}"
                args = {"key": f"burst-c{index}-{op}", "value": value}
                stored = await timed(client, tally, "store_memory", args)
                if stored is None:
                    return  # the server is gone
                tally.acknowledged[stored["id"]] = (index, value)
                if len(tally.acknowledged) >= options.kill_after:
                    enough.set()

    with anyio.move_on_after(600):
        async with anyio.create_task_group() as tasks:
            for index in range(len(tokens)):
                tasks.start_soon(writer, index)
            await enough.wait()
            server.kill()  # mid-burst: other writes are in flight right now
            tasks.cancel_scope.cancel()
    acknowledged = len(tally.acknowledged)
    integrity = fts = "n/a (not SQLite)"
    path = options.sqlite_file
    if path is not None:
        conn = sqlite3.connect(path, timeout=60)
        try:
            integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
            try:
                conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
                fts = "ok"
            except sqlite3.DatabaseError as exc:
                fts = f"FAILED: {exc}"
        finally:
            conn.close()
    restarted = Server(options)
    try:
        restarted.wait_ready()
        missing = await lost_writes(restarted, tokens, tally)
    finally:
        restarted.stop()
    print(f"\n## kill -9 mid write burst ({options.clients} writers, {options.transport})")
    print(f"acknowledged before the kill {acknowledged}, missing after restart {missing}")
    print(f"integrity_check {integrity}; fts5 integrity-check {fts}")


def run(options: Options) -> int:
    options.workdir.mkdir(parents=True, exist_ok=True)
    if options.sqlite_file is not None and options.db is None:
        for old in options.workdir.glob("team.db*"):
            old.unlink()
    tokens = make_tokens(options)
    anyio.run(load_phase, options, tokens)
    anyio.run(kill_phase, options, tokens)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="store for the server (default: a new SQLite file)")
    parser.add_argument("--workdir", type=Path, default=Path("bench/results/team"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--ops", type=int, default=200, help="operations per client")
    parser.add_argument(
        "--transport", choices=["streamable-http", "sse"], default="streamable-http"
    )
    parser.add_argument("--kill-after", type=int, default=300, help="acknowledged writes")


def options_from(args: argparse.Namespace) -> Options:
    return Options(args.db, args.workdir, args.clients, args.ops, args.transport, args.kill_after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.team_load", description=__doc__)
    add_arguments(parser)
    return run(options_from(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
