"""`python -m bench.claude_first_start DIST [--busy N]`: a new user's first starts of the
plugin in the real Claude Code CLI, timed. Claude Code (from .venv/npm) installs the plugin
from this repository's marketplace in a temp HOME; then `claude mcp list` (30 s to connect,
5 s for tools/list) runs three times: the first is the server's first start, uvx installing
it into an empty uv cache (the built wheels of DIST, from `make dist`, where PyPI will have
them; the rest from PyPI), the later ones start from that cache. `--busy N` spins N processes
on the CPU meanwhile (load >= N on top of whatever else runs). Prints each run's seconds and
status line, and the load; and for each start of the server, the seconds from Claude Code's
spawn of `uvx` to the server's first stderr line, its `initialize` answer and its
`tools/list` answer (the `uvx` on PATH is a relay, `RELAY`, that starts the real one and
stamps the lines passing through; it adds one Python start, ~0.1 s quiet, before uvx).

A benchmark, not a test: whether a start fits in Claude Code's 30 s depends on the machine
and its load (on this 2-core machine at load ~25 no start did), which a test cannot hold."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / ".venv" / "npm" / "node_modules" / ".bin" / "claude"
SPIN = "import time\nend = time.time() + 900\nwhile time.time() < end: pass"
# The `uvx` Claude Code finds: the real one behind a relay of stdin, stdout and stderr,
# which appends to $BENCH_RELAY_LOG when the first stderr line, the answer to `initialize`
# (id of the first request) and the one to `tools/list` passed, in seconds since its start.
RELAY = """
import json, os, subprocess, sys, threading, time
began = time.monotonic()
child = subprocess.Popen([REAL, *sys.argv[1:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0)
stamps, asked = {}, {}
def stamp(name):
    if name not in stamps:  # written at once: Claude Code ends the server with a signal
        stamps[name] = round(time.monotonic() - began, 2)
        with open(os.environ["BENCH_RELAY_LOG"], "a") as log:
            log.write(json.dumps([os.getpid(), name, stamps[name]]) + "\\n")
def pump(source, sink, lines):
    pending = b""
    while chunk := os.read(source.fileno(), 65536):
        os.write(sink, chunk)
        if sink == 2:
            stamp("first line")
            continue
        pending += chunk
        *done, pending = pending.split(b"\\n")
        for line in done:
            lines(line)
    if sink != 2:
        os.close(sink) if sink > 2 else None
def asked_for(line):
    try:
        message = json.loads(line)
    except ValueError:
        return
    if "method" in message and "id" in message:
        asked[message["id"]] = message["method"]
def answered(line):
    try:
        message = json.loads(line)
    except ValueError:
        return
    method = asked.get(message.get("id"))
    if method in ("initialize", "tools/list"):
        stamp(method)
def feed():
    pending = b""
    while chunk := os.read(0, 65536):
        pending += chunk
        *done, pending = pending.split(b"\\n")
        for line in done:
            asked_for(line)
        child.stdin.write(chunk)
    child.stdin.close()
threading.Thread(target=feed, daemon=True).start()
errors = threading.Thread(target=pump, args=(child.stderr, 2, None))
errors.start()
pump(child.stdout, 1, answered)
sys.exit(child.wait())
"""


def claude(*args: str | Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(CLAUDE), *map(str, args)], capture_output=True, text=True, env=env, cwd=env["HOME"]
    )
    if done.returncode != 0:
        raise SystemExit(f"claude {' '.join(map(str, args))}: {done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.claude_first_start")
    parser.add_argument("dist", type=Path, help="the folder `make dist` wrote (the wheels)")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        home, tools = Path(tmp) / "home", Path(tmp) / "bin"
        home.mkdir()
        tools.mkdir()
        relay = tools / "uvx"  # uvx alone on PATH, behind the relay
        real = repr(str(ROOT / ".venv" / "bin" / "uvx"))
        relay.write_text(f"#!{sys.executable}\nREAL = {real}\n{RELAY}", encoding="utf-8")
        relay.chmod(0o755)
        stamps = Path(tmp) / "relay.jsonl"
        keep = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_MCP_")}
        env = {
            **keep,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
            "UV_CACHE_DIR": str(Path(tmp) / "uv-cache"),  # cold
            "UV_FIND_LINKS": str(args.dist.resolve()),
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "BENCH_RELAY_LOG": str(stamps),
        }
        claude("plugin", "marketplace", "add", ROOT, env=env)
        claude("plugin", "install", "memory-mcp@memory-mcp", env=env)
        busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
        try:
            for run in range(args.runs):
                started = time.monotonic()
                listed = claude("mcp", "list", env=env)
                seconds = time.monotonic() - started
                line = next((x for x in listed.splitlines() if "memory-mcp" in x), listed)
                label = "first start" if run == 0 else "later start"
                print(f"{label}: {seconds:.1f} s  {line.strip()}", flush=True)
                for start in _read_stamps(stamps):
                    print(f"  server start, seconds after uvx's spawn: {start}", flush=True)
            load = os.getloadavg()[0]
        finally:
            for process in busy:
                process.kill()
                process.wait()
    print(f"load {load:.1f} ({args.busy} busy loops), {os.cpu_count()} cores")
    return 0


def _read_stamps(path: Path) -> list[str]:
    """The relay's stamps of the starts since the last read (the file is emptied)."""
    if not path.exists():
        return []
    starts: dict[int, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        pid, name, seconds = json.loads(line)
        starts.setdefault(pid, {})[name] = seconds
    path.unlink()
    return [", ".join(f"{name} {s:.1f}" for name, s in start.items()) for start in starts.values()]


if __name__ == "__main__":
    sys.exit(main())
