"""SessionStart: print the agent's most relevant memories as a `<memories>` block; Claude
Code adds a hook's stdout to the model's context. Nothing is printed when there are none.

On a SQLite file the block is read through the standard library (app/reads.py): no
SQLAlchemy, no model, no workers, so the hook answers in a fraction of a second. Its project
is the work tree of the payload's `cwd` (hooks/job.settings_for), as the app's would be."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_mcp.errors import StoreMissingError
from memory_mcp.hooks.job import settings_for
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.app.opener import AppOpener


def run(payload: dict[str, Any], open_app: AppOpener, settings: Settings | None = None) -> int:
    settings = settings_for(payload, settings)
    if settings.team_server is not None:
        from memory_mcp.app import team_client as team

        block = team.run_remote(settings.team_server, team.context_block, settings.project)
        if block:
            print(block, flush=True)
        return 0
    try:
        block = _block(settings, open_app)
    except StoreMissingError:
        return 0  # nothing stored yet: nothing to recall, and reading creates nothing
    if block:
        print(block, flush=True)
    return 0


def _block(settings: Settings, open_app: AppOpener) -> str:
    from memory_mcp.app import reads

    block = reads.memories_block(settings)
    if block is not None:
        return block
    # Not a SQLite file the standard library can read as it is: the app, as a server has it.
    from memory_mcp.hooks.job import run_with_app
    from memory_mcp.rules.memories_block import memories_block

    async def job(app: AppContext) -> str:
        return await memories_block(app.service, app.caller, limits=reads.block_limits(settings))

    return run_with_app(open_app, settings, job, create=False)
