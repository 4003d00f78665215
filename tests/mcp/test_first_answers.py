"""`initialize` and `tools/list` are answered from what the server built at start, never
behind the opening of the store: a fresh `memory-mcp serve` over stdio answers both while
importing the store's code is held up. The hold is the test's own: a `sitecustomize`
(on PYTHONPATH) whose import hook makes `memory_mcp.app.root` wait for a file that the
test writes only once it has the `tools/list` answer. A server that imported it on its
event loop could not answer until then. (The whole-process timing against a bare `import
mcp`: bench/first_answers.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

from tests.mcp.test_stdio_e2e import EXE, server_env

ANSWER_DEADLINE_SECONDS = 120.0  # a loaded machine; the hold itself never lets go before
HOOK = """
import importlib.abc, os, sys, time

class HoldTheStoreImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "memory_mcp.app.root":
            gate = os.environ["HOLD_UNTIL_FILE"]
            deadline = time.monotonic() + 300
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.02)
        return None  # the usual finders import it

sys.meta_path.insert(0, HoldTheStoreImport())
"""


def answer(stdout: IO[str], wanted: int) -> dict[str, Any]:
    for line in stdout:
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == wanted:
            return message
    raise AssertionError("the server closed stdout before answering")


def send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def test_tools_list_is_answered_while_the_store_code_is_still_importing(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK, encoding="utf-8")
    gate = tmp_path / "let-the-store-import"
    env = {
        **server_env(tmp_path),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
        "HOLD_UNTIL_FILE": str(gate),
        "MEMORY_MCP_WATCH": "false",
    }
    server = subprocess.Popen(
        [EXE, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert server.stdin is not None and server.stdout is not None
    stdin, stdout = server.stdin, server.stdout
    listed: dict[str, Any] = {}

    def client() -> None:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }
        send(stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        answer(stdout, 1)
        send(stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        listed.update(answer(stdout, 2))

    talking = threading.Thread(target=client, daemon=True)
    try:
        talking.start()
        talking.join(ANSWER_DEADLINE_SECONDS)
        store_imported = not gate.exists()  # the hold is still on: nothing let it go
        assert store_imported and listed, "tools/list waited for the store's code"
        names = {tool["name"] for tool in listed["result"]["tools"]}
        assert "memory-store" in names or "store_memory" in names, names
        # Let go: the store opens and the first call is served as usual.
        gate.write_text("go", encoding="utf-8")
        send(
            stdin,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "memory-search", "arguments": {"query": "anything"}},
            },
        )
        called = answer(stdout, 3)
        assert "error" not in called and not called["result"].get("isError"), called
    finally:
        gate.write_text("go", encoding="utf-8")
        stdin.close()
        server.wait(timeout=ANSWER_DEADLINE_SECONDS)
        stdout.close()
