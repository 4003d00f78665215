"""A note's memories are in the project of the folder that holds the note: indexed again
under another project (the work tree was renamed), they are carried there in place, and a
chunk held there already keeps that copy, the stale one dropped into it with its links.
The indexer's own path (FileIndexService.sync_file), in process, on SQLite and PostgreSQL;
the same over real processes in real git work trees: tests/cli/test_renamed_work_tree.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import MemoryRecord, NoteChunk, Scope, StoreRequest
from memory_mcp.notes.indexer import note_memories
from memory_mcp.notes.paths import NoteFolder, NotePath
from memory_mcp.rules.permissions import Origin
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

NOTE = "# Deploy\nBlue-green.\n\n## Rollback\nRun deploy --to previous.\n"
OLD, NEW = "gamma-2ed8ff", "acme/gamma"
ROLLBACK = "file:ops/deploy.md#deploy/rollback"


def the_note(tmp_path: Path) -> NotePath:
    root = tmp_path / "gamma" / ".memory"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "deploy.md").write_text(NOTE)
    folder = NoteFolder(root.resolve(), Scope.SWARM, "project")
    return NotePath(folder, (root / "ops" / "deploy.md").resolve(), PurePosixPath("ops/deploy.md"))


async def index(app: AppContext, note: NotePath, project: str) -> list[MemoryRecord]:
    """Index the note in `project`, as the folder's server does; its memories after."""
    await app.notes.files.sync_file(
        app.caller,
        Scope.SWARM,
        str(note.path),
        note_memories(note, NOTE),
        2e9,
        origin=Origin.FOLDER,
        project=project,
    )
    return await app.service.note_memories.note_records(app.caller, Scope.SWARM, str(note.path))


async def test_indexed_under_the_new_name_the_notes_are_carried_there(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    note = the_note(tmp_path)
    async with opened(make_settings(agent_id="me", watch=False)) as app:
        before = await index(app, note, OLD)
        after = await index(app, note, NEW)
        assert [(r.id, r.project, r.version) for r in after] == [
            (r.id, NEW, r.version + 1) for r in before
        ]
        assert {r.metadata["moved_from"] for r in after} == {OLD}
        again = await index(app, note, NEW)  # nothing more to do: no version for it
        assert [(r.id, r.version) for r in again] == [(r.id, r.version) for r in after]


async def test_a_chunk_under_both_names_keeps_the_new_copy_and_its_links(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    note = the_note(tmp_path)
    async with opened(make_settings(agent_id="me", watch=False)) as app:
        service = app.service
        old = {r.key: r for r in await index(app, note, OLD)}[ROLLBACK]
        # What an older indexer left: the chunk indexed again under the new name.
        chunk = NoteChunk(str(note.path), Scope.SWARM, ROLLBACK, old.value, old.metadata, None, NEW)
        copy = await service.note_memories.store_note_chunk(app.caller, chunk, Origin.FOLDER)
        kept = copy.record
        release = (await service.store_memory(app.caller, StoreRequest("release", "Tag"))).record
        runbook = (await service.store_memory(app.caller, StoreRequest("runbook", "Ask"))).record
        await service.links.link(app.caller, release.id, old.id, "explained_by")
        await service.links.link(app.caller, release.id, kept.id, "explained_by")  # twice
        await service.links.link(app.caller, runbook.id, old.id, "see_also")
        await service.links.link(app.caller, old.id, release.id, "part_of")

        after = await index(app, note, NEW)
        assert sorted((r.key, r.project) for r in after) == sorted(
            (key, NEW) for key in ("file:ops/deploy.md#deploy", ROLLBACK)
        )
        assert kept.id in {r.id for r in after} and old.id not in {r.id for r in after}

        async def links(record_id: int) -> set[tuple[str, int, str]]:
            record = await service.get(app.caller, record_id)
            found, _ = await service.links.links_of(app.caller, record)
            return {(x.direction, x.far.id, x.link.relation) for x in found}

        assert await links(kept.id) == {
            ("in", release.id, "explained_by"),  # once, not twice
            ("in", runbook.id, "see_also"),
            ("out", release.id, "part_of"),
        }
