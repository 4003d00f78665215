"""SessionStart: print the agent's most relevant memories as a `<memories>` block; Claude
Code adds a hook's stdout to the model's context. Nothing is printed when there are none."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_mcp.app.context import AppContext
from memory_mcp.errors import StoreMissingError
from memory_mcp.hooks.job import run_with_app
from memory_mcp.rules.memories_block import memories_block
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener


def run(payload: dict[str, Any], open_app: AppOpener, settings: Settings | None = None) -> int:
    settings = settings or Settings()

    async def job(app: AppContext) -> str:
        return await memories_block(app.service, app.caller)

    if settings.team_server is not None:
        from memory_mcp.app import team_client as team

        block = team.run_remote(settings.team_server, team.context_block)
        if block:
            print(block, flush=True)
        return 0
    try:
        block = run_with_app(open_app, settings, job, create=False)
    except StoreMissingError:
        return 0  # nothing stored yet: nothing to recall, and reading creates nothing
    if block:
        print(block, flush=True)
    return 0
