"""UserPromptSubmit: the memories of the current project (and `*`) that the user's prompt
is about, as a `<memories>` block Claude Code adds to the model's context with the prompt
(`hookSpecificOutput.additionalContext`); nothing when none is relevant enough
(rules/prompt_recall.py decides, by words; the budget is `prompt_max_tokens`).

It runs at every prompt, so it takes SessionStart's light road: on a SQLite file the
keyword index is read through the standard library (app/reads.py), no SQLAlchemy and no
model. A store those reads cannot serve (PostgreSQL, one an older version made that the
server has not migrated yet) and a team server get no block from it."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from memory_mcp.errors import StoreMissingError
from memory_mcp.hooks.job import settings_for
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener

# A bare slash command (/clear, /compact) asks nothing of the memories.
_COMMAND = re.compile(r"/[\w:-]+")


def run(payload: dict[str, Any], open_app: AppOpener, settings: Settings | None = None) -> int:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or _COMMAND.fullmatch(prompt.strip()):
        return 0
    settings = settings_for(payload, settings)
    if settings.team_server is not None:
        return 0
    from memory_mcp.app import reads

    try:
        block = reads.prompt_block(settings, prompt)
    except StoreMissingError:
        return 0  # nothing stored yet, and reading creates nothing
    if block:
        output = {"hookEventName": "UserPromptSubmit", "additionalContext": block}
        print(json.dumps({"hookSpecificOutput": output}), flush=True)
    return 0
