"""`python -m bench.claude_first_start DIST [--busy N]`: a new user's first starts of the
plugin in the real Claude Code CLI, timed. Claude Code (from .venv/npm) installs the plugin
from this repository's marketplace in a temp HOME; then `claude mcp list` (30 s to connect,
5 s for tools/list) runs three times: the first is the server's first start, uvx installing
it into an empty uv cache (the built wheels of DIST, from `make dist`, where PyPI will have
them; the rest from PyPI), the later ones start from that cache. `--busy N` spins N processes
on the CPU meanwhile (load >= N on top of whatever else runs). Prints each run's seconds and
status line, and the load.

A benchmark, not a test: whether a start fits in Claude Code's 30 s depends on the machine
and its load (on this 2-core machine at load ~25 no start did), which a test cannot hold."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / ".venv" / "npm" / "node_modules" / ".bin" / "claude"
SPIN = "import time\nend = time.time() + 900\nwhile time.time() < end: pass"


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
        (tools / "uvx").symlink_to(ROOT / ".venv" / "bin" / "uvx")  # uvx alone on PATH
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
            load = os.getloadavg()[0]
        finally:
            for process in busy:
                process.kill()
                process.wait()
    print(f"load {load:.1f} ({args.busy} busy loops), {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
