"""Search p50 over stdio, this checkout against another one (e.g. main before a change),
on copies of one store of N synthetic memories (bench/latency.py's text and vectors, built
once by bench/projects.py's builder): both servers up at once, each query sent to one
then the other (the order alternating), so the machine's load hits both alike and the
change's cost reads as a ratio from one run.

    git archive main memory_mcp | tar -x -C /tmp/base      # the code to compare with
    python -m bench.ab_latency --base /tmp/base --memories 10000 --searches 300

`--base` is a folder holding a `memory_mcp` package: its server runs this interpreter
with that folder first on PYTHONPATH. Query kinds: bench/latency.py's three, and `time`
(a question ending in "last week": what a time cue costs, search/time_cues.py)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

KINDS = ("selective", "common", "question", "time")


def _query(text: Any, kind: str) -> str:
    if kind == "time":
        return str(text.query("question")) + " last week"
    return str(text.query(kind))


def run(base: Path, workdir: Path, size: int, searches: int) -> dict[str, Any]:
    from bench.latency import SyntheticText
    from bench.projects import build_latency_store
    from bench.settings import server_env
    from bench.startup import _initialize, _search, spawn_server
    from memory_mcp.semantic.embeddings import MODEL_NAME

    store = workdir / f"store-{size}"
    anyio.run(build_latency_store, store, size, 1, MODEL_NAME, print)
    copies = {}
    for name in ("base", "this"):
        folder = workdir / f"copy-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for part in store.glob("memory.db*"):
            if part.is_file():
                shutil.copy2(part, folder / part.name)
        copies[name] = folder / "memory.db"
    exe = str(Path(sys.executable).with_name("memory-mcp"))
    servers = {}
    for name, db in copies.items():
        env = server_env(workdir / f"scratch-{name}")
        if name == "base":
            env["PYTHONPATH"] = str(base) + os.pathsep + env.get("PYTHONPATH", "")
        servers[name] = spawn_server(exe, db, env)
    seconds: dict[str, dict[str, list[float]]] = {n: {k: [] for k in KINDS} for n in servers}
    try:
        for proc in servers.values():
            _initialize(proc)
        text = SyntheticText(seed=size + 1)
        request_id = 1
        for proc in servers.values():  # the model loaded, the index caught up
            while not _search(proc, request_id := request_id + 1, "warm up").get("semantic"):
                time.sleep(0.2)
            for i in range(8):
                _search(proc, request_id := request_id + 1, _query(text, KINDS[i % 4]))
        for i in range(searches):
            kind = KINDS[i % len(KINDS)]
            query = _query(text, kind)
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for name in order:
                began = time.perf_counter()
                _search(servers[name], request_id := request_id + 1, query)
                seconds[name][kind].append(time.perf_counter() - began)
    finally:
        for proc in servers.values():
            proc.kill()
            proc.wait(timeout=60)

    def p50(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 2)

    result: dict[str, Any] = {"memories": size, "searches": searches, "load": os.getloadavg()}
    for name, kinds in seconds.items():
        every = [s for values in kinds.values() for s in values]
        result[name] = {"all": p50(every), **{kind: p50(kinds[kind]) for kind in KINDS}}
    result["ratio"] = round(result["this"]["all"] / result["base"]["all"], 3)
    # The same query on both, one right after the other: the median of those ratios
    # is steadier than the ratio of the medians when the load swings.
    pairs = [
        this / base
        for kind in KINDS
        for this, base in zip(seconds["this"][kind], seconds["base"][kind], strict=True)
    ]
    result["paired_ratio"] = round(statistics.median(pairs), 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab_latency", description=__doc__)
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, default=Path("bench/results/ab_latency"))
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if not (args.base / "memory_mcp" / "__init__.py").is_file():
        parser.error(f"{args.base} holds no memory_mcp package")
    result = run(args.base.resolve(), args.workdir, args.memories, args.searches)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
