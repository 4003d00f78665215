"""`python -m memory_mcp.hooks EVENT`: what Claude Code runs for a hook."""

from __future__ import annotations

import sys

from memory_mcp.app.opener import open_app_when_called
from memory_mcp.hooks.runner import main

if __name__ == "__main__":
    sys.exit(main(open_app=open_app_when_called))
