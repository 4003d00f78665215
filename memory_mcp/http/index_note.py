"""`index-note`, a tool of the HTTP transports only: the PostToolUse hook of an agent on
another machine sends the note it just wrote, and the team server indexes it exactly as
the notes watcher indexes a file in a memory folder (memory_mcp/notes): cut on headings
and paragraphs, one `file_index` memory per chunk keyed by the file's path, a re-written
note replacing its memories. A stdio server reads the file itself and has no need of it."""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from memory_mcp.checks.validation import shown
from memory_mcp.errors import MemoryMcpError
from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.tool_calls import app_of
from memory_mcp.models import EVERY_PROJECT, Scope
from memory_mcp.notes.indexer import note_memories
from memory_mcp.notes.paths import NoteFolder, NotePath, is_note_name
from memory_mcp.rules.permissions import Origin, written_project

# A work tree's `.memory/` folder ("project") holds its project's notes: swarm scope, in
# the connection's current project.
FOLDERS = {"personal": Scope.AGENT, "shared": Scope.SWARM, "project": Scope.SWARM}
MAX_PATH_CHARS = 4_096


def _checked_path(path: str) -> str:
    if not path.startswith("/") or len(path) > MAX_PATH_CHARS or "\x00" in path:
        raise ToolError("invalid path: must be the note's absolute path, at most 4096 characters")
    if not is_note_name(PurePosixPath(path).name):
        raise ToolError("invalid path: a note is a .md, .markdown or .txt file")
    return path


def add_note_tool(server: MCPServer[Any]) -> None:
    @server.tool(
        name="index-note",
        annotations=ToolAnnotations(
            title="Index a note from a memory folder", readOnlyHint=False, idempotentHint=True
        ),
    )
    async def index_note(
        ctx: Context,
        path: Annotated[str, Field(description="The note's absolute path on your machine.")],
        content: Annotated[str, Field(description="The whole text of the note.")],
        folder: Annotated[
            str,
            WithJsonSchema({"type": "string", "enum": list(FOLDERS)}),
            Field(
                description="personal: your private memories; shared: every agent's; "
                "project: a work tree's .memory/ notes, in the current project."
            ),
        ] = "personal",
        modified_at: Annotated[
            float | None, Field(strict=True, description="The file's mtime, UNIX seconds.")
        ] = None,
    ) -> dict[str, Any]:
        """Index a note written into a memory folder (sent by the PostToolUse hook).

        The note replaces the memories previously indexed from the same path. A shared
        note that another agent indexed may be changed or removed (content "") only by
        that agent or a lead; anyone else gets an error naming the owner.
        Example: index-note(path="/workspace/personal/memory/deploy.md",
        content="# Deploy\\n...", folder="personal")."""
        app = await app_of(ctx)
        scope = FOLDERS.get(folder)
        if scope is None:
            raise ToolError(f"invalid folder: {shown(folder)} is not one of {', '.join(FOLDERS)}")
        file_path = _checked_path(path)
        if len(content.encode("utf-8", errors="replace")) > app.settings.note_max_bytes:
            raise ToolError(f"invalid content: over {app.settings.note_max_bytes:,} bytes")
        note = NotePath(NoteFolder(Path("/"), scope, folder), Path(file_path), PurePosixPath())
        memories = note_memories(note, content)
        if len(memories) > app.settings.note_max_chunks:
            raise ToolError(
                f"invalid content: it cuts into {len(memories):,} chunks, over the "
                f"{app.settings.note_max_chunks:,}-chunk limit; split the note"
            )
        try:
            async with app.turns:
                caller = caller_of(app)
                project = written_project(caller) if folder == "project" else EVERY_PROJECT
                # The text is the caller's word, not a file this server read: a shared
                # note another agent indexed is changed or removed only by that agent or a
                # lead (memory_mcp/rules/permissions.py).
                report = await app.notes.files.sync_file(
                    caller,
                    scope,
                    file_path,
                    memories,
                    modified_at or time.time(),
                    origin=Origin.CALLER,
                    project=project,
                )
        except MemoryMcpError as exc:
            raise ToolError(str(exc)) from exc
        return {
            "file_path": file_path,
            "created": report.created,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "removed": report.removed,
            "refused": len(report.refused),
            "redacted": len(report.redacted),
        }
