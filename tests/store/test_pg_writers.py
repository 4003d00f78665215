"""Several real `memory-mcp serve` processes writing at once to one PostgreSQL database:
every acknowledged write is there, and writes of one key from every process make one
memory whose version counts them (no duplicate rows, no lost update)."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from memory_mcp.store.engine import create_engines
from memory_mcp.store.repository import MemoryStore
from tests.conftest import call
from tests.http.team_server import server_env

pytestmark = pytest.mark.anyio
# Every writer alternates a key of its own with one of the two shared keys, and all twelve
# start together once the three servers answer (asserted: the processes' writes overlap),
# so both shared keys take writes from every process all through the run. Before: 8 own
# then 6 shared writes each, started as each process came up: 2.3x the stores, and no
# overlap guaranteed.
PROCESSES, WRITERS, WRITES = 3, 4, 3  # WRITES: own keys per writer, and shared writes
SHARED_KEYS = ("shared-a", "shared-b")


@pytest.fixture
def db_backend() -> str:
    return "postgresql"


@asynccontextmanager
async def serve(tmp: Path, db: str, index: int) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_mcp.cli", "serve", "--db", db, "--agent-id", "writer"],
        env={**server_env(tmp / f"p{index}"), "MEMORY_MCP_WATCH": "false"},
    )
    with (tmp / f"p{index}.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=300) as c:
            yield c


async def test_processes_writing_at_once_lose_nothing_and_duplicate_nothing(
    tmp_path: Path, db_url: str
) -> None:
    own: dict[str, str] = {}  # key -> value, every acknowledged write of a key of its own
    shared: Counter[str] = Counter()  # key -> acknowledged writes from every process
    last_values: dict[str, set[str]] = {key: set() for key in SHARED_KEYS}
    acked: dict[int, list[float]] = {p: [] for p in range(PROCESSES)}  # when, per process

    async def write(client: Client, p: int, key: str, value: str) -> None:
        await call(client, "store_memory", key=key, value=value)
        acked[p].append(time.perf_counter())

    async def writer(client: Client, p: int, w: int) -> None:
        for i in range(WRITES):
            key, value = f"p{p}-w{w}-{i}", f"written by process {p} writer {w} number {i}"
            await write(client, p, key, value)
            own[key] = value
            key = SHARED_KEYS[(w + i) % len(SHARED_KEYS)]
            value = f"{key} from process {p} writer {w} write {i}"
            await write(client, p, key, value)
            shared[key] += 1
            last_values[key].add(value)

    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(serve(tmp_path, db_url, p)) for p in range(PROCESSES)
        ]
        async with anyio.create_task_group() as tasks:
            for p, client in enumerate(clients):
                for w in range(WRITERS):
                    tasks.start_soon(writer, client, p, w)

    store = MemoryStore(create_engines(db_url))
    try:
        records = [record async for record in store.iter_records()]
        histories = {r.key: await store.history(r.id) for r in records if r.key in SHARED_KEYS}
    finally:
        await store.close()
    by_key = Counter(record.key for record in records)
    stored = {record.key: record for record in records}

    firsts = [times[0] for times in acked.values()]
    lasts = [times[-1] for times in acked.values()]
    assert max(firsts) < min(lasts), "the three processes wrote at once"
    assert len(own) == PROCESSES * WRITERS * WRITES
    assert {key: stored[key].value for key in own} == own
    assert [key for key, count in by_key.items() if count > 1] == []
    assert len(records) == len(own) + len(SHARED_KEYS)
    for key in SHARED_KEYS:
        assert stored[key].version == shared[key], key
        assert len(histories[key]) == shared[key] - 1, key
        assert stored[key].value in last_values[key], key
