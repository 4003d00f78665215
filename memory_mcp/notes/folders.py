"""The memory folders that Settings name: the personal one (agent scope), when set the
shared one (swarm scope), and a git work tree's own `.memory/` folder when it has one (swarm
scope, in its project: the notes are in the repository, for the whole team). Light on
purpose: the PostToolUse hook asks "is this file in a memory folder?" before it loads
anything else."""

from __future__ import annotations

import logging
from pathlib import Path

from memory_mcp.models import Scope
from memory_mcp.notes.paths import NoteFolder
from memory_mcp.rules.projects import (
    current_project,
    foreign_notes_folder,
    notes_folder_of,
    work_tree_of,
)
from memory_mcp.settings import Settings

log = logging.getLogger(__name__)


def note_folders(settings: Settings, cwd: Path | None = None) -> list[NoteFolder]:
    """The folders whose notes are memories. Over stdio (one agent's own server) the
    personal folder is always one, by default /workspace/personal/memory or <data
    dir>/memory. A team server (any other transport) serves many agents from one store:
    it indexes only folders named for it (memory_dir, shared_memory_dir: a flag, a
    MEMORY_MCP_* variable or the settings file), never the default one, which holds the
    notes of whoever runs it. Over stdio, the work tree around `cwd` (default: the working
    folder; a hook: its payload's) gives its `.memory/` folder, in its project."""
    folders: list[NoteFolder] = []
    personal: Path | None = None
    shared: Path | None = None
    if settings.transport == "stdio" or settings.memory_dir is not None:
        personal = settings.personal_memory_dir.resolve()
        folders.append(NoteFolder(personal, Scope.AGENT, "personal"))
    if settings.shared_memory_dir is not None:
        shared = settings.shared_memory_dir.expanduser().resolve()
        if shared == personal:
            log.warning("the shared memory folder is the personal one (%s); ignoring it", shared)
        else:
            folders.append(NoteFolder(shared, Scope.SWARM, "shared"))
    if settings.transport == "stdio":
        here = cwd or Path.cwd()
        own = notes_folder_of(here)
        project = current_project(settings.project, here)
        _say_if_foreign(here)
        if own is not None and project is not None and own.resolve() not in (personal, shared):
            folders.append(NoteFolder(own.resolve(), Scope.SWARM, "project", project))
    return folders


def _say_if_foreign(here: Path) -> None:
    tree = work_tree_of(here)
    leads_to = None if tree is None else foreign_notes_folder(tree)
    if leads_to is not None and leads_to.is_dir():
        log.warning(
            "%s/.memory leads outside the repository, to %s: those notes are the project of "
            "the repository that holds them, not indexed here",
            tree,
            leads_to,
        )


def say_why_no_personal_folder(settings: Settings) -> None:
    """A team server's start says why the default folder is not indexed (once: the
    folders are worked out whenever the app opens, and a server opens it twice)."""
    if settings.transport != "stdio" and settings.memory_dir is None:
        log.info(
            "a team server indexes no personal memory folder unless one is named "
            "(--memory-dir); not the default %s",
            settings.personal_memory_dir,
        )
