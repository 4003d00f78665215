"""The two entry points that must answer at once load nothing heavy: `memory-mcp --version`
and a Claude Code hook with nothing to do (a file written outside the memory folders).
Each runs as the real process a user or Claude Code starts, with Python's import log
(PYTHONPROFILEIMPORTTIME) read back: neither the store, the model nor the MCP SDK (nor
pydantic, numpy or SQLAlchemy under them) may appear in it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.hooks.test_hooks import hook_env, post_tool_use, run_hook
from tests.mcp.test_stdio_e2e import EXE

HEAVY = (
    "memory_mcp.store",
    "memory_mcp.app.root",
    "memory_mcp.rules.service",
    "memory_mcp.semantic",
    "memory_mcp.mcp",
    "mcp",
    "pydantic",
    "sqlalchemy",
    "aiosqlite",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "torch",
)


def imported(import_log: str) -> set[str]:
    """The modules named in `-X importtime` lines: 'import time: self | cumulative | name'."""
    names = set()
    for line in import_log.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


def test_version_imports_no_store_model_or_sdk() -> None:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([EXE, "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("memory-mcp ")
    names = imported(done.stderr)
    assert "memory_mcp.cli.main" in names  # the log is read, not empty
    assert heavy(names) == []


def test_a_hook_with_nothing_to_do_imports_no_store_model_or_sdk(tmp_path: Path) -> None:
    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    (tmp_path / "memory").mkdir()
    outside = tmp_path / "app.py"
    outside.write_text("print('hello')")
    done, _elapsed = run_hook("post-tool-use", post_tool_use(outside), env)
    assert done.returncode == 0 and done.stdout == ""
    names = imported(done.stderr)
    assert "memory_mcp.hooks.runner" in names
    assert heavy(names) == []
