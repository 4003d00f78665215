"""`python -m bench store DIR --peer [ROOT]`: our store and search beside the peer's, in one
run, on the same turns, at the same load.

The peer is mcp-memory-service 12.4.0 as `../shared/tools/peer/setup_peer.sh` builds it
under ROOT (its sqlite_vec backend, all-MiniLM-L6-v2 through sentence-transformers, offline),
spawned the way `../shared/tools/peer/peer_locomo.py` spawns it. Both servers run at once,
each on a new database, driven by the same client (JSON lines over stdio, as
bench/store_turns.py drives ours), so neither is measured through a slower client. Each
turn of one LoCoMo conversation is stored in both, in alternating order (ours first on
even turns), then `--searches` of its questions are asked of both the same way (limit 10;
the peer in its hybrid mode, its best recall). Before each call both servers are idle
(their CPU time has stopped moving: an agent's think time between two calls), so neither's
background work lands on the other's call, and a change of load hits both alike.

Prints store and search p50/p95 of each, our p50 over the peer's (the ratio this run is
about), each server's CPU per call, and the load at start and end."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.locomo import Conversation
from bench.settings import server_env
from bench.startup import machine, spawn_server
from bench.stats import p50_p95_ms, percentile_ms, table
from bench.store_turns import _cpu_seconds, _settle

PEER_GIVE_UP_SECONDS = 300.0
SEARCH_LIMIT = 10


def default_peer_root() -> Path:
    """Where setup_peer.sh builds the peer unless told otherwise."""
    return Path(os.environ.get("PEER_ROOT", Path(tempfile.gettempdir()) / "peer"))


@dataclass
class Side:
    """One server's timings in the run."""

    store_seconds: list[float] = field(default_factory=list)
    search_seconds: list[float] = field(default_factory=list)
    store_cpu_seconds: float = 0.0
    search_cpu_seconds: float = 0.0

    def p50_ms(self, values: list[float]) -> float:
        return round(percentile_ms(values, 50), 2)

    def summary(self) -> dict[str, Any]:
        return {
            "store_ms": p50_p95_ms(self.store_seconds),
            "search_ms": p50_p95_ms(self.search_seconds),
            "cpu_ms_per_store": round(
                self.store_cpu_seconds * 1000 / max(1, len(self.store_seconds)), 2
            ),
            "cpu_ms_per_search": round(
                self.search_cpu_seconds * 1000 / max(1, len(self.search_seconds)), 2
            ),
        }


@dataclass
class PeerRun:
    conversation: str
    ours: Side = field(default_factory=Side)
    peer: Side = field(default_factory=Side)
    load: tuple[float, float, float] = field(default_factory=os.getloadavg)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    peer_threads: int | None = None  # torch's threads in the peer (None: its default)

    def ratios(self) -> dict[str, float]:
        """Our p50 over the peer's: below 1 is faster."""
        out = {}
        for name in ("store_seconds", "search_seconds"):
            ours, peer = getattr(self.ours, name), getattr(self.peer, name)
            if ours and peer:
                out[name.split("_")[0]] = round(
                    percentile_ms(ours, 50) / percentile_ms(peer, 50), 3
                )
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "benchmark": "store beside the peer",
            "machine": machine(),
            "load_average": [round(x, 2) for x in self.load],
            "load_average_after": [round(x, 2) for x in self.load_after],
            "conversation": self.conversation,
            "peer_threads": self.peer_threads or "default",
            "ours": self.ours.summary(),
            "peer": self.peer.summary(),
            "p50_ratio_ours_over_peer": self.ratios(),
        }

    def render(self) -> str:
        s = self.summary()
        rows = []
        for call, key, cpu in (
            ("store", "store_ms", "cpu_ms_per_store"),
            ("search", "search_ms", "cpu_ms_per_search"),
        ):
            for name in ("ours", "peer"):
                side = s[name]
                rows.append([f"{call}: {name}", *side[key].values(), side[cpu]])
        ratios = s["p50_ratio_ours_over_peer"]
        return "\n".join(
            [
                f"LoCoMo conversation {self.conversation}: {len(self.ours.store_seconds)} turns "
                f"stored in both servers, then {len(self.ours.search_seconds)} searches, "
                "alternating, each call sent once both servers were idle",
                f"machine: {s['machine']}; the peer's torch threads: {s['peer_threads']}",
                f"load average {s['load_average']} at start, {s['load_average_after']} at end",
                "",
                table(["over stdio", "p50 ms", "p95 ms", "server CPU ms/call"], rows),
                "p50 ours / peer: "
                + ", ".join(f"{name} {ratio:.2f}x" for name, ratio in ratios.items()),
            ]
        )


class JsonLinesClient:
    """An MCP client over a server's stdin/stdout, one JSON message a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self._in: IO[str] = proc.stdin
        self._out: IO[str] = proc.stdout
        self._id = 0

    def _send(self, message: dict[str, Any]) -> None:
        self._in.write(json.dumps(message) + "\n")
        self._in.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        while True:
            line = self._out.readline()
            if not line:
                raise RuntimeError(f"the server closed stdout (exit {self.proc.poll()})")
            message = json.loads(line)
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    def initialize(self) -> None:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench-store-peer", "version": "0"},
        }
        self.request("initialize", params)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{name} failed: {result.get('content')}")
        return result


@dataclass(frozen=True)
class Server:
    """How one side is called: its tools and the arguments it takes."""

    client: JsonLinesClient
    store_tool: str
    search_tool: str
    search_mode: dict[str, str]

    def store(self, key: str, value: str, conversation: str) -> None:
        if self.store_tool == "store_memory":
            self.client.tool(self.store_tool, {"key": key, "value": value})
        else:  # the peer's protocol (peer_locomo.py): the turn's id as a tag
            arguments = {
                "content": value,
                "conversation_id": f"locomo-{conversation}",
                "metadata": {"tags": ["locomo", f"dia:{key}"]},
            }
            self.client.tool(self.store_tool, arguments)

    def search(self, query: str) -> None:
        arguments = {"query": query, "limit": SEARCH_LIMIT, **self.search_mode}
        self.client.tool(self.search_tool, arguments)


def peer_python(root: Path) -> Path:
    """The peer's Python under `root`, or a SystemExit saying how to build it."""
    python = root / "venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(
            f"bench store --peer: no peer under {root} "
            "(build it: bash ../shared/tools/peer/setup_peer.sh, PEER_ROOT to choose where)"
        )
    return python


def spawn_peer(root: Path, work: Path, threads: int | None = None) -> subprocess.Popen[str]:
    """The peer as peer_locomo.py starts it: sqlite_vec, offline, its model from ROOT.
    `threads`: torch's threads (OMP_NUM_THREADS); None leaves its default, one spinning
    thread per core, which on a busy machine burns ~10x the CPU of one thread."""
    python = peer_python(root)
    (work / "base").mkdir(parents=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MCP_")},
        "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
        "MCP_MEMORY_BASE_DIR": str(work / "base"),
        "MCP_MEMORY_SQLITE_PATH": str(work / "memory.db"),
        "HF_HOME": str(root / "hf_home"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MCP_MEMORY_OFFLINE": "1",
        "MCP_MEMORY_USE_ONNX": "0",
    }
    if threads is not None:
        env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)})
    with (work / "server_stderr.log").open("w") as log:  # the child keeps its own copy
        return subprocess.Popen(
            [str(python), "-m", "mcp_memory_service.server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
            cwd=work,
        )


def _ready(server: Server) -> None:
    """The handshake, then searches until one answers with the model loaded (ours says
    so; the peer loads its model on its first search)."""
    server.client.initialize()
    started = time.perf_counter()
    while True:
        result = server.client.tool(server.search_tool, {"query": "warm up", "limit": 1})
        loaded = result.get("structuredContent", {}).get("semantic", True)
        if loaded:
            return
        if time.perf_counter() - started > PEER_GIVE_UP_SECONDS:
            raise RuntimeError(f"{server.search_tool}: the model never loaded")
        time.sleep(0.2)


def side_by_side(
    exe: str,
    peer_root: Path,
    conversation: Conversation,
    searches: int,
    peer_threads: int | None = None,
) -> PeerRun:
    peer_python(peer_root)  # before anything is spawned
    run = PeerRun(conversation=conversation.name, peer_threads=peer_threads)
    with tempfile.TemporaryDirectory(prefix="bench-store-peer-") as scratch:
        folder = Path(scratch)
        procs = [
            spawn_server(exe, folder / "ours" / "memory.db", server_env(folder / "ours")),
            spawn_peer(peer_root, folder / "peer", peer_threads),
        ]
        try:
            ours = Server(JsonLinesClient(procs[0]), "store_memory", "memory-search", {})
            peer = Server(
                JsonLinesClient(procs[1]), "memory_store", "memory_search", {"mode": "hybrid"}
            )
            sides = [(ours, run.ours, procs[0]), (peer, run.peer, procs[1])]
            for server, _, _ in sides:
                _ready(server)
            run.load = os.getloadavg()
            _each_call(
                sides,
                [(turn.key, turn.value) for turn in conversation.turns],
                "store",
                lambda server, item: server.store(*item, conversation.name),
            )
            questions = [q.text for q in conversation.questions[:searches]]
            _each_call(sides, questions, "search", lambda server, text: server.search(text))
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
                for pipe in (proc.stdin, proc.stdout):
                    if pipe is not None:
                        pipe.close()
    run.load_after = os.getloadavg()
    return run


def _each_call(
    sides: list[tuple[Server, Side, subprocess.Popen[str]]],
    items: list[Any],
    kind: str,
    call: Any,
) -> None:
    """`call(server, item)` for each item on both sides, alternating which goes first,
    each once both servers are idle; every call timed, and each server's CPU over them."""
    cpu = [_cpu_seconds(proc.pid) for _, _, proc in sides]
    for n, item in enumerate(items):
        for server, side, _ in sides if n % 2 == 0 else sides[::-1]:
            _settle(p for _, _, p in sides)
            began = time.perf_counter()
            call(server, item)
            getattr(side, f"{kind}_seconds").append(time.perf_counter() - began)
    for (_, side, proc), before in zip(sides, cpu, strict=True):
        # Everything the server did meanwhile, its background work too.
        setattr(side, f"{kind}_cpu_seconds", _cpu_seconds(proc.pid) - before)
