"""How a way in asks for the app: AppOpener, app.root.open_app's signature, and
open_app_when_called, the opener the entry points hand the servers and the hooks. Apart
from app/context.py because it calls into app/root.py, which imports that module."""

from __future__ import annotations

import importlib
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.semantic.embeddings import Embedder
    from memory_mcp.settings import Settings


class AppOpener(Protocol):
    """app.root.open_app's signature: the entry points (cli/launch.py, the hooks' entry)
    and the tests pass open_app_when_called or open_app itself to the servers and the
    hooks, which open the app when they start."""

    def __call__(
        self,
        settings: Settings,
        embedder: Embedder | None = ...,
        background: bool = ...,
        create: bool = ...,
    ) -> AbstractAsyncContextManager[AppContext]: ...


def open_app_when_called(
    settings: Settings,
    embedder: Embedder | None = None,
    background: bool = True,
    create: bool = True,
) -> AbstractAsyncContextManager[AppContext]:
    """app.root.open_app, imported when called: the stdio server opens its app once the
    client has its handshake answer, and a hook only once it has real work, so neither
    pays for importing the store, numpy and SQLAlchemy before that. The entry points
    (cli/launch.py, the hooks' __main__) hand this to the servers and the hooks."""
    from memory_mcp.app.root import open_app

    return open_app(settings, embedder, background, create)


async def import_app_off_the_loop() -> None:
    """Import app.root (and so SQLAlchemy, numpy, the store and the search: about a second
    of CPU here, far more on a loaded machine) in a worker thread, before opening it on the
    event loop. The loop keeps answering meanwhile: a client's `tools/list`, sent right
    after the handshake that starts the opening, waited behind these imports (1.5 s at
    load 7). The thread holds the interpreter lock only in slices, so the loop's few
    milliseconds of work get through; an import already done costs nothing. (anyio here:
    `--version` and the hooks' fast path import this module and never this function.)"""
    import anyio.to_thread

    await anyio.to_thread.run_sync(importlib.import_module, "memory_mcp.app.root")
