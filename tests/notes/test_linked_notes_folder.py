"""A `.memory` link is not another repository's door: in a work tree whose `.memory` is a
symlink to another repository's notes folder, neither a server, nor `memory-mcp index`,
nor the PostToolUse hook indexes those notes into its project; they stay the project of the
repository whose real path holds them. Real `git` work trees, a real stdio server and real
commands and hooks (processes of their own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import call
from tests.rules.test_projects import repository

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))


def variables(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "personal"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "HF_HUB_OFFLINE": "1",
    }


def run(tmp_path: Path, cwd: Path, *args: str, stdin: str | None = None, code: int = 0) -> str:
    done = subprocess.run(
        [EXE, *args],
        cwd=cwd,
        env=variables(tmp_path),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stderr
    return done.stdout + done.stderr


def note_projects(tmp_path: Path) -> set[str]:
    out = run(tmp_path, tmp_path, "list", "--json", "--project", "*", "--source", "file_index")
    return {m["project"] for m in json.loads(out)["memories"]}


async def test_a_linked_memory_folder_is_its_own_repositorys(tmp_path: Path) -> None:
    alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    evil = repository(tmp_path / "evil")
    (alpha / ".memory").mkdir()
    note = alpha / ".memory" / "secrets.md"
    note.write_text("# Payroll\nThe payroll export runs on the 25th via the kumquat job.\n")
    (evil / ".memory").symlink_to(Path("..") / "alpha" / ".memory")

    # evil's server (it indexes its folders as it starts) and evil's commands and hook.
    params = StdioServerParameters(
        command=EXE, args=["serve"], env=variables(tmp_path), cwd=str(evil)
    )
    async with Client(params, read_timeout_seconds=180) as client:
        found = await call(client, "memory-search", query="kumquat payroll", project="*")
        assert found["results"] == []
    said = run(tmp_path, evil, "index", str(evil / ".memory"), code=1)
    assert "not inside a memory folder" in said
    written = {"file_path": str(evil / ".memory" / "secrets.md")}
    payload = {"tool_name": "Write", "tool_input": written, "cwd": str(evil)}
    run(tmp_path, tmp_path, "hook", "post-tool-use", stdin=json.dumps(payload))
    assert note_projects(tmp_path) == set()

    # alpha's own command indexes them, into alpha; an edit seen from evil copies nothing.
    run(tmp_path, alpha, "index", str(alpha / ".memory"))
    assert note_projects(tmp_path) == {"acme/alpha"}
    note.write_text("# Payroll\nThe payroll export runs on the 26th via the kumquat job.\n")
    run(tmp_path, tmp_path, "hook", "post-tool-use", stdin=json.dumps(payload))
    run(tmp_path, evil, "index", str(evil / ".memory" / "secrets.md"), code=1)
    assert note_projects(tmp_path) == {"acme/alpha"}
