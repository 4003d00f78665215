"""Start-up: the server never imports torch (it runs the model with ONNX Runtime, and a
missing ONNX file is exported by a child process), and the CLI's `hook` with nothing to
do loads no store, no model and no MCP SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import call
from tests.mcp.test_stdio_e2e import EXE, server_env

HEAVY = (
    "sqlalchemy",
    "aiosqlite",
    "numpy",
    "mcp",
    "torch",
    "onnxruntime",
    "tokenizers",
    "sentence_transformers",
    "memory_mcp.store",
    "memory_mcp.app.root",
)


def pids_running(marker: str) -> list[int]:
    """Processes whose command line contains `marker` (a path unique to one test)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.anyio
async def test_serve_exports_a_missing_model_in_a_child_and_never_loads_torch(
    tmp_path: Path,
) -> None:
    db = tmp_path / "startup.db"
    models = tmp_path / "models"  # empty: the server must export the model itself
    env = {
        **server_env(tmp_path),
        "MEMORY_MCP_MODEL_DIR": str(models),
        "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "0",
    }
    params = StdioServerParameters(command=EXE, args=["serve", "--db", str(db)], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        await call(client, "memory-store", key="pets", value="The office cat is called Miso")
        deadline = time.monotonic() + 600
        while True:
            result = await call(client, "memory-search", query="name of our feline", limit=3)
            if result["semantic"] is False:  # keyword-only meanwhile, and it says so
                assert "keyword search only" in result["notices"][0]
            top = result["results"][0]["key"] if result["results"] else None
            if result["semantic"] and top == "pets":
                break
            assert time.monotonic() < deadline, f"never found by meaning: {result}"
            await anyio.sleep(0.5)
        assert result["results"][0]["matched_by"] == "vector"
        assert [p.suffix for p in models.iterdir() if p.suffix == ".onnx"] == [".onnx"]

        servers = [p for p in pids_running(str(db)) if p != os.getpid()]
        assert servers, "the server process was not found"
        for pid in servers:
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert "onnxruntime" in maps, "the model runs in the server process"
            assert "libtorch" not in maps, "torch was loaded into the server"


def test_the_cli_hook_with_nothing_to_do_loads_no_store_model_or_sdk() -> None:
    """`memory-mcp hook post-tool-use` for a file outside the memory folders, through the
    CLI's `main` (the hooks' own entry point and `--version` are
    tests/test_light_entry_points.py's, as the processes a user starts)."""
    script = """
import io, json, sys
from memory_mcp.cli.main import main
payload = {"tool_name": "Write", "tool_input": {"file_path": "/tmp/app.py"}}
sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode()))
try:
    code = main(["hook", "post-tool-use"])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] in (0, None)
    loaded = {m for m in report["modules"] if m.startswith(HEAVY)}
    assert not loaded, f"the hook imported {sorted(loaded)}"
