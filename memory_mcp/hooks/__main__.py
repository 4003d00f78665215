"""`python -m memory_mcp.hooks EVENT`: what Claude Code runs for a hook (hooks/memory-mcp-hook
calls `run` the same way)."""

from __future__ import annotations

import sys

from memory_mcp.app.opener import open_app_when_called
from memory_mcp.hooks.runner import main


def run() -> int:
    return main(open_app=open_app_when_called)


if __name__ == "__main__":
    sys.exit(run())
