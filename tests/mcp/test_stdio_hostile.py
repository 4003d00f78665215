"""Every request gets an answer: a real `memory-mcp serve` over stdio, fed raw JSON-RPC lines
that the SDK's parser refuses (a lone surrogate escape, nesting 250 deep, a line that is not
JSON), answers each with an error and keeps serving."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import initialize_request
from tests.mcp.test_stdio_e2e import EXE, server_env

TIMEOUT = 120.0  # generous: the machine is shared; a missing answer fails only at the end


def _deep(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


def _call(request_id: int, tool: str, arguments: dict[str, Any]) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
    )


def test_requests_the_sdk_cannot_parse_still_get_answers(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [EXE, "serve", "--db", str(tmp_path / "hostile.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=server_env(tmp_path),
    )
    assert proc.stdin
    assert proc.stdout
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout

    def read_lines() -> None:
        for line in stdout:
            lines.put(line)

    reader = threading.Thread(target=read_lines, daemon=True)
    reader.start()

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def answer(request_id: object) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                message: dict[str, Any] = json.loads(lines.get(timeout=1.0))
            except queue.Empty:
                assert proc.poll() is None, "the server died"
                continue
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
        raise AssertionError(f"no answer to request {request_id!r} within {TIMEOUT} s")

    try:
        send(json.dumps(initialize_request("hostile-test")))
        answer(1)
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        # json.dumps writes "\ud800" as the escape sequence: the line itself is valid UTF-8.
        send(_call(2, "store_memory", {"key": "a\ud800b", "value": "v"}))
        reply = answer(2)["result"]
        assert reply["isError"] is True
        assert "invalid key: contains an unpaired surrogate (U+D800)" in reply["content"][0]["text"]

        send(_call(3, "store_memory", {"key": "deep", "value": "v", "metadata": _deep(250)}))
        reply = answer(3)["result"]
        assert reply["isError"] is True
        assert "invalid metadata: is nested more than 20 levels deep" in reply["content"][0]["text"]

        send(_call(4, "store_memory", {"key": "k", "value": "v", "metadata": {"\ud800": 1}}))
        assert "surrogate" in answer(4)["result"]["content"][0]["text"]

        send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "resources/read",
                    "params": {"uri": "memory://context\ud800"},
                }
            )
        )
        assert answer(5)["error"]["code"] == -32602

        send('{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": ')
        assert answer(6)["error"]["code"] == -32700

        send(_call(7, "store_memory", {"key": "after", "value": "still serving"}))
        stored = answer(7)["result"]
        assert stored.get("isError") is not True, stored
        send(_call(8, "memory-search", {"query": "serving"}))
        found = answer(8)["result"]["structuredContent"]["results"]
        assert [r["key"] for r in found] == ["after"]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(timeout=30)
        reader.join(timeout=30)
        proc.stdin.close()
        stdout.close()
