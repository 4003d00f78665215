"""`python -m bench stress`: several real `memory-mcp serve` processes on one SQLite file,
each with concurrent writers and readers, the way a lead and its workers load a store.

Every process is spawned over stdio exactly as a client runs it (real model included).
After the writers finish, the file is opened directly to count acknowledged writes that
are missing and to run SQLite's and FTS5's integrity checks. A final burst sends many
searches at once to one process and times each answer from the moment all were sent:
with fair (first-in, first-out) queueing the early ones finish early."""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.settings import server_env
from bench.stats import percentile_ms

WORDS = (
    "harbor lantern quartz meadow falcon copper violet glacier orchard tundra ember cobalt "
    "saffron willow basalt heron juniper marble nectar onyx pepper quill raven sierra"
).split()
CALL_TIMEOUT_SECONDS = 300.0


@dataclass
class StressConfig:
    workdir: Path
    processes: int = 8
    writers: int = 8  # concurrent store_memory callers per process
    readers: int = 2  # concurrent memory-search / memory-get callers per process
    # 0: the readers read flat out until their process's writers are done. N: each reader
    # reads once at the start, then once per N stores its process has acknowledged (a
    # count, not a rate: the same reads however slow the machine, still among the writes).
    read_every: int = 0
    stores: int = 25  # store_memory calls per writer
    burst: int = 200  # concurrent searches sent at once to one process at the end
    warm_up: bool = True  # wait for every process's model before writing
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class CallLog:
    seconds: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    def summary(self) -> dict[str, Any]:
        return {
            "ok": len(self.seconds),
            "failed": self.failed,
            "p50_ms": round(percentile_ms(self.seconds, 50), 1),
            "p99_ms": round(percentile_ms(self.seconds, 99), 1),
            "max_ms": round(max(self.seconds, default=0.0) * 1000, 1),
            "errors": dict(self.errors.most_common(5)),
        }


@dataclass
class StressReport:
    config: StressConfig
    stores: CallLog = field(default_factory=CallLog)
    reads: CallLog = field(default_factory=CallLog)
    burst: CallLog = field(default_factory=CallLog)
    acknowledged: list[tuple[str, str, str]] = field(default_factory=list)  # agent, key, value
    # Stores answered `similar_checked: false`: written while their process's model was
    # still loading (warm_up=False), so the writes overlapped the model loads.
    before_model: int = 0
    # Per process, when its first and its last store were acknowledged (perf_counter).
    write_windows: list[tuple[float, float]] = field(default_factory=list)
    missing: int = 0
    integrity: str = ""
    fts_integrity: str = ""
    tracebacks: int = 0
    locked_lines: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        c = self.config
        return {
            "benchmark": "stress",
            "processes": c.processes,
            "writers": c.writers,
            "readers": c.readers,
            "stores_per_writer": c.stores,
            "burst": c.burst,
            "stores": self.stores.summary(),
            "acknowledged": len(self.acknowledged),
            "stored_before_model_loaded": self.before_model,
            "missing": self.missing,
            "reads": self.reads.summary(),
            "burst_searches": self.burst.summary(),
            "integrity_check": self.integrity,
            "fts_integrity_check": self.fts_integrity,
            "tracebacks_in_stderr": self.tracebacks,
            "database_is_locked_in_stderr": self.locked_lines,
            "seconds": round(self.seconds, 1),
        }

    def render(self) -> str:
        c = self.config
        s, r, b = self.stores.summary(), self.reads.summary(), self.burst.summary()
        lines = [
            f"{c.processes} processes x {c.writers} concurrent writers x {c.stores} stores, "
            f"{c.readers} concurrent readers each, one SQLite file ({self.seconds:.0f} s)",
            f"stores:  {c.processes * c.writers * c.stores} sent, {len(self.acknowledged)} "
            f"acknowledged ({self.before_model} before their model had loaded), "
            f"{s['failed']} failed, {self.missing} acknowledged but missing; "
            f"latency p50 {s['p50_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms, max {s['max_ms']:.0f} ms",
            f"reads:   {r['ok']} answered, {r['failed']} failed; "
            f"latency p50 {r['p50_ms']:.0f} ms, p99 {r['p99_ms']:.0f} ms",
            f"burst:   {c.burst} searches at once to one process: {b['ok']} answered, "
            f"{b['failed']} failed; answered after p50 {b['p50_ms']:.0f} ms, "
            f"p99 {b['p99_ms']:.0f} ms",
            f"file:    integrity_check {self.integrity}; FTS5 integrity-check {self.fts_integrity}",
            f"stderr:  {self.tracebacks} tracebacks, {self.locked_lines} 'database is locked'",
        ]
        for name, log in (("store", self.stores), ("read", self.reads), ("burst", self.burst)):
            for message, count in log.errors.most_common(3):
                lines.append(f"  {name} error x{count}: {message[:160]}")
        return "\n".join(lines)


def _server_env(config: StressConfig) -> dict[str, str]:
    return {**server_env(config.workdir), **config.env}


@asynccontextmanager
async def _server(config: StressConfig, index: int, errlog: TextIO) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "memory_mcp.cli",
            "serve",
            "--db",
            str(config.workdir / "stress.db"),
            "--agent-id",
            f"stress-{index}",
        ],
        env=_server_env(config),
    )
    async with Client(
        stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_SECONDS
    ) as client:
        yield client


async def _timed(client: Client, log: CallLog, tool: str, arguments: dict[str, Any]) -> Any:
    started = time.perf_counter()
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as exc:  # a timeout or a broken pipe counts as a failed call
        log.errors[f"{type(exc).__name__}: {exc}"] += 1
        return None
    if result.is_error:
        text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
        log.errors[text or "(no text)"] += 1
        return None
    log.seconds.append(time.perf_counter() - started)
    return result.structured_content


async def _wait_for_model(client: Client, deadline: float) -> None:
    while time.monotonic() < deadline:
        result = await client.call_tool("memory-search", {"query": "warm up"})
        data = result.structured_content or {}
        if not result.is_error and data.get("semantic", not data.get("notices")):
            return
        await anyio.sleep(1.0)
    raise TimeoutError("the embedding model did not load in time")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(12))


async def _load_one(client: Client, index: int, config: StressConfig, report: StressReport) -> None:
    ids: list[int] = []
    acked: list[float] = []
    stored = anyio.Event()  # set (and replaced) at each acknowledged store
    writing = True

    async def writer(w: int) -> None:
        nonlocal stored
        rng = random.Random(index * 1000 + w)
        for k in range(config.stores):
            key = f"p{index}-w{w}-{k}"
            value = f"{key}: {_sentence(rng)}"
            out = await _timed(
                client,
                report.stores,
                "memory-store",
                {"key": key, "value": value, "tags": ["stress"]},
            )
            if out is not None:
                report.acknowledged.append((f"stress-{index}", key, value))
                report.before_model += not out.get("similar_checked", True)
                acked.append(time.perf_counter())
                ids.append(int(out["id"]))
                stored.set()
                stored = anyio.Event()

    async def next_turn(reads: int) -> bool:
        """Whether the reader reads again: at once when flat out, else once its process
        has acknowledged `reads * read_every` stores; never once the writers are done."""
        if config.read_every:
            while writing and len(acked) < reads * config.read_every:
                await stored.wait()
        return writing

    async def reader(r: int) -> None:
        rng = random.Random(-(index * 1000 + r))
        reads = 0
        while await next_turn(reads):  # until the writers are done
            reads += 1
            if ids and rng.random() < 0.5:
                await _timed(client, report.reads, "memory-get", {"id": rng.choice(ids)})
            else:
                await _timed(
                    client,
                    report.reads,
                    "memory-search",
                    {"query": " ".join(rng.sample(WORDS, 2)), "limit": 5},
                )

    async with anyio.create_task_group() as readers:
        for r in range(config.readers):
            readers.start_soon(reader, r)
        async with anyio.create_task_group() as writers:
            for w in range(config.writers):
                writers.start_soon(writer, w)
        writing = False
        stored.set()  # paced readers end after the read in hand
        if not config.read_every:
            readers.cancel_scope.cancel()
    if acked:
        report.write_windows.append((acked[0], acked[-1]))


async def _burst(client: Client, size: int, log: CallLog) -> None:
    """Send `size` searches at once; each latency counts from the common start."""
    started = time.perf_counter()

    async def one(i: int) -> None:
        try:
            result = await client.call_tool(
                "memory-search", {"query": f"{WORDS[i % len(WORDS)]} harbor", "limit": 5}
            )
        except Exception as exc:
            log.errors[f"{type(exc).__name__}: {exc}"] += 1
            return
        if result.is_error:
            log.errors[result.content[0].text] += 1  # type: ignore[union-attr]
        else:
            log.seconds.append(time.perf_counter() - started)

    async with anyio.create_task_group() as tasks:
        for i in range(size):
            tasks.start_soon(one, i)


def _check_file(db: Path, report: StressReport) -> None:
    conn = sqlite3.connect(db, timeout=60)
    try:
        present = {
            (agent, key): value
            for agent, key, value in conn.execute("SELECT agent_id, key, value FROM memories")
        }
        report.missing = sum(
            1 for agent, key, value in report.acknowledged if present.get((agent, key)) != value
        )
        report.integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        try:
            conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
            report.fts_integrity = "ok"
        except sqlite3.DatabaseError as exc:
            report.fts_integrity = f"FAILED: {exc}"
    finally:
        conn.close()


async def run_stress(config: StressConfig, progress: Callable[[str], None]) -> StressReport:
    config.workdir.mkdir(parents=True, exist_ok=True)
    for stale in config.workdir.glob("stress.db*"):
        stale.unlink()
    report = StressReport(config)
    logs = [(config.workdir / f"server-{i}.stderr.log").open("w") for i in range(config.processes)]
    started = time.perf_counter()
    try:
        async with AsyncExitStack() as stack:
            clients = []
            for i in range(config.processes):
                clients.append(await stack.enter_async_context(_server(config, i, logs[i])))
            progress(f"{config.processes} servers answered the handshake")
            if config.warm_up:
                deadline = time.monotonic() + 600
                async with anyio.create_task_group() as tasks:
                    for client in clients:
                        tasks.start_soon(_wait_for_model, client, deadline)
                progress("every server has its embedding model")
            started = time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for i, client in enumerate(clients):
                    tasks.start_soon(_load_one, client, i, config, report)
            progress(f"writers done: {len(report.acknowledged)} stores acknowledged")
            if config.burst:
                await _burst(clients[0], config.burst, report.burst)
                progress(f"burst of {config.burst} searches done")
            report.seconds = time.perf_counter() - started
    finally:
        for handle in logs:
            handle.close()
    _check_file(config.workdir / "stress.db", report)
    for i in range(config.processes):
        text = (config.workdir / f"server-{i}.stderr.log").read_text(errors="replace")
        report.tracebacks += text.count("Traceback (most recent call last)")
        report.locked_lines += text.count("database is locked")
    return report
