"""`python -m bench.first_answers [--exe MEMORY_MCP] [--runs N]`: how soon a fresh
`memory-mcp serve` answers what a client asks first, against a bare `python -c "import
mcp"` of the same environment, in one run.

Each run spawns the server over stdio as a client does, in a new HOME (a store that does
not exist yet), and times, from the spawn: the server's first line on stderr, the
`initialize` answer, and the `tools/list` answer sent right after the client's
`notifications/initialized` (what `claude mcp list` waits for). The floor, `python -c
"import mcp"` with the server's Python, runs between two servers, so both see the same
load. Prints each median, the ratio of `initialize` + `tools/list` to the floor, and the
load average (the machine is shared: compare ratios, not seconds). The server is the one
given (`--exe`: e.g. the `memory-mcp` of an environment the built wheels were installed
into; this environment's by default), or a command that starts it (`--command "uvx
--quiet memory-mcp-kit@0.1.0"`: the plugin's; `serve` is added), whose first stderr line
then says what each start costs before the server runs (uv's own check and start)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PROTOCOL = "2025-06-18"
GIVE_UP_SECONDS = 120.0


@dataclass(frozen=True)
class FirstAnswers:
    """Seconds from the spawn of one server process."""

    first_log_line: float | None  # None: nothing on stderr before tools/list
    initialize: float
    tools_list: float
    tools: int


def _read_answer(stdout: IO[str], wanted_id: int) -> dict[str, object]:
    while True:
        line = stdout.readline()
        if not line:
            raise RuntimeError("the server closed its stdout before answering")
        message = json.loads(line)
        if message.get("id") == wanted_id:
            answer: dict[str, object] = message
            return answer


def _send(stdin: IO[str], message: dict[str, object]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def first_answers(command: list[str], env: dict[str, str]) -> FirstAnswers:
    """One fresh server: spawn, initialize, tools/list, close."""
    with tempfile.TemporaryDirectory(prefix="first-answers-") as scratch:
        home = Path(scratch)
        env = {
            **env,
            "HOME": str(home),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
        first_log: list[float] = []
        started = time.perf_counter()
        server = subprocess.Popen(
            [*command, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=home,
        )
        assert server.stdin is not None and server.stdout is not None
        assert server.stderr is not None
        stderr = server.stderr

        def watch_stderr() -> None:
            for _ in iter(stderr.readline, ""):
                if not first_log:
                    first_log.append(time.perf_counter() - started)

        watcher = threading.Thread(target=watch_stderr, daemon=True)
        watcher.start()
        try:
            _send(
                server.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": PROTOCOL,
                        "capabilities": {},
                        "clientInfo": {"name": "first-answers", "version": "1"},
                    },
                },
            )
            _read_answer(server.stdout, 1)
            initialized = time.perf_counter() - started
            _send(server.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            _send(server.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            listed = _read_answer(server.stdout, 2)
            tools_listed = time.perf_counter() - started
            result = listed.get("result")
            tools = len(result.get("tools", [])) if isinstance(result, dict) else 0
            first_line = first_log[0] if first_log and first_log[0] <= tools_listed else None
        finally:
            server.stdin.close()
            try:
                server.wait(timeout=GIVE_UP_SECONDS)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        return FirstAnswers(first_line, initialized, tools_listed, tools)


def bare_import(python: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([python, "-c", "import mcp"], env=env, check=True)
    return time.perf_counter() - started


def python_of(exe: str) -> str:
    """The interpreter of a console script (its #! line)."""
    first = Path(exe).read_text(encoding="utf-8", errors="replace").splitlines()[0]
    return first.removeprefix("#!").strip() if first.startswith("#!") else sys.executable


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_MCP_")}
    env["MEMORY_MCP_WATCH"] = "false"
    return env


def measure(command: list[str], python: str, runs: int) -> dict[str, object]:
    env = server_env()
    bare_import(python, env)  # warm the file cache for both sides alike
    first = first_answers(command, env)  # for uvx with a new cache: the install too
    floors, servers = [], []
    for _ in range(runs):
        floors.append(bare_import(python, env))
        servers.append(first_answers(command, env))
    floor = statistics.median(floors)
    listed = statistics.median(s.tools_list for s in servers)
    logs = [s.first_log_line for s in servers if s.first_log_line is not None]
    return {
        "exe": " ".join(command),
        "runs": runs,
        "bare_import_mcp_s": floor,
        "first_log_line_s": statistics.median(logs) if logs else None,
        "initialize_s": statistics.median(s.initialize for s in servers),
        "tools_list_s": listed,
        "ratio": listed / floor,
        "first_start": {
            "first_log_line_s": first.first_log_line,
            "initialize_s": first.initialize,
            "tools_list_s": first.tools_list,
        },
        "tools": sorted({s.tools for s in servers}),
        "load": os.getloadavg(),
    }


def render(result: dict[str, object]) -> str:
    def ms(key: str) -> str:
        value = result[key]
        return f"{float(value) * 1000:.0f} ms" if isinstance(value, float) else "none"

    def seconds(value: object) -> str:
        return f"{float(value) * 1000:.0f} ms" if isinstance(value, float) else "none"

    load, first = result["load"], result["first_start"]
    assert isinstance(load, tuple) and isinstance(first, dict)
    return "\n".join(
        [
            f"fresh `{result['exe']} serve`, medians of {result['runs']} runs "
            f"(load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}):",
            f"  python -c 'import mcp'           {ms('bare_import_mcp_s')}",
            f"  server: first stderr line        {ms('first_log_line_s')}",
            f"  server: initialize answered      {ms('initialize_s')}",
            f"  server: tools/list answered      {ms('tools_list_s')} ({result['tools']} tools)",
            f"  initialize + tools/list / bare import: {float(str(result['ratio'])):.2f}x",
            f"  the first start (not in the medians): first stderr line "
            f"{seconds(first['first_log_line_s'])}, initialize {seconds(first['initialize_s'])}, "
            f"tools/list {seconds(first['tools_list_s'])}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_answers", description=__doc__)
    parser.add_argument(
        "--exe",
        default=str(Path(sys.executable).parent / "memory-mcp"),
        help="the memory-mcp to spawn (default: this environment's)",
    )
    parser.add_argument(
        "--command",
        help="a command that starts memory-mcp (`serve` is added), instead of --exe",
    )
    parser.add_argument(
        "--python", help="the Python of the floor (default: the one of --exe, or this one)"
    )
    parser.add_argument("--runs", type=int, default=9, help="runs of each (default 9)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = parser.parse_args(argv)
    command = shlex.split(args.command) if args.command else [args.exe]
    python = args.python or (python_of(args.exe) if not args.command else sys.executable)
    result = measure(command, python, args.runs)
    print(render(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
