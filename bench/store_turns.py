"""`python -m bench store DIR`: what one `store_memory` costs an agent that stores after
every step, beside what a search costs.

Over stdio (the number an agent sees): a real `memory-mcp serve` on a new SQLite file with
the default settings (synchronous=FULL: a store is on disk before it is acknowledged) and
the model loaded; every turn of one LoCoMo conversation stored by one `store_memory` call,
in order (key = its dia_id, value = "{speaker}: {text}"), then `--searches` of its
questions by `memory-search` (limit 10). Prints store and search p50/p95, and how many
stores came back with the near-duplicate hint checked and with a similar memory named.

The parts (where a store's time goes): the same turns stored in this process through the
same code the tool runs (`MemoryService.store_memory`, then `similar_to`), on a new file
with the same settings, each part timed by wrapping the component that does it: the
checks (`_memory_of`: sizes, secrets, flags), the model (each of the embedder's
calls: a memory's whole text, its passages; the background worker's calls count too) and
the model per store (`embed_whole`: the whole text, what the answer waits for), the
memory's write transaction (`store.upsert`, its commit's fsync included), the vector's
(`rows.save`), the reads of stored vectors (`rows.has`, `rows.vector`), the vector
index's catch-up with the store
(beside the model, and the check's own), and the near-duplicate check (`similar_to`; the
tool's path, `store_and_check`, runs it beside the vector's save).
Parts that run at the same time add up to more than the whole. One fsync of 4 KB in the
store's folder is timed alone, for scale. The conversation is the only data: nothing is
synthetic."""

from __future__ import annotations

import inspect
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.locomo import Conversation
from bench.settings import server_env, store_settings
from bench.startup import machine, spawn_server
from bench.stats import p50_p95_ms, percentile_ms, table
from memory_mcp.app.root import open_app
from memory_mcp.models import StoreRequest
from memory_mcp.semantic import vectors as vectors_module

GIVE_UP_SECONDS = 300.0
FSYNC_PROBES = 30
# The parts printed, in this order (see the module docstring for what each one wraps).
PARTS = (
    "checks",
    "model",
    "model per store",
    "memory write",
    "vector write",
    "vector read",
    "index catch-up",
    "similar check",
)


@dataclass
class StoreRun:
    conversation: str
    turns: int
    store_seconds: list[float] = field(default_factory=list)  # over stdio, one per turn
    search_seconds: list[float] = field(default_factory=list)
    # The server's CPU time (every thread, both cores) over all its stores / searches: what
    # a call costs whatever the load, and so a floor for its time on an idle machine.
    store_cpu_seconds: float = 0.0
    search_cpu_seconds: float = 0.0
    in_process_cpu_seconds: float = 0.0  # this process's, over the same stores in process
    similar_checked: int = 0  # stores whose near-duplicate check ran
    similar_named: int = 0  # stores that named at least one similar memory
    parts: dict[str, list[float]] = field(default_factory=dict)  # in process
    in_process_seconds: list[float] = field(default_factory=list)
    fsync_seconds: list[float] = field(default_factory=list)
    load: tuple[float, float, float] = field(default_factory=os.getloadavg)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def summary(self) -> dict[str, Any]:
        return {
            "benchmark": "store",
            "machine": machine(),
            "load_average": [round(x, 2) for x in self.load],
            "load_average_after": [round(x, 2) for x in self.load_after],
            "conversation": self.conversation,
            "turns": self.turns,
            "store_ms": p50_p95_ms(self.store_seconds),
            "search_ms": p50_p95_ms(self.search_seconds),
            "server_cpu_ms_per_store": round(
                self.store_cpu_seconds * 1000 / max(1, len(self.store_seconds)), 2
            ),
            "server_cpu_ms_per_search": round(
                self.search_cpu_seconds * 1000 / max(1, len(self.search_seconds)), 2
            ),
            "stores_per_second": round(len(self.store_seconds) / sum(self.store_seconds), 1)
            if self.store_seconds
            else 0.0,
            "similar_checked": self.similar_checked,
            "similar_named": self.similar_named,
            "in_process_store_ms": p50_p95_ms(self.in_process_seconds),
            "in_process_cpu_ms_per_store": round(
                self.in_process_cpu_seconds * 1000 / max(1, len(self.in_process_seconds)), 2
            ),
            "parts_ms_p50": {
                name: round(percentile_ms(values, 50), 2) for name, values in self.parts.items()
            },
            "fsync_ms": p50_p95_ms(self.fsync_seconds),
        }

    def render(self) -> str:
        s = self.summary()
        over_stdio = table(
            ["over stdio", "calls", "p50 ms", "p95 ms", "server CPU ms/call"],
            [
                [
                    "store_memory",
                    len(self.store_seconds),
                    *s["store_ms"].values(),
                    s["server_cpu_ms_per_store"],
                ],
                [
                    "memory-search",
                    len(self.search_seconds),
                    *s["search_ms"].values(),
                    s["server_cpu_ms_per_search"],
                ],
            ],
        )
        parts = table(
            ["a store's parts (in process)", "p50 ms", "calls"],
            [
                ["whole store_and_check", s["in_process_store_ms"]["p50"], self.turns],
                ["  CPU per store, every thread", s["in_process_cpu_ms_per_store"], self.turns],
                *[
                    [f"  {name}", s["parts_ms_p50"][name], len(self.parts[name])]
                    for name in PARTS
                    if name in self.parts
                ],
                ["one fsync of 4 KB (alone)", s["fsync_ms"]["p50"], len(self.fsync_seconds)],
            ],
        )
        return "\n".join(
            [
                f"LoCoMo conversation {self.conversation}: {self.turns} turns stored one "
                f"store_memory call each, in order, then {len(self.search_seconds)} searches",
                f"machine: {s['machine']}",
                f"load average {s['load_average']} at start, {s['load_average_after']} at end",
                "",
                over_stdio,
                f"stores/s {s['stores_per_second']}; near-duplicate check ran on "
                f"{self.similar_checked} of {len(self.store_seconds)} stores, named a "
                f"similar memory on {self.similar_named}",
                "",
                parts,
                "(parts that run at the same time add up to more than the whole)",
            ]
        )


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _call(proc: subprocess.Popen[str], request_id: int, tool: str, arguments: Any) -> Any:
    assert proc.stdin is not None and proc.stdout is not None
    _send(
        proc.stdin,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
    )
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        message = json.loads(line)
        if message.get("id") == request_id:
            result = message["result"]
            if result.get("isError"):
                raise RuntimeError(f"{tool} failed: {result['content']}")
            return result["structuredContent"]


def over_stdio(exe: str, conversation: Conversation, searches: int, run: StoreRun) -> None:
    """The turns stored and the questions searched through a spawned server."""
    with tempfile.TemporaryDirectory(prefix="bench-store-") as scratch:
        db, env = Path(scratch) / "memory.db", server_env(Path(scratch) / "scratch")
        with spawn_server(exe, db, env) as proc:
            try:
                _drive(proc, conversation, searches, run)
            finally:
                proc.kill()


def passage_modes_over_stdio(
    exe: str, conversation: Conversation, turns: int | None = None
) -> dict[str, StoreRun]:
    """The turns stored through two servers at once, one per Settings.passage_vectors
    ("before-answer": today's store waits for the passages' vectors; "after-answer"), each
    turn to both in alternating order, so both meet the same load. Before each call both
    servers are idle (their CPU time has stopped moving: an agent's think time between
    two stores), so neither's background work lands on the other's store. Store p50/p95
    and the near-duplicate hint's rate, per mode."""
    modes = ("before-answer", "after-answer")
    runs = {mode: StoreRun(conversation=conversation.name, turns=0) for mode in modes}
    chosen = conversation.turns[:turns] if turns else conversation.turns
    with tempfile.TemporaryDirectory(prefix="bench-store-pair-") as scratch:
        procs = {}
        try:
            for mode in modes:
                folder = Path(scratch) / mode
                env = server_env(folder / "scratch", passage_vectors=mode)
                procs[mode] = spawn_server(exe, folder / "memory.db", env)
            ids = {mode: _ready(proc) for mode, proc in procs.items()}
            for n, turn in enumerate(chosen):
                order = modes if n % 2 == 0 else modes[::-1]
                for mode in order:
                    _settle(procs.values())
                    ids[mode] += 1
                    arguments = {"key": turn.key, "value": turn.value}
                    began = time.perf_counter()
                    stored = _call(procs[mode], ids[mode], "store_memory", arguments)
                    run = runs[mode]
                    run.store_seconds.append(time.perf_counter() - began)
                    run.turns += 1
                    run.similar_checked += bool(stored.get("similar_checked", True))
                    run.similar_named += bool(stored.get("similar"))
        finally:
            for proc in procs.values():
                proc.kill()
    for run in runs.values():
        run.load_after = os.getloadavg()
    return runs


def _ready(proc: subprocess.Popen[str]) -> int:
    """The handshake, then searches until the model has loaded: the last request id."""
    assert proc.stdin is not None
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench-store", "version": "0"},
    }
    _send(proc.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
    _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    request_id = 1
    started = time.perf_counter()
    while True:
        request_id += 1
        if _call(proc, request_id, "memory-search", {"query": "warm up"}).get("semantic"):
            return request_id
        if time.perf_counter() - started > GIVE_UP_SECONDS:
            raise RuntimeError("the model never loaded")
        time.sleep(0.2)


def _settle(procs: Iterable[subprocess.Popen[str]], most: float = 2.0) -> None:
    """Wait (at most `most` seconds) until no process used CPU over 20 ms."""
    deadline = time.perf_counter() + most
    before = [_cpu_seconds(p.pid) for p in procs]
    while time.perf_counter() < deadline:
        time.sleep(0.02)
        now = [_cpu_seconds(p.pid) for p in procs]
        if now == before:
            return
        before = now


def _drive(
    proc: subprocess.Popen[str], conversation: Conversation, searches: int, run: StoreRun
) -> None:
    """The handshake, the model loaded (a store embeds at once, as in steady use), then
    the stores and the searches, timed."""
    request_id = _ready(proc)
    cpu = _cpu_seconds(proc.pid)
    for turn in conversation.turns:
        request_id += 1
        began = time.perf_counter()
        stored = _call(proc, request_id, "store_memory", {"key": turn.key, "value": turn.value})
        run.store_seconds.append(time.perf_counter() - began)
        run.similar_checked += bool(stored.get("similar_checked", True))
        run.similar_named += bool(stored.get("similar"))
    run.store_cpu_seconds, cpu = _cpu_seconds(proc.pid) - cpu, _cpu_seconds(proc.pid)
    questions = conversation.questions
    for i in range(min(searches, len(questions)) if questions else 0):
        request_id += 1
        began = time.perf_counter()
        _call(proc, request_id, "memory-search", {"query": questions[i].text})
        run.search_seconds.append(time.perf_counter() - began)
    run.search_cpu_seconds = _cpu_seconds(proc.pid) - cpu


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, all its threads (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _time_calls(parts: dict[str, list[float]], part: str, owner: object, name: str) -> None:
    """Replace `owner.name` (a method, sync or async) by one that adds its time to `part`."""
    method = getattr(owner, name)

    async def timed_async(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return await method(*args, **kwargs)
        finally:
            parts.setdefault(part, []).append(time.perf_counter() - began)

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            parts.setdefault(part, []).append(time.perf_counter() - began)

    setattr(owner, name, timed_async if inspect.iscoroutinefunction(method) else timed)


async def in_process(conversation: Conversation, run: StoreRun) -> None:
    """The same stores through MemoryService in this process, each part timed. The
    background embedding worker runs as in a server: its model calls count too."""
    with tempfile.TemporaryDirectory(prefix="bench-store-parts-") as scratch:
        directory = Path(scratch)
        run.fsync_seconds = fsync_probe(directory)
        async with open_app(store_settings(directory, watch=False)) as app:
            service = app.service
            await service.embedder.wait_ready()
            parts, rows = run.parts, service.vectors.rows
            _time_calls(parts, "checks", service, "_memory_of")
            _time_calls(parts, "model", service.vectors.embedder, "embed")
            # A store's vector: its whole text (what the answer waits for, vectors.py); its
            # passages follow in the background worker (counted in "model").
            _time_calls(parts, "model per store", vectors_module, "embed_whole")
            _time_calls(parts, "memory write", service.store, "upsert")
            _time_calls(parts, "vector write", rows, "save")
            for read in ("has", "vector"):
                if hasattr(rows, read):
                    _time_calls(parts, "vector read", rows, read)
            _time_calls(parts, "similar check", service.gate, "similar_to")
            _time_calls(parts, "index catch-up", service.vectors.search, "catch_up")
            cpu = time.process_time()
            for turn in conversation.turns:
                began = time.perf_counter()
                await service.store_and_check(
                    app.caller, StoreRequest(key=turn.key, value=turn.value)
                )
                run.in_process_seconds.append(time.perf_counter() - began)
            run.in_process_cpu_seconds = time.process_time() - cpu


def fsync_probe(directory: Path) -> list[float]:
    """Seconds of one fsync of a freshly written 4 KB page, FSYNC_PROBES times."""
    path = directory / "fsync-probe"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    seconds = []
    try:
        for i in range(FSYNC_PROBES):
            os.pwrite(fd, os.urandom(4096), i * 4096)
            began = time.perf_counter()
            os.fsync(fd)
            seconds.append(time.perf_counter() - began)
    finally:
        os.close(fd)
        path.unlink()
    return seconds


async def run_store(
    exe: str, conversation: Conversation, searches: int, say: Callable[[str], None]
) -> StoreRun:
    run = StoreRun(conversation=conversation.name, turns=len(conversation.turns))
    say(f"over stdio: {run.turns} stores, then searches ({exe})")
    import anyio.to_thread

    await anyio.to_thread.run_sync(over_stdio, exe, conversation, searches, run)
    say("in process: the same stores, each part timed")
    await in_process(conversation, run)
    run.load_after = os.getloadavg()
    say(f"store p50 over stdio {statistics.median(run.store_seconds) * 1000:.1f} ms")
    return run
