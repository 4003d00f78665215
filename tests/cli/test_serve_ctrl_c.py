"""One Ctrl-C stops `memory-mcp serve` even while it waits for input that never comes (a
terminal, as with `make serve`, or a client that keeps the pipe open)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import initialize_request

EXE = str(Path(sys.executable).with_name("memory-mcp"))

INITIALIZE = initialize_request("test")


def test_one_sigint_stops_a_server_waiting_on_stdin(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_MCP_")}
    # faulthandler: if the server ever hangs here (it did twice under a loaded suite, and
    # never when run alone), SIGABRT makes it print every thread's stack for the report.
    env.update(HF_HUB_OFFLINE="1", XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONFAULTHANDLER="1")
    with subprocess.Popen(
        [EXE, "serve", "--db", str(tmp_path / "m.db"), "--memory-dir", str(tmp_path / "notes")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as process:
        assert process.stdin
        assert process.stdout
        assert process.stderr
        try:
            process.stdin.write(json.dumps(INITIALIZE) + "\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())  # serving: handshake answered
            assert answer["id"] == 1
            assert "serverInfo" in answer["result"]
            time.sleep(1.0)  # let the lifespan's workers start; the stdin pipe stays open
            process.send_signal(signal.SIGINT)
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGABRT)
                _, stacks = process.communicate(timeout=30)
                raise AssertionError(f"no exit 60 s after one SIGINT; threads:\n{stacks}") from None
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        stderr = process.stderr.read()
    assert code == 130, stderr
    assert "stopped (Ctrl-C)" in stderr
    assert "Traceback" not in stderr
