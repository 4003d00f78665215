"""Open the store for one hook, within the hook's time budget. No background workers and
no embedding model (loading it takes seconds): the server's embedding worker embeds what
a hook writes, and keyword search sees it at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from memory_mcp.app import open_app
from memory_mcp.app_context import AppContext
from memory_mcp.limits import JOB_BUDGET_SECONDS
from memory_mcp.settings import Settings

T = TypeVar("T")


def run_with_app(
    settings: Settings, job: Callable[[AppContext], Awaitable[T]], create: bool = True
) -> T:
    """`create=False` for hooks that only read: no store yet raises StoreMissingError."""

    async def runner() -> T:
        with anyio.fail_after(JOB_BUDGET_SECONDS):
            async with open_app(settings, background=False, create=create) as app:
                return await job(app)

    return anyio.run(runner)
