"""`python -m memory_mcp.hooks EVENT`: what Claude Code runs for a hook."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from memory_mcp.hooks.runner import main

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from memory_mcp.app.context import AppContext
    from memory_mcp.semantic.embeddings import Embedder
    from memory_mcp.settings import Settings


def open_app_when_called(
    settings: Settings,
    embedder: Embedder | None = None,
    background: bool = True,
    create: bool = True,
) -> AbstractAsyncContextManager[AppContext]:
    """app.open_app, imported only once a hook has real work: most hook calls (a file
    written outside the memory folders) end before anything heavy is imported.
    cli/launch.py has the same for `memory-mcp hook`: one edge does not import another."""
    from memory_mcp.app.root import open_app

    return open_app(settings, embedder, background, create)


if __name__ == "__main__":
    sys.exit(main(open_app=open_app_when_called))
