"""MemoryService.revert, .delete_by_key and .delete_many on a real store (SQLite file and
PostgreSQL): the single-memory permission rules hold for each of them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    NotFoundError,
    PermissionDeniedError,
    VersionConflictError,
)
from memory_mcp.models import Caller, Role, Scope, Source, StoreRequest
from memory_mcp.rules.service import MemoryService
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

W1 = Caller("w1", Role.WORKER, "s1")
W2 = Caller("w2", Role.WORKER, "s2")
LEAD = Caller("lead", Role.LEAD, "s0")
T0 = 1_790_000_000.0


async def put(
    service: MemoryService, caller: Caller, key: str, value: str, at: float = T0, **extra: object
) -> int:
    request = StoreRequest(key=key, value=value, written_at=at, **extra)  # type: ignore[arg-type]
    return (await service.store_memory(caller, request, embed_now=False)).record.id


async def test_revert_writes_a_new_version_equal_to_the_old_one(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = await put(s, W1, "db", "SQLite", tags=["storage"])
        await put(s, W1, "db", "PostgreSQL", T0 + 1, tags=["storage", "server"])
        outcome = await s.revert(W1, memory_id, 1)
        versions = (await s.history(W1, memory_id)).versions
    assert (outcome.record.version, outcome.record.value) == (3, "SQLite")
    assert outcome.record.tags == ["storage"]
    assert [v.value for v in versions] == ["SQLite", "PostgreSQL", "SQLite"]


async def test_revert_refuses_when_the_memory_moved_on(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = await put(s, W1, "db", "SQLite")
        await put(s, W1, "db", "PostgreSQL", T0 + 1)
        with pytest.raises(VersionConflictError, match="current version is 2"):
            await s.revert(W1, memory_id, 1, expected_version=1)


async def test_revert_to_a_version_that_never_was_names_the_range(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W1, "db", "SQLite")
        with pytest.raises(InvalidInputError, match="versions 1 to 1, not 5"):
            await app.service.revert(W1, memory_id, 5)


async def test_only_the_owner_or_the_lead_reverts_a_swarm_memory(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = await put(s, W1, "rule", "one", scope=Scope.SWARM)
        await put(s, W1, "rule", "two", T0 + 1, scope=Scope.SWARM)
        with pytest.raises(PermissionDeniedError, match="only its owner or the lead"):
            await s.revert(W2, memory_id, 1)
        by_lead = await s.revert(LEAD, memory_id, 1)
    assert (by_lead.record.value, by_lead.record.updated_by) == ("one", "lead")


async def test_nobody_reverts_another_agents_private_memory(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W1, "mine", "one")
        await put(app.service, W1, "mine", "two", T0 + 1)
        with pytest.raises(MemoryNotFoundError):
            await app.service.revert(LEAD, memory_id, 1)


async def test_delete_by_key_deletes_the_memory_store_memory_would_update(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        private = await put(s, W1, "editor", "vim")
        shared = await put(s, W1, "editor", "emacs", scope=Scope.SWARM)
        deleted = await s.deletes.delete_by_key(W1, "editor", Scope.SWARM)
        left = await s.get(W1, private)
    assert (deleted, left.value) == (shared, "vim")


async def test_delete_by_key_never_reaches_another_agents_private_memory(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        await put(app.service, W2, "editor", "vim")
        with pytest.raises(NotFoundError, match="no agent memory with key 'editor'"):
            await app.service.deletes.delete_by_key(W1, "editor")


async def test_delete_by_key_of_another_agents_swarm_memory_needs_the_lead(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = await put(s, W2, "rule", "x", scope=Scope.SWARM)
        with pytest.raises(PermissionDeniedError):
            await s.deletes.delete_by_key(W1, "rule", Scope.SWARM)
        assert await s.deletes.delete_by_key(LEAD, "rule", Scope.SWARM) == memory_id


async def test_delete_many_dry_run_deletes_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        for n in range(3):
            await put(s, W1, f"tmp-{n}", "scratch", T0 + n, tags=["scratch"])
        await put(s, W1, "keep", "important")
        preview = await s.deletes.delete_many(W1, tags=["scratch"], dry_run=True)
        still = await s.list_memories(W1, limit=10)
    assert [r.key for r in preview.records] == ["tmp-0", "tmp-1", "tmp-2"]
    assert (preview.deleted, len(still.records)) == (0, 4)


async def test_delete_many_deletes_what_the_dry_run_showed(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        for n in range(3):
            await put(s, W1, f"tmp-{n}", "scratch", T0 + n, tags=["scratch"])
        await put(s, W1, "keep", "important", tags=["other"])
        preview = await s.deletes.delete_many(W1, tags=["scratch"], dry_run=True)
        done = await s.deletes.delete_many(W1, tags=["scratch"])
        left = await s.list_memories(W1, limit=10)
    assert [r.id for r in done.records] == [r.id for r in preview.records]
    assert done.deleted == 3
    assert [r.key for r in left.records] == ["keep"]


async def test_delete_many_stops_at_its_limit_and_says_what_remains(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        for n in range(5):
            await put(app.service, W1, f"k{n}", "v", T0 + n, source=Source.TASK_COMPLETION)
        first = await app.service.deletes.delete_many(W1, source=Source.TASK_COMPLETION, limit=2)
    assert (first.deleted, first.matched, first.remaining) == (2, 5, 3)
    assert [r.key for r in first.records] == ["k0", "k1"]


async def test_delete_many_older_than_keeps_newer_memories(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W1, "old", "v", T0)
        await put(s, W1, "new", "v", T0 + 1_000)
        done = await s.deletes.delete_many(W1, older_than=T0 + 500)
        left = await s.list_memories(W1)
    assert [r.key for r in done.records] == ["old"]
    assert [r.key for r in left.records] == ["new"]


async def test_a_worker_bulk_deletes_only_its_own(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W1, "mine", "v", tags=["old"], scope=Scope.SWARM)
        await put(s, W2, "theirs", "v", tags=["old"], scope=Scope.SWARM)
        await put(s, W2, "their-private", "v", tags=["old"])
        done = await s.deletes.delete_many(W1, tags=["old"])
        theirs = await s.list_memories(W2)
    assert [r.key for r in done.records] == ["mine"]
    assert done.not_allowed == 1, "the other's swarm memory is seen but not deletable"
    assert sorted(r.key for r in theirs.records) == ["their-private", "theirs"]


async def test_the_lead_bulk_deletes_swarm_memories_but_no_private_ones(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W2, "theirs", "v", tags=["old"], scope=Scope.SWARM)
        await put(s, W2, "their-private", "v", tags=["old"])
        done = await s.deletes.delete_many(LEAD, tags=["old"])
        left = await s.list_memories(W2)
    assert [r.key for r in done.records] == ["theirs"]
    assert [r.key for r in left.records] == ["their-private"]


async def test_delete_many_needs_a_criterion(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError, match="at least one of tags, source and older_than"):
            await app.service.deletes.delete_many(W1)


async def test_delete_many_leaves_notes_to_their_files(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError, match="notes follow their files"):
            await app.service.deletes.delete_many(W1, source=Source.FILE_INDEX)
