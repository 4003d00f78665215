"""PostToolUse (Write|Edit|MultiEdit): a note written into a memory folder is indexed at
once, so the next search sees it before the server's watcher even wakes up. Anything
outside the folders is left alone, silently, before the store is even imported."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_mcp.hooks.job import settings_for
from memory_mcp.notes.folders import note_folders
from memory_mcp.notes.paths import NotePath, locate
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.app.opener import AppOpener
    from memory_mcp.app.team_client import Client


def run(
    path: str, payload: dict[str, Any], open_app: AppOpener, settings: Settings | None = None
) -> int:
    settings = settings_for(payload, settings)
    cwd = Path(payload["cwd"]) if isinstance(payload.get("cwd"), str) else None
    note = locate(path, note_folders(settings, cwd), cwd)
    if note is None:
        return 0
    if settings.team_server is not None:
        return _index_on_team_server(settings, settings.team_server, note)
    from memory_mcp.hooks.job import run_with_app  # the store: only for a real note

    async def job(app: AppContext) -> None:
        await app.notes.index(note)

    run_with_app(open_app, settings, job)
    return 0


def _index_on_team_server(settings: Settings, server: tuple[str, str], note: NotePath) -> int:
    """Send the note to the team server, which indexes it as its watcher would."""
    from memory_mcp.app import team_client as team
    from memory_mcp.notes.paths import NoteSkipped, read_note

    try:
        content = read_note(note.path, settings.note_max_bytes, settings.note_allow_hardlinks)
    except NoteSkipped as skipped:
        print(f"memory-mcp: note {note.path} not indexed: {skipped.reason}", file=sys.stderr)
        return 0
    arguments = {
        "path": str(note.path),
        "content": content.text,
        "folder": note.folder.label,
        "modified_at": content.modified_at,
    }

    async def remote(client: Client) -> None:
        await team.call(client, "index-note", arguments)

    team.run_remote(server, remote, settings.project)
    return 0
