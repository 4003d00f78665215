"""The notes rules (README, "Notes folders"): what is refused (hard links, binary content,
too many chunks), keys reserved for notes, a note's memory deleted only with its file, and
the embedding queue that serves the newest notes first. FakeEmbedder: no retrieval here."""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.errors import InvalidInputError, PermissionDeniedError
from memory_mcp.models import MemoryRecord, Scope, SearchRequest, Source, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    path = tmp_path / "memory"
    path.mkdir()
    return path


async def records(app: AppContext, path: Path) -> list[MemoryRecord]:
    return await app.service.note_memories.note_records(
        app.caller, Scope.AGENT, str(path.resolve())
    )


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_a_hard_link_is_refused_unless_allowed(
    make_settings: Callable[..., Settings],
    memory_dir: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    outside = tmp_path / "credentials.txt"
    outside.write_text("The vault passphrase hint is the name of the first ferry.")
    linked = memory_dir / "innocent.md"
    os.link(outside, linked)  # the same file, now also inside the folder
    async with opened(make_settings()) as app:
        with caplog.at_level(logging.WARNING):
            outcome = await app.notes.index_path(linked)
            report = await app.notes.reconcile(app.notes.folders[0])
        assert outcome.action == "skipped"
        assert "hard links" in outcome.detail
        assert report.indexed == 0
        assert await records(app, linked) == []
        assert (await app.service.search(app.caller, SearchRequest("ferry passphrase"))).hits == []
    assert any("innocent.md" in w and "HARDLINKS" in w for w in warnings_of(caplog))

    async with opened(make_settings(note_allow_hardlinks=True)) as app:
        outcome = await app.notes.index_path(linked)
        assert outcome.action == "indexed"
        assert len(await records(app, linked)) == 1

    # Once the other link is gone the file is an ordinary note again.
    outside.unlink()
    async with opened(make_settings()) as app:
        assert (await app.notes.index_path(linked)).action == "indexed"


async def test_binary_content_is_refused_with_a_warning_and_its_old_memories_go(
    make_settings: Callable[..., Settings], memory_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(5)
    with_nul = memory_dir / "photo.md"
    with_nul.write_bytes(bytes(rng.randrange(256) for _ in range(200_000)))
    no_nul = memory_dir / "packed.md"  # random high bytes, not one NUL: still not text
    no_nul.write_bytes(bytes(rng.randrange(128, 256) for _ in range(5_000)))
    note = memory_dir / "was-text.md"
    note.write_text("# Plan\nShip the new ferry schedule.")
    async with opened(make_settings()) as app:
        assert (await app.notes.index_path(note)).action == "indexed"
        note.write_bytes(b"# Plan\n\x00\x01\x02 overwritten by a binary")
        with caplog.at_level(logging.WARNING):
            outcomes = await app.notes.apply([str(with_nul), str(no_nul), str(note)])
        assert {o.path.rsplit("/", 1)[1]: o.action for o in outcomes} == {
            "photo.md": "skipped",
            "packed.md": "skipped",
            "was-text.md": "removed",
        }
        assert all("binary content" in o.detail for o in outcomes)
        assert await app.service.store.count() == 0
    warned = warnings_of(caplog)
    assert sum("binary content" in w for w in warned) == 3, warned


async def test_a_note_over_the_chunk_cap_is_refused_whole(
    make_settings: Callable[..., Settings], memory_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    note = memory_dir / "glossary.md"
    note.write_text("\n".join(f"# Term {n}\nMeaning {n}." for n in range(4)))
    async with opened(make_settings(note_max_chunks=5)) as app:
        first = (await app.notes.index_path(note)).report
        assert first is not None
        assert first.created == 4
        note.write_text("\n".join(f"# Term {n}\nMeaning {n}." for n in range(6)))
        with caplog.at_level(logging.WARNING):
            outcome = await app.notes.index_path(note)
        assert outcome.action == "removed", "refused whole, not cut: no half a note"
        assert "6 chunks" in outcome.detail
        assert "5-chunk limit" in outcome.detail
        assert await records(app, note) == []
    assert any("MEMORY_MCP_NOTE_MAX_CHUNKS" in w for w in warnings_of(caplog))


async def test_note_keys_are_reserved_for_notes(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text("# Deploy\nBlue-green switches.")
    key = f"file:{note.resolve()}#deploy"
    async with opened(make_settings()) as app:
        # Before the note exists in the store: a manual memory may not take its key (the
        # indexer would later take the memory over).
        with pytest.raises(InvalidInputError, match="reserved for notes"):
            await app.service.store_memory(app.caller, StoreRequest(key, "my own text"))
        with pytest.raises(InvalidInputError, match="reserved for notes"):
            await app.service.store_memory(
                app.caller, StoreRequest("  file:anything", "x", scope=Scope.SWARM)
            )
        await app.notes.index_path(note)
        # After: nobody overwrites the note's memory through store_memory.
        with pytest.raises(InvalidInputError, match="reserved for notes"):
            await app.service.store_memory(
                app.caller, StoreRequest(key, "overwritten", source=Source.MANUAL)
            )
        (stored,) = await records(app, note)
        assert stored.source is Source.FILE_INDEX
        assert "Blue-green" in stored.value
        # Keys that merely mention files are fine.
        await app.service.store_memory(app.caller, StoreRequest("profile:file", "a file: anything"))


async def test_deleting_a_notes_memory_points_at_the_file(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    note = memory_dir / "deploy.md"
    note.write_text("Intro.\n\n# Deploy\nBlue-green switches.\nTwice a week.")
    async with opened(make_settings()) as app:
        await app.notes.index_path(note)
        deploy = next(r for r in await records(app, note) if r.key.endswith("#deploy"))
        with pytest.raises(PermissionDeniedError) as refused:
            await app.service.deletes.delete(app.caller, deploy.id)
        assert str(refused.value) == (
            f"memory {deploy.id} mirrors note {note.resolve()} lines 3-5; edit or delete "
            "the file instead (its memories follow it)"
        )
        assert len(await records(app, note)) == 2, "nothing was deleted"

        # The file gone (and no watcher to notice): the leftover memory may be deleted.
        note.unlink()
        assert await app.service.deletes.delete(app.caller, deploy.id) == deploy.id
        assert len(await records(app, note)) == 1


async def test_the_embedding_queue_takes_turns_between_notes_in_short_batches(
    make_settings: Callable[..., Settings], memory_dir: Path
) -> None:
    big = memory_dir / "big.md"
    big.write_text(
        "\n\n".join(f"# Part {n}\n" + f"Paragraph {n} of the manual. " * 60 for n in range(30))
    )
    small = memory_dir / "small.md"
    small.write_text("The pager goes to Marisol this week.")
    async with opened(make_settings()) as app:
        await app.notes.index_path(big)
        await app.notes.index_path(small)
        model = app.service.vectors.model
        (small_memory,) = await records(app, small)
        assert not await app.service.store.vectors.has(model, small_memory.content_hash)

        # One short batch, as the background worker takes it: the newest note is in it.
        done = await app.service.vectors.embed_pending(max_batches=1, batch_chars=2_000)
        assert done <= 2, "about 2,000 characters: the small note and one big chunk at most"
        assert await app.service.store.vectors.has(model, small_memory.content_hash)
        assert done + await app.service.vectors.embed_pending() == len(await records(app, big)) + 1
