"""`python -m bench startup`: what a new session pays before it has a working memory.

Each run spawns `memory-mcp serve` over stdio, as Claude Desktop does, on a store of 2,000
embedded memories, and times spawn → `initialize` answered and spawn → the first search
that finds a memory by meaning alone (a paraphrase sharing no word with it; searched again
until it is found). Then the server's peak RSS (VmHWM). The floor for `initialize` is
a bare `python -c "import mcp.server.mcpserver"` in the same environment. Besides: the
query-embedding p50 of the runtime in this process, and search p50/p95 at 10k memories
(the `bench latency` harness).

The 1,999 filler memories carry synthetic vectors (as `bench latency` builds its stores;
the vector index loads and scans them like real ones); the one memory to find is embedded
by the real model."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.to_thread

from bench.importing import measure_import
from bench.latency import QUERY_KINDS, SyntheticText, build_store, measure_size, render
from bench.settings import server_env, store_settings
from bench.stats import percentile_ms, table
from memory_mcp.app.root import open_app
from memory_mcp.models import StoreRequest
from memory_mcp.semantic.embeddings import Embedder

STORE_SIZE = 2_000
TARGET_KEY = "pets"
TARGET_VALUE = "The office cat is called Miso and sleeps on the printer."
MEANING_QUERY = "what is the name of our feline?"
QUERIES = [
    "how do we run the tests?",
    "which database does staging use",
    "what did we decide about deploys",
    "the user's favourite snack",
    "who owns the release checklist",
    "name of our feline",
]
GIVE_UP_SECONDS = 300.0
STDIO_SEARCHES = 90  # per store size, after the first search with the model


@dataclass
class StartupRun:
    initialize_seconds: float
    meaning_seconds: float
    keyword_only_answers: int  # searches answered before the model could take part
    peak_rss_mb: float


@dataclass
class StartupReport:
    embedder: str
    runs: list[StartupRun] = field(default_factory=list)
    bare_import_seconds: list[float] = field(default_factory=list)
    query_embed_seconds: list[float] = field(default_factory=list)
    latencies: list[Any] = field(default_factory=list)  # latency.SizeResult per size
    server_rss_mb: dict[int, float] = field(default_factory=dict)  # store size -> VmHWM
    # store size -> seconds of each search over stdio (a server's, model loaded)
    stdio_search_seconds: dict[int, list[float]] = field(default_factory=dict)
    import_result: dict[str, Any] | None = None  # bench.importing.measure_import
    load_at_start: tuple[float, float, float] = field(default_factory=os.getloadavg)

    def summary(self) -> dict[str, Any]:
        def median(values: list[float]) -> float:
            return round(statistics.median(values), 3) if values else 0.0

        init = median([r.initialize_seconds for r in self.runs])
        bare = median(self.bare_import_seconds)
        return {
            "embedder": self.embedder,
            "runs": len(self.runs),
            "initialize_s_median": init,
            "bare_mcp_import_s_median": bare,
            "initialize_over_bare_import": round(init / bare, 2) if bare else None,
            "first_meaning_search_s_median": median([r.meaning_seconds for r in self.runs]),
            "keyword_only_answers": [r.keyword_only_answers for r in self.runs],
            "peak_rss_mb_median": median([r.peak_rss_mb for r in self.runs]),
            "query_embed_ms": {
                "p50": round(percentile_ms(self.query_embed_seconds, 50), 2),
                "p95": round(percentile_ms(self.query_embed_seconds, 95), 2),
            },
            "latency": [result.summary() for result in self.latencies],
            "server_peak_rss_mb_by_store_size": self.server_rss_mb,
            "stdio_search_ms_by_store_size": {
                size: {
                    "p50": round(percentile_ms(seconds, 50), 2),
                    "p95": round(percentile_ms(seconds, 95), 2),
                }
                for size, seconds in self.stdio_search_seconds.items()
            },
            "import": self.import_result,
            "machine": machine(),
            "load_average_at_start": self.load_at_start,
            "load_average_at_end": os.getloadavg(),
        }

    def render(self) -> str:
        s = self.summary()
        rows: list[list[object]] = [
            ["spawn -> initialize (median)", f"{s['initialize_s_median']:.2f} s"],
            ["bare `import mcp.server.mcpserver`", f"{s['bare_mcp_import_s_median']:.2f} s"],
            ["initialize / bare import", f"{s['initialize_over_bare_import']}x"],
            [
                f"spawn -> first meaning search ({STORE_SIZE:,} memories)",
                f"{s['first_meaning_search_s_median']:.2f} s",
            ],
            ["keyword-only answers before it, per run", str(s["keyword_only_answers"])],
            ["server peak RSS (median)", f"{s['peak_rss_mb_median']:.0f} MB"],
            [
                "query embedding p50 / p95",
                f"{s['query_embed_ms']['p50']:.1f} / {s['query_embed_ms']['p95']:.1f} ms",
            ],
        ]
        for size, rss in self.server_rss_mb.items():
            rows.append([f"server peak RSS over {size:,} memories", f"{rss:.0f} MB"])
        for result in self.latencies:
            every = result.summary()["search_ms"]["all"]
            rows.append(
                [
                    f"search p50 / p95 at {result.size:,} memories",
                    f"{every['p50']:.1f} / {every['p95']:.1f} ms",
                ]
            )
        for size, ms in s["stdio_search_ms_by_store_size"].items():
            rows.append(
                [
                    f"search p50 / p95 over stdio at {size:,} memories",
                    f"{ms['p50']:.1f} / {ms['p95']:.1f} ms",
                ]
            )
        imported = self.import_result
        if imported is not None:
            rows.append(
                [
                    f"import rows (check + write, no model), {imported['size']:,} memories",
                    f"{imported['rows_per_s_median']:,.0f}/s",
                ]
            )
            rows.append(
                ["import embedding (model loaded)", f"{imported['embed_texts_per_s']:,.0f} texts/s"]
            )
            if "end_to_end_s" in imported:
                rows.append(
                    [
                        f"`memory-mcp import` of {imported['size']:,}, stored and embedded",
                        f"{imported['end_to_end_s']:.1f} s",
                    ]
                )
        start = ", ".join(f"{x:.1f}" for x in self.load_at_start)
        end = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        text = (
            f"machine: {machine()}\nload average (1, 5, 15 min): {start} at start, {end} at end\n"
        )
        text += f"embedder: {self.embedder}, {len(self.runs)} spawns\n"
        text += table(["measure", "value"], rows)
        if self.latencies:
            text += "\n\nsearch latency in process (bench latency)\n" + render(self.latencies)
        return text


async def build_startup_store(directory: Path, embedder: Embedder) -> Path:
    """2,000 memories, embedded; kept in `directory` for later runs."""
    db = directory / "memory.db"
    marker = directory / "target-embedded"
    await build_store(directory, STORE_SIZE - 1, embedder.model_name)
    if not marker.exists():
        settings = store_settings(directory)
        async with open_app(settings, embedder, background=False) as app:
            await app.service.store_memory(app.caller, StoreRequest(TARGET_KEY, TARGET_VALUE))
            while await app.service.vectors.embed_pending():
                pass
        marker.write_text("1\n")
    return db


def machine() -> str:
    """The CPU, cores, memory and kernel, for the line printed beside the numbers."""
    cpu = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    memory_gb = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory_gb = int(line.split()[1]) / 1024 / 1024
    return (
        f"{cpu}, {os.cpu_count()} cores, {memory_gb:.0f} GB RAM, Linux {os.uname().release}, "
        f"Python {sys.version.split()[0]}"
    )


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _reply(stdout: IO[str], request_id: int) -> dict[str, Any]:
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def spawn_server(exe: str, db: Path | str, env: dict[str, str]) -> subprocess.Popen[str]:
    """A bench server over stdio on `db` (a SQLite file or a database URL) as agent
    `bench`; its logs are dropped (stderr)."""
    return subprocess.Popen(
        [exe, "serve", "--db", str(db), "--agent-id", "bench"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _initialize(proc: subprocess.Popen[str]) -> float:
    """The MCP handshake; returns when (perf_counter) the initialize reply arrived."""
    assert proc.stdin is not None and proc.stdout is not None
    _send(
        proc.stdin,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench-startup", "version": "0"},
            },
        },
    )
    _reply(proc.stdout, 1)
    answered = time.perf_counter()
    _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answered


def _search(proc: subprocess.Popen[str], request_id: int, query: str) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    arguments = {"query": query, "limit": 10}
    _send(
        proc.stdin,
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "memory-search", "arguments": arguments},
        },
    )
    return dict(_reply(proc.stdout, request_id)["result"]["structuredContent"])


def server_over(
    exe: str, db: Path, size: int, embedder: str, scratch: Path, searches: int = STDIO_SEARCHES
) -> tuple[float, list[float]]:
    """A server over the store in `db`: its peak RSS (VmHWM) once it has answered a search
    with the model (vector index loaded, model loaded, one query embedded), then the time
    of `searches` more over stdio, each a new text (no query-vector cache hit), sent
    one after the other as an agent does."""
    proc = spawn_server(exe, db, server_env(scratch, embedder=embedder))
    try:
        _initialize(proc)
        started = time.perf_counter()
        request_id = 1
        while True:
            request_id += 1
            if _search(proc, request_id, QUERIES[request_id % len(QUERIES)]).get("semantic"):
                break
            if time.perf_counter() - started > GIVE_UP_SECONDS:
                raise RuntimeError("no search with the model")
            time.sleep(0.2)
        rss = _peak_rss_mb(proc.pid)
        text = SyntheticText(seed=size + 1)
        seconds = []
        for i in range(searches):
            request_id += 1
            query = text.query(QUERY_KINDS[i % len(QUERY_KINDS)])
            began = time.perf_counter()
            _search(proc, request_id, query)
            seconds.append(time.perf_counter() - began)
        return rss, seconds
    finally:
        proc.kill()
        proc.wait(timeout=60)


def spawn_once(exe: str, db: Path, embedder: str, scratch: Path) -> StartupRun:
    env = server_env(scratch, embedder=embedder)
    started = time.perf_counter()
    proc = spawn_server(exe, db, env)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        initialized = _initialize(proc) - started
        keyword_only = 0
        for request_id in range(2, 100_000):
            _send(
                proc.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {
                        "name": "memory-search",
                        "arguments": {"query": MEANING_QUERY, "limit": 3},
                    },
                },
            )
            result = _reply(proc.stdout, request_id)["result"]["structuredContent"]
            hits = result["results"]
            if (
                result.get("semantic", "notices" not in result)
                and hits
                and hits[0]["key"] == TARGET_KEY
            ):
                break
            keyword_only += 1
            if time.perf_counter() - started > GIVE_UP_SECONDS:
                raise RuntimeError(f"never found by meaning: {result}")
            time.sleep(0.2)
        found = time.perf_counter() - started
        return StartupRun(initialized, found, keyword_only, _peak_rss_mb(proc.pid))
    finally:
        proc.kill()
        proc.wait(timeout=60)


def bare_mcp_import_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import mcp.server.mcpserver"], check=True)
    return time.perf_counter() - started


async def run_startup(
    workdir: Path,
    embedder_name: str,
    embedder: Embedder,
    runs: int,
    latency_sizes: list[int],
    latency_workdir: Path,
    import_memories: int,
    say: Callable[[str], None],
) -> StartupReport:
    """Every number of issue 9 in one run: start-up, RSS, query embedding, search latency
    at each size (with the RSS of a server over that store), and import rate."""
    report = StartupReport(embedder_name)
    await embedder.wait_ready()
    say(f"building or reusing the {STORE_SIZE:,}-memory store in {workdir}")
    db = await build_startup_store(workdir, embedder)
    exe = str(Path(sys.executable).with_name("memory-mcp"))
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as scratch:
        for run in range(runs):
            report.bare_import_seconds.append(bare_mcp_import_seconds())
            one = spawn_once(exe, db, embedder_name, Path(scratch))
            say(
                f"run {run + 1}: initialize {one.initialize_seconds:.2f} s, meaning search "
                f"{one.meaning_seconds:.2f} s, peak RSS {one.peak_rss_mb:.0f} MB"
            )
            report.runs.append(one)
        for i in range(5):  # warm-up
            await embedder.embed([QUERIES[i % len(QUERIES)]])
        for i in range(200):
            started = time.perf_counter()
            await embedder.embed([f"{QUERIES[i % len(QUERIES)]} {i}"])
            report.query_embed_seconds.append(time.perf_counter() - started)
        for size in [size for size in latency_sizes if size > 0]:
            say(f"search latency at {size:,} memories (store in {latency_workdir / str(size)})")
            result = await measure_size(latency_workdir / str(size), size, embedder, 150, say)
            report.latencies.append(result)
            rss, seconds = server_over(
                exe, latency_workdir / str(size) / "memory.db", size, embedder_name, Path(scratch)
            )
            report.server_rss_mb[size] = rss
            report.stdio_search_seconds[size] = seconds
            say(
                f"server over {size:,} memories: peak RSS {rss:.0f} MB, search over stdio "
                f"p50 {percentile_ms(seconds, 50):.1f} ms"
            )
        if import_memories:
            say(f"import of {import_memories:,} memories (bench import)")
            report.import_result = await anyio.to_thread.run_sync(
                measure_import, Path(scratch) / "import", import_memories
            )
    return report
