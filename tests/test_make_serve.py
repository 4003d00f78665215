"""`make serve` as a client's command: stdout is the MCP channel, so the first line on it
must be the answer to `initialize`. make used to echo its commands (the model step, the
server's own command line) onto stdout ahead of it, which a client reads as a broken
message. The test runs the real Makefile in this checkout, whose .venv `make test` made."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.conftest import initialize_request

ROOT = Path(__file__).resolve().parent.parent


def test_make_serve_writes_only_protocol_messages_to_stdout(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["MEMORY_MCP_DB"] = str(tmp_path / "memory.db")
    env["MEMORY_MCP_MEMORY_DIR"] = str(tmp_path / "notes")
    proc = subprocess.Popen(
        ["make", "--no-print-directory", "-C", str(ROOT), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps(initialize_request("make-serve-test")) + "\n")
        proc.stdin.flush()
        first = proc.stdout.readline()
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    answer = json.loads(first)  # an echoed command line is not JSON
    assert answer["id"] == 1 and "serverInfo" in answer["result"]
