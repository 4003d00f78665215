"""The real thing, as Claude Desktop runs it: `memory-mcp serve` spawned over stdio, with the
real embedding model, one database file shared by several processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import ToolFailed, call, call_error, initialize_request

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))


def server_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "notes"),
        "HF_HUB_OFFLINE": "1",
    }


@asynccontextmanager
async def spawned(tmp_path: Path, *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=EXE,
        args=["serve", "--db", str(tmp_path / "shared.db"), *args],
        env=server_env(tmp_path),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    """Raw pipes, no SDK on the client side: every stdout line must be JSON-RPC, and the
    handshake is answered before the model has loaded."""
    messages = [
        initialize_request("raw-test"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "store_memory",
                "arguments": {"key": "k", "value": "lemur migration"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "memory-search", "arguments": {"query": "lemur"}},
        },
    ]
    start = time.monotonic()
    proc = subprocess.Popen(
        [EXE, "serve", "--db", str(tmp_path / "raw.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(tmp_path),
    )
    assert proc.stdin
    assert proc.stdout
    replies: dict[int, dict[str, Any]] = {}
    try:
        proc.stdin.write(json.dumps(messages[0]) + "\n")
        proc.stdin.flush()
        while 3 not in replies:
            line = proc.stdout.readline()
            assert line, "server closed stdout"
            message = json.loads(line)  # a non-JSON line fails the test here
            assert message["jsonrpc"] == "2.0"
            if "id" in message:
                replies[message["id"]] = message
            if message.get("id") == 1:
                handshake = time.monotonic() - start
                for follow_up in messages[1:3]:
                    proc.stdin.write(json.dumps(follow_up) + "\n")
                proc.stdin.flush()
            if message.get("id") == 2:  # requests run concurrently: search after the store
                proc.stdin.write(json.dumps(messages[3]) + "\n")
                proc.stdin.flush()
    finally:
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
    print(f"initialize answered after {handshake:.2f} s")
    assert replies[1]["result"]["serverInfo"]["name"] == "memory-mcp"
    results = replies[3]["result"]["structuredContent"]["results"]
    assert [r["key"] for r in results] == ["k"], "findable by its words at once"
    assert "memory-mcp" in stderr, "logs go to stderr"


async def test_three_agents_share_one_database_file(tmp_path: Path) -> None:
    """Three processes (two workers and the lead) on one file; then two of them page,
    revert and bulk delete (page_revert_and_bulk_delete: the same processes serve both)."""
    async with AsyncExitStack() as stack:
        w1 = await stack.enter_async_context(spawned(tmp_path, "--agent-id", "w1"))
        w2 = await stack.enter_async_context(spawned(tmp_path, "--agent-id", "w2"))
        lead = await stack.enter_async_context(
            spawned(tmp_path, "--agent-id", "lead", "--role", "lead")
        )
        clients = {"w1": w1, "w2": w2, "lead": lead}

        for name, client in clients.items():
            await call(
                client,
                "store_memory",
                key=f"{name}-private",
                value=f"{name} keeps the gazebo key under the mat",
            )
            await call(
                client,
                "store_memory",
                key=f"{name}-shared",
                scope="swarm",
                value=f"{name} says the gazebo is painted green",
            )
        for name, client in clients.items():
            found = await call(client, "memory-search", query="gazebo", limit=50)
            keys = {r["key"] for r in found["results"]}
            assert keys == {"w1-shared", "w2-shared", "lead-shared", f"{name}-private"}

        # Concurrent writers in three processes: no write is lost.
        async def burst(name: str, client: Client) -> None:
            async with anyio.create_task_group() as tasks:
                for i in range(20):
                    tasks.start_soon(
                        partial(
                            call,
                            client,
                            "store_memory",
                            key=f"burst-{name}-{i}",
                            scope="swarm",
                            value=f"burst note {i} from {name} about the aviary",
                        )
                    )

        async with anyio.create_task_group() as tasks:
            for name, client in clients.items():
                tasks.start_soon(burst, name, client)
        found = await call(w1, "memory-search", query="aviary burst", limit=50)
        assert len(found["results"]) == 50
        ids = set()
        for client in clients.values():
            for name in clients:
                for i in (0, 19):
                    key = f"burst-{name}-{i}"
                    hits = await call(client, "memory-search", query=key, limit=1)
                    assert hits["results"][0]["key"] == key, "an exact key is found first"
                    ids.add(hits["results"][0]["id"])
        assert len(ids) == 6, "every process sees the same memories"

        # Read-modify-write with expected_version from the two processes that may update
        # w1's swarm memory (w1 and the lead): no lost update. The third is refused.
        counter = await call(w1, "store_memory", key="counter", value="0", scope="swarm")
        refused = await call_error(w2, "store_memory", key="counter", value="9", scope="swarm")
        assert "agent 'w1'" in refused
        writers = {"w1": w1, "lead": lead}
        increments: list[str] = []

        async def increment(name: str, client: Client, times: int) -> None:
            for _ in range(times):
                while True:
                    current = await call(client, "memory-get", id=counter["id"])
                    try:
                        await call(
                            client,
                            "store_memory",
                            key="counter",
                            scope="swarm",
                            value=str(int(current["value"]) + 1),
                            expected_version=current["version"],
                        )
                        increments.append(name)
                        break
                    except ToolFailed as conflict:
                        assert "version conflict" in str(conflict)

        async with anyio.create_task_group() as tasks:
            for name, client in writers.items():
                tasks.start_soon(increment, name, client, 5)
        final = await call(w2, "memory-get", id=counter["id"])
        assert final["value"] == "10"
        assert final["version"] == 11

        # Semantic search across processes: once w2's model is loaded, it finds by meaning
        # a memory that another process wrote.
        await call(
            w1, "store_memory", key="pets", scope="swarm", value="The office cat is called Miso"
        )
        # Its vector may come from any of the three processes' workers: poll with a deadline.
        deadline = time.monotonic() + 180
        while True:
            result = await call(w2, "memory-search", query="name of our feline", limit=3)
            top = result["results"][0]["key"] if result["results"] else None
            if "notices" not in result and top == "pets":
                break
            assert time.monotonic() < deadline, f"never found by meaning: {result}"
            await anyio.sleep(0.5)
        assert result["results"][0]["matched_by"] == "vector"

        await page_revert_and_bulk_delete(w1, w2)


async def page_revert_and_bulk_delete(w1: Client, w2: Client) -> None:
    """Browsing, history and bulk deletes, two agents in two processes: one pages through
    the memories while the other writes. (Was tests/mcp/test_stdio_browse.py, with two
    processes of its own.)"""
    for n in range(40):
        await call(w1, "store_memory", key=f"note-{n:02}", value=f"note {n}", tags=["notes"])
    await call(w2, "store_memory", key="w2-private", value="never listed for w1")

    seen: list[str] = []

    async def page_through() -> None:
        cursor = None
        while True:
            arguments: dict[str, Any] = {"limit": 6, "scope": "all"}
            if cursor is not None:
                arguments["cursor"] = cursor
            page = await call(w1, "memory-list", **arguments)
            seen.extend(m["key"] for m in page["memories"])
            cursor = page["next_cursor"]
            if cursor is None:
                return

    async def write_meanwhile() -> None:
        for n in range(15):
            await call(w2, "store_memory", key=f"late-{n}", value="late", scope="swarm")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(write_meanwhile)
        tasks.start_soon(page_through)

    notes = [key for key in seen if key.startswith("note-")]
    assert notes == [f"note-{n:02}" for n in reversed(range(40))]
    assert len(seen) == len(set(seen)), "no memory on two pages"
    assert "w2-private" not in seen

    first = await call(w1, "store_memory", key="editor", value="vim", scope="swarm")
    await call(w1, "store_memory", key="editor", value="nano", scope="swarm")
    refused = await call_error(w2, "memory-revert", id=first["id"], version=1)
    assert "only its owner or the lead" in refused
    reverted = await call(w1, "memory-revert", id=first["id"], version=1)
    history = await call(w2, "memory-history", id=first["id"])
    assert reverted["version"] == 3
    assert [(v["value"], v["written_by"]) for v in history["versions"]] == [
        ("vim", "w1"),
        ("nano", "w1"),
        ("vim", "w1"),
    ]

    preview = await call(w1, "memory-delete-many", tags=["notes"], limit=25, dry_run=True)
    done = await call(w1, "memory-delete-many", tags=["notes"], limit=25)
    rest = await call(w1, "memory-delete-many", tags=["notes"], limit=25)
    assert (preview["deleted"], preview["matched"], preview["remaining"]) == (0, 40, 15)
    assert (done["deleted"], done["remaining"]) == (25, 15)
    assert [m["id"] for m in done["memories"]] == [m["id"] for m in preview["memories"]]
    assert rest["deleted"] == 15
    left = await call(w2, "memory-list", tags=["notes"])
    assert left["memories"] == []


def test_python_server_py_is_memory_mcp_serve(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "server.py", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0
    assert "--agent-id" in proc.stdout
