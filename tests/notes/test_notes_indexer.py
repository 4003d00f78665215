"""Indexing notes without the watcher: what a note becomes in the store, how edits,
deletes, renames and unsafe files are handled. FakeEmbedder: retrieval is not the point."""

from __future__ import annotations

import logging
import math
import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import Caller, MemoryRecord, Role, Scope, SearchRequest, Source, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, CountingEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

NOTE = """\
# Deploy
We deploy with blue-green switches.

## Staging
Staging is refreshed nightly from production.
"""


async def records(app: AppContext, path: Path, scope: Scope = Scope.AGENT) -> list[MemoryRecord]:
    return await app.service.note_memories.note_records(app.caller, scope, str(path.resolve()))


async def found(app: AppContext, query: str) -> list[str]:
    result = await app.service.search(app.caller, SearchRequest(query, source=Source.FILE_INDEX))
    return [hit.record.key for hit in result.hits]


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    path = tmp_path / "memory"
    path.mkdir()
    return path


async def test_a_note_becomes_file_index_memories_with_path_lines_and_ttl(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text(NOTE)
    async with opened(make_settings(agent_id="a1")) as app:
        outcome = await app.notes.index_path(note)
        assert outcome.report is not None
        assert outcome.report.created == 2
        stored = await records(app, note)
    assert [r.key for r in stored] == ["file:deploy.md#deploy", "file:deploy.md#deploy/staging"]
    first, second = stored
    assert first.source is Source.FILE_INDEX
    assert first.scope is Scope.AGENT
    assert first.agent_id == "a1"
    assert first.file_path == str(note.resolve())
    assert first.metadata == {
        "file_path": "deploy.md",
        "start_line": 1,
        "end_line": 2,
        "heading_path": "# Deploy",
        "folder": "personal",
    }
    assert (second.metadata["start_line"], second.metadata["end_line"]) == (4, 5)
    assert second.value == "# Deploy > ## Staging\n\nStaging is refreshed nightly from production."
    expected_expiry = math.floor(note.stat().st_mtime) + 30 * 86_400
    assert first.expires_at == second.expires_at
    assert first.expires_at == pytest.approx(expected_expiry, abs=2)


async def test_rewrite_replaces_without_duplicates_and_keeps_unchanged_chunks(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text(NOTE)
    embedder = CountingEmbedder()
    async with opened(make_settings(), embedder) as app:
        await app.notes.index_path(note)
        before = {r.key: r for r in await records(app, note)}
        assert embedder.texts == [], "notes are embedded by the background worker"
        assert await app.service.vectors.embed_pending() == 2
        assert len(embedder.texts) == 2

        # Same bytes again: nothing is written, nothing embedded.
        again = await app.notes.index_path(note)
        assert again.report is not None
        assert not again.report.changed
        assert await app.service.vectors.embed_pending() == 0

        # One section edited: only that chunk gets a new version and a new vector.
        note.write_text(NOTE.replace("nightly", "every hour"))
        report = (await app.notes.index_path(note)).report
        assert report is not None
        assert (report.updated, report.unchanged) == (1, 1)
        after = {r.key: r for r in await records(app, note)}
        assert after.keys() == before.keys(), "same chunks, no duplicates"
        staging = next(k for k in after if k.endswith("staging"))
        deploy = next(k for k in after if k.endswith("#deploy"))
        assert after[staging].id == before[staging].id
        assert after[staging].version == 2
        assert "every hour" in after[staging].value
        assert after[deploy].version == 1
        assert after[deploy].id == before[deploy].id
        assert await app.service.vectors.embed_pending() == 1
        assert len(embedder.texts) == 3

        # A line added above shifts the staging chunk's lines: metadata changes, its
        # text does not, so its vector is reused.
        note.write_text(
            NOTE.replace("switches.", "switches.\nTwice a week.").replace("nightly", "every hour")
        )
        await app.notes.index_path(note)
        await app.service.vectors.embed_pending()
        shifted = {r.key: r for r in await records(app, note)}
        assert shifted[staging].metadata["start_line"] == 5
        assert len(embedder.texts) == 4, "only the edited deploy chunk was embedded"
        assert len(shifted) == 2
        hits = await found(app, "every hour")
        assert hits == [staging]


async def test_touching_a_note_refreshes_the_expiry_of_all_its_memories(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text(NOTE)
    old = time.time() - 10 * 86_400
    os.utime(note, (old, old))
    async with opened(make_settings()) as app:
        real_clock = app.service.clock
        app.service.clock = lambda: old  # first indexed ten days ago
        await app.notes.index_path(note)
        first = await records(app, note)
        assert all(r.expires_at == math.floor(old) + 30 * 86_400 for r in first)
        app.service.clock = real_clock
        os.utime(note)  # now
        await app.notes.index_path(note)
        refreshed = await records(app, note)
    assert [r.version for r in refreshed] == [1, 1], "no new version for a new expiry"
    assert all(r.expires_at and r.expires_at > time.time() + 29 * 86_400 for r in refreshed)


async def test_an_old_note_dropped_in_is_indexed_and_expires_ttl_after_indexing(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "ancient.md"
    note.write_text("# Old\nFrom long ago.")
    old = time.time() - 40 * 86_400
    os.utime(note, (old, old))  # e.g. copied in with `cp -p`
    async with opened(make_settings()) as app:
        await app.notes.index_path(note)
        indexed = await records(app, note)
        assert len(indexed) == 1
        assert indexed[0].expires_at == pytest.approx(time.time() + 30 * 86_400, abs=5)
        real_clock = app.service.clock
        app.service.clock = lambda: real_clock() + 31 * 86_400  # untouched for a month
        outcome = await app.notes.index_path(note)
        assert outcome.report is not None
        assert outcome.report.expired
        assert await records(app, note) == []
    async with opened(make_settings(ttl_file_index_days=0)) as app:
        await app.notes.index_path(note)
        kept = await records(app, note)
    assert len(kept) == 1
    assert kept[0].expires_at is None


async def test_delete_rename_and_directory_moves(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text(NOTE)
    embedder = CountingEmbedder()
    async with opened(make_settings(), embedder) as app:
        await app.notes.index_path(note)
        await app.service.vectors.embed_pending()
        count = await app.service.store.count()

        renamed = memory_dir / "shipping.md"
        note.rename(renamed)
        await app.notes.apply([str(note), str(renamed)])
        assert await records(app, note) == []
        moved = await records(app, renamed)
        assert len(moved) == 2
        assert all("shipping.md" in r.key for r in moved)
        assert await app.service.store.count() == count, "a move, not a duplicate"
        assert await app.service.vectors.embed_pending() == 0, "moved text is not embedded again"
        assert len(embedder.texts) == 2

        sub = memory_dir / "team"
        sub.mkdir()
        (sub / "people.md").write_text("Alice owns the deploy scripts.")
        await app.notes.apply([str(sub)])  # a directory moved in: only it is reported
        assert len(await records(app, sub / "people.md")) == 1
        sub.rename(memory_dir.parent / "archived")
        await app.notes.apply([str(sub)])  # moved out
        assert await records(app, sub / "people.md") == []

        renamed.unlink()
        outcome = await app.notes.index_path(renamed)
        assert outcome.action == "removed"
        assert await records(app, renamed) == []
        assert await found(app, "blue-green") == []


async def test_unsafe_files_are_ignored(
    make_settings: Callable[..., Settings],
    memory_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    outside = tmp_path / "secret-plans.md"
    outside.write_text("Outside the folder: must never be indexed.")
    (memory_dir / "link.md").symlink_to(outside)
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "inner.md").write_text("Behind a directory link.")
    (memory_dir / "linked-dir").symlink_to(outside_dir)
    os.mkfifo(memory_dir / "pipe.md")
    (memory_dir / "huge.md").write_bytes(b"x" * 10_000_000)
    (memory_dir / ".hidden.md").write_text("hidden")
    (memory_dir / "notes.md~").write_text("backup")
    (memory_dir / "binary.md").write_bytes(b"\xff\xfe\x00caf\xe9 ok \x80\x81 end")
    latin1 = b"Caf\xe9 au lait and cr\xe8me br\xfbl\xe9e, in Montr\xe9al."  # a few bad bytes
    (memory_dir / "latin1.md").write_bytes(latin1)
    (memory_dir / "real.md").write_text("A real note.")

    async with opened(make_settings()) as app:
        with caplog.at_level(logging.WARNING):
            report = await app.notes.reconcile(app.notes.folders[0])
        paths = await app.service.note_memories.note_paths(app.caller, Scope.AGENT, "/")
        assert paths == {str((memory_dir / n).resolve()) for n in ("latin1.md", "real.md")}
        link = await app.notes.index_path(memory_dir / "link.md")
        assert link.action == "skipped"
        assert "symbolic link" in link.detail
        assert await records(app, memory_dir / "link.md") == []
        assert app.notes.locate(memory_dir / "linked-dir" / "inner.md") is None
        assert app.notes.locate(memory_dir / ".." / "secret-plans.md") is None
        kept = await records(app, memory_dir / "latin1.md")
    assert report.indexed == 2
    assert "\ufffd" in kept[0].value
    assert "Montr" in kept[0].value
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("huge.md" in w and "limit" in w for w in warnings), warnings
    assert any("binary.md" in w and "binary content" in w for w in warnings), warnings


async def test_shared_folder_is_swarm_scoped_and_secrets_stay_out(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    note = shared / "conventions.md"
    token = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"  # a fake, in pieces
    note.write_text(f"# Style\nUse ruff for linting.\n\n# Access\nCI pushes with {token}\n")
    settings = make_settings(agent_id="writer", shared_memory_dir=shared)
    async with opened(settings) as app:
        report = (await app.notes.index_path(note)).report
        assert report is not None
        assert (report.created, report.refused) == (2, [])
        (spot,) = report.redacted
        where = re.fullmatch(r".*: value github-pat at characters (\d+)-(\d+)", spot)
        assert where and int(where[2]) - int(where[1]) + 1 == len(token)
        stored = await records(app, note, Scope.SWARM)
        assert [r.scope for r in stored] == [Scope.SWARM, Scope.SWARM]
        assert all(token[4:] not in r.value for r in stored)
        assert "CI pushes with [REDACTED:github-pat]" in stored[1].value
        again = (await app.notes.index_path(note)).report
        assert again is not None and (again.unchanged, again.updated) == (2, 0)
        reader = Caller("reader", Role.WORKER, "s2")
        hits = await app.service.search(reader, SearchRequest("ruff linting"))
        assert [h.record.key for h in hits.hits][0] == stored[0].key


async def test_any_agents_server_keeps_a_shared_folders_note_in_step(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """A note this server reads itself from the shared folder is the folder's
    (memory_mcp/rules/permissions.py, Origin.FOLDER): a worker's server watching the same folder
    follows the lead's note when it is edited or deleted, whoever indexed it first. (Text
    sent by a caller, index-note, is held to its owner: tests/http/test_index_note.py.)"""
    shared = tmp_path / "shared"
    shared.mkdir()
    note = shared / "deploy.md"
    note.write_text(NOTE)
    lead_settings = make_settings(agent_id="lead", role="lead", shared_memory_dir=shared)
    worker_settings = make_settings(agent_id="w1", shared_memory_dir=shared)
    async with opened(lead_settings) as lead, opened(worker_settings) as worker:
        assert (await lead.notes.index_path(note)).action == "indexed"
        assert {r.agent_id for r in await records(lead, note, Scope.SWARM)} == {"lead"}
        note.write_text(NOTE.replace("nightly", "hourly"))
        report = (await worker.notes.index_path(note)).report
        assert report is not None and (report.updated, report.refused) == (1, [])
        edited = [r for r in await records(lead, note, Scope.SWARM) if "hourly" in r.value]
        assert [(r.agent_id, r.updated_by) for r in edited] == [("lead", "w1")]
        note.unlink()
        assert (await worker.notes.index_path(note)).action == "removed"
        assert await records(lead, note, Scope.SWARM) == []


async def test_notes_neither_count_toward_the_cap_nor_get_evicted(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text(NOTE)  # two sections: two memories
    caller_memories = ["first", "second", "third"]
    async with opened(make_settings(max_memories_per_agent=2)) as app:
        await app.notes.index_path(note)
        caller = app.caller
        for key in caller_memories:
            await app.service.store_memory(caller, StoreRequest(key, f"{key} manual fact"))
        kept = {r.key async for r in app.service.store.iter_records() if r.archived_at is None}
        assert len(await records(app, note)) == 2, "the note's memories stay"
    assert {"second", "third"} <= kept, "manual ones obey the cap"
    assert "first" not in kept, "manual ones obey the cap (archived)"


async def test_a_reindexed_chunk_keeps_what_the_file_does_not_hold(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    """Issue 35 (an update keeps what it was not given): the file gives a chunk's text,
    place and expiry; a pin or a confidence it never held (set on the store, as an operator
    could) survives an edit of that chunk."""
    from sqlalchemy import update

    from memory_mcp.store.memories_table import MEMORIES, M

    note = memory_dir / "deploy.md"
    note.write_text(NOTE)
    async with opened(make_settings(agent_id="a1")) as app:
        await app.notes.index_path(note)
        first = (await records(app, note))[0]
        async with app.service.store._engines.write() as conn:
            await conn.execute(
                update(MEMORIES).where(M.id == first.id).values(pinned=True, confidence=0.5)
            )
        note.write_text(NOTE.replace("blue-green switches", "canary releases"))
        await app.notes.index_path(note)
        after = (await records(app, note))[0]
    assert after.id == first.id and "canary releases" in after.value
    assert after.version == first.version + 1
    assert (after.pinned, after.confidence) == (True, 0.5)
