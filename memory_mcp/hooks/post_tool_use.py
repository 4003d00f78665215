"""PostToolUse (Write|Edit|MultiEdit): a note written into a memory folder is indexed at
once, so the next search sees it before the server's watcher even wakes up. Anything
outside the folders is left alone, silently, before the store is even imported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_mcp.notes.folders import note_folders
from memory_mcp.notes.paths import locate
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app import AppContext


def run(path: str, payload: dict[str, Any], settings: Settings | None = None) -> int:
    settings = settings or Settings()
    cwd = Path(payload["cwd"]) if isinstance(payload.get("cwd"), str) else None
    note = locate(path, note_folders(settings), cwd)
    if note is None:
        return 0
    from memory_mcp.hooks.job import run_with_app  # the store: only for a real note

    async def job(app: AppContext) -> None:
        await app.notes.index(note)

    run_with_app(settings, job)
    return 0
