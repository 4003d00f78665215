"""Import rate: rows per second (checked and written, no model), embedding rate, and a
real `memory-mcp import` of N short memories end to end (spawn, check, store, embed).

`measure_import(...)` returns the numbers (the startup benchmark can call it);
`python -m bench import [--size N] [--runs R]` (or `python -m bench import`) prints them."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

DEFAULT_WORKDIR = Path("bench/results/import")


def write_memories(path: Path, count: int) -> Path:
    """`count` short memories (one sentence each, ~60 characters), one JSON line each."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            value = f"Fact {i}: service s{i % 97} deploys on weekday {i % 7} for team {i % 13}"
            out.write(json.dumps({"key": f"fact-{i}", "value": value, "tags": ["bench"]}) + "\n")
    return path


def _fresh(db: Path) -> Path:
    for leftover in db.parent.glob(db.name + "*"):
        leftover.unlink()
    return db


async def _rows_and_embedding(source: Path, db: Path, embed: bool) -> dict[str, float]:
    """One in-process import of `source` into a fresh `db`: seconds to check the file,
    to write it, and (with `embed`) to embed it once the model is loaded."""
    from bench.settings import BenchSettings
    from memory_mcp.app.root import embedder_from, open_app
    from memory_mcp.transfer.batches import (
        ImportReport,
        embed_batches,
        ownership_problems,
        texts_to_embed,
        write_batches,
    )
    from memory_mcp.transfer.jsonl import check_cap, prepare_lines, read_lines

    settings = BenchSettings(
        db=str(_fresh(db)), data_dir=db.parent, watch=False, max_memories_per_agent=0
    )
    async with open_app(settings, embedder_from(settings), background=False) as app:
        started = time.perf_counter()
        lines, errors = read_lines(source)
        prepared, invalid = prepare_lines(app.service, lines, app.caller)
        refused = await ownership_problems(app.service, prepared)
        await check_cap(app.service, prepared)
        assert not (errors or invalid or refused), "the benchmark file is valid"
        checked = time.perf_counter()
        report = ImportReport()
        await write_batches(app.service, prepared, report)
        written = time.perf_counter()
        numbers = {"check_s": checked - started, "write_s": written - checked}
        if embed:
            await app.service.embedder.wait_ready()
            texts = texts_to_embed(prepared, report)
            begun = time.perf_counter()
            await embed_batches(app.service, texts, report)
            numbers["embed_s"] = time.perf_counter() - begun
            numbers["embedded"] = report.embedded
        numbers["rows"] = report.stored
    return numbers


def _end_to_end(source: Path, db: Path, workdir: Path) -> float:
    """Seconds for a real `memory-mcp import` process, spawn to exit, model included."""
    from bench.settings import server_env

    exe = str(Path(sys.executable).with_name("memory-mcp"))
    env = server_env(workdir / "scratch", max_memories_per_agent="0")
    started = time.perf_counter()
    done = subprocess.run(
        [exe, "import", str(source), "--db", str(_fresh(db))],
        capture_output=True,
        text=True,
        env=env,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"memory-mcp import failed: {done.stderr}")
    return elapsed


def measure_import(
    workdir: Path = DEFAULT_WORKDIR, size: int = 10_000, runs: int = 3, end_to_end: bool = True
) -> dict[str, Any]:
    """Rows/s (median of `runs` in-process imports without the model), texts embedded per
    second (one run, model loaded), and one real `memory-mcp import` end to end."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = write_memories(workdir / f"memories-{size}.jsonl", size)
    db = workdir / "import.db"
    rows: list[dict[str, float]] = []
    for run in range(runs):
        last = run == runs - 1
        rows.append(anyio.run(_rows_and_embedding, source, db, last))
    per_second = [size / (r["check_s"] + r["write_s"]) for r in rows]
    write_only = [size / r["write_s"] for r in rows]
    result: dict[str, Any] = {
        "size": size,
        "runs": runs,
        "rows_per_s_median": statistics.median(per_second),
        "rows_per_s_all": per_second,
        "write_only_rows_per_s_median": statistics.median(write_only),
        "embed_texts_per_s": rows[-1]["embedded"] / rows[-1]["embed_s"],
        "embed_s": rows[-1]["embed_s"],
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    if end_to_end:
        result["end_to_end_s"] = _end_to_end(source, db, workdir)
    return result


def format_report(result: dict[str, Any]) -> str:
    lines = [
        f"import of {result['size']:,} short memories ({result['cpus']} cores, load average "
        + " ".join(f"{x:.1f}" for x in result["load_average"])
        + ")",
        f"  rows (check + write, no model): {result['rows_per_s_median']:,.0f}/s median of "
        f"{result['runs']} ({', '.join(f'{x:,.0f}' for x in result['rows_per_s_all'])}); "
        f"write alone {result['write_only_rows_per_s_median']:,.0f}/s",
        f"  embedding (model loaded): {result['embed_texts_per_s']:,.0f} texts/s "
        f"({result['embed_s']:.1f} s)",
    ]
    if "end_to_end_s" in result:
        lines.append(
            f"  memory-mcp import end to end (spawn, check, store, embed): "
            f"{result['end_to_end_s']:.1f} s"
        )
    return "\n".join(lines)
