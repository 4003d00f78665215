"""Run one hook event, never blocking or breaking the client.

Claude Code waits for a hook, shows a non-zero exit as a hook error, and treats exit code
2 as "block and show stderr to the model". So: every hook exits 0, even on its own errors
(one line on stderr says what went wrong); a watchdog ends the process after
HOOK_BUDGET_SECONDS whatever it is doing; and the cheap checks come before any heavy
import (only the standard library is loaded until a hook has real work)."""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_mcp.limits import HOOK_BUDGET_SECONDS

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener

EVENTS = ("post-tool-use", "session-start", "user-prompt", "session-end", "pre-compact", "stop")
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})


def _say(event: str, message: str) -> None:
    print(f"memory-mcp hook {event or '?'}: {message}", file=sys.stderr, flush=True)


def _give_up(event: str) -> None:
    _say(event, f"gave up after {HOOK_BUDGET_SECONDS:g} s")
    os._exit(0)  # from the watchdog thread: the main thread may be stuck in I/O


def written_path(payload: dict[str, Any]) -> str | None:
    """The note a Write/Edit/MultiEdit touched, or None when it cannot be a note; cheap."""
    from memory_mcp.notes.paths import is_note_name  # standard library only

    tool = payload.get("tool_name")
    if tool is not None and tool not in WRITE_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(path, str) or not is_note_name(Path(path).name):
        return None
    return path


def _handler(event: str, payload: dict[str, Any], open_app: AppOpener) -> Callable[[], int] | None:
    if event == "post-tool-use":
        path = written_path(payload)
        if path is None:
            return None
        from memory_mcp.hooks import post_tool_use

        return lambda: post_tool_use.run(path, payload, open_app)
    if event == "session-start":
        from memory_mcp.hooks import session_start

        return lambda: session_start.run(payload, open_app)
    if event == "user-prompt":
        from memory_mcp.hooks import user_prompt

        return lambda: user_prompt.run(payload, open_app)
    if event in ("session-end", "pre-compact", "stop"):
        from memory_mcp.hooks import session_end

        return lambda: session_end.run(payload, open_app)
    raise ValueError(f"unknown event; expected one of {', '.join(EVENTS)}")


def main(
    argv: list[str] | None = None,
    stdin: bytes | None = None,
    watchdog: bool = True,
    *,
    open_app: AppOpener,
) -> int:
    """`open_app`: app.open_app, called only by a hook with real work (the callers pass
    one that imports the store when called). `watchdog=False` is for running a hook
    inside another process (tests): the watchdog ends the whole process, which is right
    for a hook and wrong for pytest."""
    args = sys.argv[1:] if argv is None else argv
    event = args[0] if args else ""
    timer = threading.Timer(HOOK_BUDGET_SECONDS, _give_up, args=(event,))
    timer.daemon = True
    if watchdog:
        timer.start()
    try:
        raw = sys.stdin.buffer.read() if stdin is None else stdin
        payload = json.loads(raw.decode("utf-8", errors="replace") or "{}")
        if not isinstance(payload, dict):
            raise ValueError("the hook input is not a JSON object")
        handler = _handler(event, payload, open_app)
        if handler is None:
            return 0
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format="memory-mcp: %(message)s"
        )
        return handler()
    except Exception as exc:  # the hook's top level: report in one line, never break
        _say(event, f"{type(exc).__name__}: {exc}")
        return 0
    finally:
        timer.cancel()
