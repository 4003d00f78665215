"""The memory folders that Settings name: the personal one (agent scope) and, when set,
the shared one (swarm scope). Light on purpose: the PostToolUse hook asks "is this file in
a memory folder?" before it loads anything else."""

from __future__ import annotations

import logging

from memory_mcp.models import Scope
from memory_mcp.notes.paths import NoteFolder
from memory_mcp.settings import Settings

log = logging.getLogger(__name__)


def note_folders(settings: Settings) -> list[NoteFolder]:
    personal = settings.personal_memory_dir.resolve()
    folders = [NoteFolder(personal, Scope.AGENT, "personal")]
    if settings.shared_memory_dir is not None:
        shared = settings.shared_memory_dir.expanduser().resolve()
        if shared == personal:
            log.warning("the shared memory folder is the personal one (%s); ignoring it", shared)
        else:
            folders.append(NoteFolder(shared, Scope.SWARM, "shared"))
    return folders
