"""Open the store for one hook, within the hook's time budget. No background workers and
no embedding model (loading it takes seconds): the server's embedding worker embeds what
a hook writes, and keyword search sees it at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TypeVar

from memory_mcp.limits import JOB_BUDGET_SECONDS
from memory_mcp.rules.projects import EVERY_PROJECT, current_project
from memory_mcp.settings import Settings

T = TypeVar("T")
App = TypeVar("App")  # app_context.AppContext; not imported: the hooks stay shallow


def settings_for(payload: dict[str, Any], settings: Settings | None = None) -> Settings:
    """A hook's settings, its project the work tree of the payload's `cwd` (where Claude
    Code runs), unless one is named (--project, MEMORY_MCP_PROJECT, the settings file);
    `*` (none) outside any work tree."""
    settings = settings or Settings()
    cwd = payload.get("cwd")
    if settings.project is None and isinstance(cwd, str) and cwd:
        project = current_project(None, Path(cwd)) or EVERY_PROJECT
        settings = settings.model_copy(update={"project": project})
    return settings


def run_with_app(
    open_app: Callable[..., AbstractAsyncContextManager[App]],
    settings: Settings,
    job: Callable[[App], Awaitable[T]],
    create: bool = True,
) -> T:
    """`open_app`: app.open_app, from the hook's caller (hooks/__main__.py, cli/launch.py).
    `create=False` for hooks that only read: no store yet raises StoreMissingError."""
    import anyio  # here: SessionStart's light road (settings_for, app/reads.py) needs none

    async def runner() -> T:
        with anyio.fail_after(JOB_BUDGET_SECONDS):
            async with open_app(settings, background=False, create=create) as app:
                return await job(app)

    return anyio.run(runner)
