"""`python -m bench.lab.search_ab FILE.json`: what the write-time context costs a search,
in one process and the same minutes. One LoCoMo conversation is stored twice through
`MemoryService.store_memory`: with its sessions (each memory gets a context) and with every
turn in a session of its own (none does); then every question is searched on both stores,
three rounds, the order of the two stores swapped each round. Prints p50 / p95 per store
and the load average."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import anyio

from bench.locomo import load_conversation
from bench.settings import BenchSettings
from memory_mcp.app.context import AppContext
from memory_mcp.app.root import embedder_from, open_app
from memory_mcp.models import SearchRequest, StoreRequest

ROUNDS = 3


async def measure(path: Path) -> None:
    conversation = load_conversation(path)
    embedder = embedder_from(BenchSettings())
    await embedder.wait_ready()
    with tempfile.TemporaryDirectory(prefix="memory-mcp-search-ab-") as tmp:
        folder = Path(tmp)
        async with (
            open_app(
                BenchSettings(db=str(folder / "a.db"), data_dir=folder), embedder, False
            ) as context,
            open_app(
                BenchSettings(db=str(folder / "b.db"), data_dir=folder), embedder, False
            ) as alone,
        ):
            for turn in conversation.turns:
                request = StoreRequest(turn.key, turn.value)
                await context.service.store_memory(
                    replace(context.caller, session_id=turn.session), request
                )
                await alone.service.store_memory(
                    replace(alone.caller, session_id=f"alone-{turn.key}"), request
                )
            stores: list[tuple[str, AppContext]] = [("context", context), ("no context", alone)]
            times: dict[str, list[float]] = {name: [] for name, _ in stores}
            for round_ in range(ROUNDS):
                order = stores if round_ % 2 == 0 else stores[::-1]
                for question in conversation.questions:
                    for name, app in order:
                        started = time.perf_counter()
                        await app.service.search(app.caller, SearchRequest(question.text, limit=10))
                        times[name].append((time.perf_counter() - started) * 1000)
    for name, values in times.items():
        values.sort()
        p95 = values[int(len(values) * 0.95)]
        print(
            f"{name}: search p50 {statistics.median(values):.2f} ms, p95 {p95:.2f} ms "
            f"({len(values)} searches; rounds after the first reuse the query vectors)"
        )
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")


def main() -> None:
    anyio.run(measure, Path(sys.argv[1]))


if __name__ == "__main__":
    main()
