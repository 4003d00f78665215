"""The stdio server's stdout (memory_mcp/mcp/stdout_frames.py): messages written from the event
loop reach the pipe whole even when the pipe is full and the client reads slowly, stray
prints go to stderr while the server runs, and fd 1 is the wire again afterwards. Run in a
child process, whose fd 1 is a real pipe (pytest captures its own)."""

from __future__ import annotations

import subprocess
import sys
import time

CHILD = """
import sys, anyio
from memory_mcp.mcp.stdout_frames import claimed_stdout

async def main():
    with claimed_stdout() as stdout:
        print("stray print", flush=True)
        await stdout.write("A" * 1_000_000 + "\\n")
        await stdout.write("second message\\n")
        await stdout.flush()
    print("after", flush=True)

anyio.run(main)
"""


def test_a_message_larger_than_the_pipe_arrives_whole_and_stray_prints_miss_the_wire() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    time.sleep(1.0)  # the child fills the 64 KB pipe and must wait for room, not fail
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    lines = out.decode().split("\n")
    assert lines[0] == "A" * 1_000_000
    assert lines[1:] == ["second message", "after", ""]
    assert "stray print" in err.decode()
