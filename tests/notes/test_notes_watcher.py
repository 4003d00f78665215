"""The watcher with the app (or the MCP server) running: notes dropped, edited, deleted or
renamed in the folder reach the store on their own, and a restart catches up on changes
made while the server was down. FakeEmbedder: retrieval quality is not the point."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import watchfiles
from mcp import Client

from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.cli.common import settings_from
from memory_mcp.cli.main import build_parser
from memory_mcp.mcp.server import build_server
from memory_mcp.models import MemoryRecord, Scope, SearchRequest
from memory_mcp.notes import watcher as watcher_module
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call

pytestmark = pytest.mark.anyio

# Generous for a machine shared with other work: these tests check that a change arrives,
# not how fast (bench/notes_queue.py measures that, with the load average).
DEADLINE = 60.0


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = DEADLINE) -> float:
    """Poll `check` until it holds; returns the seconds it took. Fails at the deadline."""
    start = time.monotonic()
    with anyio.fail_after(timeout):
        while not await check():
            await anyio.sleep(0.02)
    return time.monotonic() - start


@asynccontextmanager
async def watching(settings: Settings) -> AsyncIterator[AppContext]:
    async with open_app(settings, FakeEmbedder()) as app:
        assert app.watcher is not None
        with anyio.fail_after(5):
            await app.watcher.ready.wait()
        yield app


async def note_records(app: AppContext, path: Path) -> list[MemoryRecord]:
    return await app.service.note_memories.note_records(
        app.caller, Scope.AGENT, str(path.resolve())
    )


async def test_a_note_written_into_the_folder_becomes_searchable(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    memory_dir = tmp_path / "memory"
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        start = time.monotonic()
        memory_dir.mkdir(exist_ok=True)  # the server creates it too; no race either way
        (memory_dir / "deploy.md").write_text("# Deploy\nThe canary region is eu-west-3.")

        async def searchable() -> bool:
            found = await call(client, "memory-search", query="canary region")
            return any("deploy.md" in r["key"] for r in found["results"])

        await eventually(searchable)
        elapsed = time.monotonic() - start
    print(f"write → searchable through memory-search: {elapsed * 1000:.0f} ms")


async def test_edit_delete_and_rename_follow_the_files(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    memory_dir = tmp_path / "memory"
    note = memory_dir / "db.md"
    async with watching(make_settings()) as app:
        note.write_text("# Database\nWe use SQLite.\n\n# Backups\nNightly to S3.")

        async def indexed() -> bool:
            return len(await note_records(app, note)) == 2

        await eventually(indexed)
        ids = sorted(r.id for r in await note_records(app, note))

        note.write_text("# Database\nWe use PostgreSQL 16.\n\n# Backups\nNightly to S3.")

        async def updated() -> bool:
            return any("PostgreSQL" in r.value for r in await note_records(app, note))

        await eventually(updated)
        after = await note_records(app, note)
        assert sorted(r.id for r in after) == ids, "same memories, updated in place"
        assert not any("SQLite" in r.value for r in after)

        renamed = memory_dir / "database.md"
        note.rename(renamed)

        async def moved() -> bool:
            return len(await note_records(app, renamed)) == 2

        await eventually(moved)
        assert await note_records(app, note) == []
        assert await app.service.store.count() == 2, "a rename is a move, not a duplicate"

        renamed.unlink()

        async def gone() -> bool:
            return await app.service.store.count() == 0

        await eventually(gone)
        result = await app.service.search(app.caller, SearchRequest("PostgreSQL"))
        assert result.hits == []


async def test_a_burst_of_saves_indexes_once_and_links_are_ignored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    memory_dir = tmp_path / "memory"
    outside = tmp_path / "outside.md"
    outside.write_text("Private text outside the memory folder.")
    note = memory_dir / "todo.md"
    async with watching(make_settings()) as app:
        (memory_dir / "link.md").symlink_to(outside)
        for draft in range(5):  # an editor saving repeatedly
            note.write_text(f"# Todo\nDraft {draft} of the plan.")

        async def final() -> bool:
            stored = await note_records(app, note)
            return bool(stored) and "Draft 4" in stored[0].value

        await eventually(final)
        (record,) = await note_records(app, note)
        assert record.version == 1, "the burst was indexed once, with its last content"
        assert await note_records(app, memory_dir / "link.md") == []
        assert (await app.service.search(app.caller, SearchRequest("Private outside"))).hits == []


async def test_restart_reconciles_changes_made_while_stopped(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    kept, edited, deleted = (memory_dir / n for n in ("kept.md", "edited.md", "deleted.md"))
    kept.write_text("Kept as it was.")
    edited.write_text("Before the edit.")
    deleted.write_text("Soon deleted.")
    settings = make_settings()
    async with watching(settings) as app:
        assert await app.service.store.count() == 3
        kept_id = (await note_records(app, kept))[0].id

    # The server is down: the folder changes behind its back.
    edited.write_text("After the edit.")
    deleted.unlink()
    (memory_dir / "sub").mkdir()
    added = memory_dir / "sub" / "added.txt"
    added.write_text("Added while the server was stopped.")

    async with watching(settings) as app:
        assert (await note_records(app, kept))[0].id == kept_id
        assert [r.value for r in await note_records(app, edited)] == ["After the edit."]
        assert await note_records(app, deleted) == []
        assert [r.value for r in await note_records(app, added)] == [
            "Added while the server was stopped."
        ]
        assert await app.service.store.count() == 3


def test_watch_flags_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def settings(*argv: str) -> Settings:
        return settings_from(build_parser().parse_args(["serve", *argv]))

    assert settings().watch is True
    assert settings("--no-watch").watch is False
    flagged = settings("--memory-dir", str(tmp_path / "p"), "--shared-memory-dir", "/s")
    assert flagged.personal_memory_dir == tmp_path / "p"
    assert flagged.shared_memory_dir == Path("/s")
    monkeypatch.setenv("MEMORY_MCP_WATCH", "false")
    monkeypatch.setenv("MEMORY_MCP_MEMORY_DIR", str(tmp_path / "env"))
    assert settings().watch is False
    assert settings().personal_memory_dir == tmp_path / "env"
    monkeypatch.delenv("MEMORY_MCP_MEMORY_DIR")
    monkeypatch.setenv("MEMORY_MCP_DATA_DIR", str(tmp_path / "data"))
    assert settings().personal_memory_dir == tmp_path / "data" / "memory"


async def test_falls_back_to_polling_when_os_notifications_fail(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_awatch = watchfiles.awatch  # what the watcher module imported

    def failing_awatch(*roots: Path, **options: Any) -> Any:
        if not options.get("force_polling"):
            raise OSError("OS file watch limit reached")
        return real_awatch(*roots, **options)

    monkeypatch.setattr(watcher_module, "awatch", failing_awatch)
    note = tmp_path / "memory" / "polled.md"
    async with watching(make_settings()) as app:
        note.write_text("Found by polling.")

        async def indexed() -> bool:
            return len(await note_records(app, note)) == 1

        await eventually(indexed)
    assert "falling back to polling" in caplog.text


async def test_a_small_note_does_not_wait_while_a_big_one_is_written(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """Two lanes: a note saved while a ~1 MB note (hundreds of chunks) is being written is
    indexed before that write ends. An order, not a time: robust on a busy machine."""
    memory_dir = tmp_path / "memory"
    big = memory_dir / "big.md"
    small = memory_dir / "small.md"
    section = "Paragraph about the deploy pipeline and its rollback rules. " * 25
    text = "\n\n".join(f"# Part {n}\n{section}" for n in range(300))
    async with watching(make_settings()) as app:
        (memory_dir / "blob.md").write_bytes(os.urandom(200_000))
        big.write_text(text)

        async def started() -> bool:
            return bool(await note_records(app, big))

        await eventually(started, timeout=60)
        small.write_text("The pager goes to Marisol this week.")

        async def small_indexed() -> bool:
            return bool(await note_records(app, small))

        await eventually(small_indexed, timeout=60)
        written = len(await note_records(app, big))
        assert written < 300, f"the small note waited for all {written} chunks of the big one"

        async def big_done() -> bool:
            return len(await note_records(app, big)) == 300

        await eventually(big_done, timeout=300)
        assert await note_records(app, memory_dir / "blob.md") == []


async def test_a_note_saved_after_a_burst_does_not_wait_for_the_burst(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The newest batch of changes goes first: a note saved right after a burst of 300 is
    indexed while most of the burst still waits. An order, not a time."""
    memory_dir = tmp_path / "memory"
    async with watching(make_settings()) as app:
        for n in range(300):
            (memory_dir / f"burst-{n:03}.md").write_text(f"Burst {n}.")
        after = memory_dir / "after.md"
        after.write_text("Saved right after the burst, and bigger than any note in it.")

        async def indexed() -> bool:
            return bool(await note_records(app, after))

        await eventually(indexed)
        burst_done = (
            len(await app.service.note_memories.note_paths(app.caller, Scope.AGENT, "/")) - 1
        )
        assert burst_done < 150, f"the note waited for {burst_done} of the 300 burst notes"

        async def burst_in() -> bool:
            return await app.service.store.count() == 301

        await eventually(burst_in)


async def test_fifos_links_and_binary_files_are_passed_over(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """None of them blocks the lane or becomes a memory; the notes around them do."""
    memory_dir = tmp_path / "memory"
    outside = tmp_path / "outside.md"
    outside.write_text("Outside the memory folder.")
    async with watching(make_settings()) as app:
        os.mkfifo(memory_dir / "pipe.md")
        os.link(outside, memory_dir / "hard.md")
        (memory_dir / "small-binary.md").write_bytes(os.urandom(2_000).replace(b"\0", b"") + b"\0")
        (memory_dir / "big-binary.md").write_bytes(os.urandom(300_000))
        (memory_dir / "before.md").write_text("Written with them.")

        async def first() -> bool:
            return bool(await note_records(app, memory_dir / "before.md"))

        await eventually(first)
        (memory_dir / "later.md").write_text("Written after them.")

        async def later() -> bool:
            return bool(await note_records(app, memory_dir / "later.md"))

        await eventually(later)
        paths = await app.service.note_memories.note_paths(app.caller, Scope.AGENT, "/")
    assert paths == {str((memory_dir / n).resolve()) for n in ("before.md", "later.md")}
