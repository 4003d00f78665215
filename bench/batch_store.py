"""`python -m bench batch-store` (`make bench-batch-store`): what a memory costs stored in a
batch (one store_memory call with `memories`) against one store_memory call each, over
stdio.

A real `memory-mcp serve` on a new SQLite file with the default settings (synchronous=FULL:
each call's transaction is on disk before it is answered) and the model loaded. Each round
stores `--size` new memories twice, once as `--size` single calls and once as one batch,
the two in alternating order from round to round (whichever goes second meets a bigger
store); every memory a distinct sentence, so each is embedded. Prints the median over the
rounds of the time per memory in each mode, their ratio, and the load average before and
after (the machine may be shared: compare the ratio, which both modes pay alike)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.settings import server_env
from bench.startup import machine, spawn_server
from bench.store_turns import _call, _ready

SUBJECTS = ("the billing service", "the nightly export", "the search index", "the web view")
FACTS = ("runs on port", "was moved to rack", "needs a restart after", "keeps logs for")


def sentence(round_: int, mode: str, index: int) -> str:
    subject = SUBJECTS[index % len(SUBJECTS)]
    fact = FACTS[(index // len(SUBJECTS)) % len(FACTS)]
    return f"In round {round_} ({mode}), {subject} {fact} {1000 + index * 7 + round_}."


def measure(exe: str, size: int, rounds: int) -> dict[str, Any]:
    single: list[float] = []
    batch: list[float] = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as scratch:
        proc = spawn_server(exe, Path(scratch) / "batch.db", server_env(Path(scratch)))
        try:
            request_id = _ready(proc)
            for round_ in range(rounds):
                modes = ("single", "batch") if round_ % 2 == 0 else ("batch", "single")
                for mode in modes:
                    memories = [
                        {"key": f"{mode}-{round_}-{i}", "value": sentence(round_, mode, i)}
                        for i in range(size)
                    ]
                    began = time.perf_counter()
                    if mode == "batch":
                        request_id += 1
                        answer = _call(proc, request_id, "store_memory", {"memories": memories})
                        assert len(answer["stored"]) == size
                        batch.append((time.perf_counter() - began) / size)
                    else:
                        for memory in memories:
                            request_id += 1
                            _call(proc, request_id, "store_memory", memory)
                        single.append((time.perf_counter() - began) / size)
        finally:
            proc.kill()
            proc.wait()
    single_ms = statistics.median(single) * 1000
    batch_ms = statistics.median(batch) * 1000
    return {
        "benchmark": "batch_store",
        "machine": machine(),
        "size": size,
        "rounds": rounds,
        "load_average": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "single_ms_per_memory_median": round(single_ms, 2),
        "batch_ms_per_memory_median": round(batch_ms, 2),
        "single_over_batch": round(single_ms / batch_ms, 1),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--size", type=int, default=50, help="memories per batch (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument(
        "--exe",
        default=str(Path(sys.executable).parent / "memory-mcp"),
        help="the memory-mcp to spawn (default: this environment's)",
    )
    parser.add_argument("--json", type=Path, help="also write the numbers here")


def run(args: argparse.Namespace) -> int:
    report = measure(args.exe, args.size, args.rounds)
    print(
        f"{report['size']} memories, {report['rounds']} rounds, over stdio "
        f"(load {report['load_average']} -> {report['load_average_after']}; {report['machine']})\n"
        f"  one call each : {report['single_ms_per_memory_median']:8.2f} ms per memory (median)\n"
        f"  one batch     : {report['batch_ms_per_memory_median']:8.2f} ms per memory (median)\n"
        f"  ratio         : {report['single_over_batch']}x"
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.batch_store", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
