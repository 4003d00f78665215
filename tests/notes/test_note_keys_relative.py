"""A note's key names its path inside the memory folder, not where the folder is: a real
notes folder, watched by a real `memory-mcp serve` on stdio. No home folder reaches a
key, the memory's metadata or an export; and a store indexed when keys held the absolute
path is renamed in place when the server indexes the folder again: one memory per
chunk, the same ids, their links kept (issue 47: "a note's key holds its absolute path")."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from memory_mcp.models import Caller, Role, Scope, StoreRequest
from memory_mcp.notes.indexer import note_memories
from memory_mcp.notes.paths import NoteFolder, NotePath
from memory_mcp.rules.permissions import Origin
from memory_mcp.settings import Settings
from tests.cli.test_cli import EXE
from tests.conftest import BOTH_BACKENDS, call, opened
from tests.mcp.test_stdio_e2e import server_env

pytestmark = pytest.mark.anyio

NOTE = (
    "# Deploy\nBlue-green, then watch the error rate.\n\n## Rollback\nRun deploy --to previous.\n"
)
DEADLINE_SECONDS = 120


@asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[Client]:
    """`memory-mcp serve` as agent w1, its personal notes folder tmp_path/notes, started
    outside any git work tree."""
    params = StdioServerParameters(
        command=EXE,
        args=["serve", "--db", str(tmp_path / "notes.db"), "--agent-id", "w1"],
        env=server_env(tmp_path),
        cwd=str(tmp_path),
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


async def indexed(client: Client, wanted: set[str]) -> list[dict[str, Any]]:
    """The notes' memories once their keys are `wanted` (the watcher indexes at start)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        found = await call(client, "memory-list", source="file_index", limit=50)
        notes: list[dict[str, Any]] = found["memories"]
        if {m["key"] for m in notes} == wanted or time.monotonic() > deadline:
            return notes
        await anyio.sleep(0.2)


def notes_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes" / "ops"
    folder.mkdir(parents=True)
    (folder / "deploy.md").write_text(NOTE)
    return folder.parent


KEYS = {"file:ops/deploy.md#deploy", "file:ops/deploy.md#deploy/rollback"}


async def test_a_notes_key_is_its_path_in_the_folder(tmp_path: Path) -> None:
    notes = notes_folder(tmp_path)
    async with serving(tmp_path) as client:
        found = await indexed(client, KEYS)
        assert {m["key"] for m in found} == KEYS
        chunk = await call(client, "memory-get", id=found[0]["id"])
        assert chunk["metadata"]["file_path"] == "ops/deploy.md"
        assert chunk["file_path"] == str((notes / "ops" / "deploy.md").resolve())  # this machine's
    exported = subprocess.run(
        [EXE, "export", "--db", str(tmp_path / "notes.db"), "--agent-id", "w1"],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=300,
        check=True,
    ).stdout
    assert [json.loads(line)["key"] for line in exported.splitlines()] != []
    assert str(tmp_path) not in exported


async def test_notes_keyed_by_their_absolute_path_are_renamed_in_place(tmp_path: Path) -> None:
    notes = notes_folder(tmp_path)
    note = (notes / "ops" / "deploy.md").resolve()
    w1 = Caller("w1", Role.WORKER, "before")

    async def index_as_before() -> tuple[list[int], int]:
        """What the indexer stored before: keys and metadata with the absolute path."""
        settings = Settings(db=str(tmp_path / "notes.db"), data_dir=tmp_path / "data", watch=False)
        async with opened(settings) as app:
            folder = NoteFolder(notes.resolve(), Scope.AGENT, "personal")
            whole_path = NotePath(folder, note, PurePosixPath())  # no relative part: absolute
            memories = note_memories(whole_path, NOTE)
            assert {m.key for m in memories} == {
                f"file:{note}#deploy",
                f"file:{note}#deploy/rollback",
            }
            await app.notes.files.sync_file(
                w1, Scope.AGENT, str(note), memories, note.stat().st_mtime, origin=Origin.FOLDER
            )
            chunks = await app.service.note_memories.note_records(w1, Scope.AGENT, str(note))
            mine = await app.service.store_memory(w1, StoreRequest("release", "How we release"))
            await app.service.links.link(w1, mine.record.id, chunks[0].id, "explained_by")
            return sorted(r.id for r in chunks), mine.record.id

    ids, linking = await index_as_before()
    async with serving(tmp_path) as client:
        found = await indexed(client, KEYS)
        assert {m["key"] for m in found} == KEYS, "renamed, not stored again beside the old"
        assert sorted(m["id"] for m in found) == ids
        release = await call(client, "memory-get", id=linking)
        assert [link["id"] for link in release["links"]] == [ids[0]]
        for memory in found:
            read = await call(client, "memory-get", id=memory["id"])
            assert read["metadata"]["file_path"] == "ops/deploy.md"
            assert str(tmp_path) not in read["key"]
    # And started again: nothing to rename, nothing changes.
    async with serving(tmp_path) as client:
        again = await indexed(client, KEYS)
        assert sorted((m["id"], m["version"]) for m in again) == sorted(
            (m["id"], m["version"]) for m in found
        )


@BOTH_BACKENDS
async def test_the_rename_keeps_ids_on_both_stores(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The rename itself on SQLite and PostgreSQL: the indexer's own path, in process."""
    notes = tmp_path / "memory"
    (notes / "ops").mkdir(parents=True)
    note = notes / "ops" / "deploy.md"
    note.write_text(NOTE)
    async with opened(make_settings(agent_id="w1", watch=False)) as app:
        folder = NoteFolder(notes.resolve(), Scope.AGENT, "personal")
        before = NotePath(folder, note.resolve(), PurePosixPath())
        await app.notes.files.sync_file(
            app.caller,
            Scope.AGENT,
            str(note.resolve()),
            note_memories(before, NOTE),
            2e9,
            origin=Origin.FOLDER,
        )
        old = await app.service.note_memories.note_records(
            app.caller, Scope.AGENT, str(note.resolve())
        )
        outcome = await app.notes.index_path(note)
        assert outcome.report is not None
        assert (outcome.report.created, outcome.report.removed) == (0, 0)
        assert outcome.report.updated == 2  # the metadata's path: a new version each
        now = await app.service.note_memories.note_records(
            app.caller, Scope.AGENT, str(note.resolve())
        )
    assert [r.id for r in now] == [r.id for r in old]
    assert {r.key for r in now} == KEYS
    found = {r.key for r in now}
    assert all(str(tmp_path) not in key for key in found)
