"""MemoryService.list_memories and .history, on a real store (SQLite file and PostgreSQL):
paging by cursor under concurrent writes, filters, visibility, versions and who wrote
them. (The tools over them: tests/mcp/test_tools_browse.py.)"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from memory_mcp.errors import InvalidInputError, MemoryNotFoundError
from memory_mcp.models import Caller, Role, Scope, Source, StoreRequest
from memory_mcp.rules.browsing import ListFilters
from memory_mcp.rules.service import MemoryService
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

W1 = Caller("w1", Role.WORKER, "s1")
W2 = Caller("w2", Role.WORKER, "s2")
LEAD = Caller("lead", Role.LEAD, "s0")
T0 = 1_790_000_000.0  # 2026-09-21


async def put(
    service: MemoryService, caller: Caller, key: str, value: str, at: float, **extra: object
) -> int:
    request = StoreRequest(key=key, value=value, written_at=at, **extra)  # type: ignore[arg-type]
    return (await service.store_memory(caller, request, embed_now=False)).record.id


async def every_page(
    service: MemoryService, caller: Caller, limit: int, **kwargs: object
) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await service.list_memories(caller, cursor=cursor, limit=limit, **kwargs)  # type: ignore[arg-type]
        pages.append([r.key for r in page.records])
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


async def test_pages_come_newest_first_and_end(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        for n in range(5):
            await put(app.service, W1, f"k{n}", f"value {n}", T0 + n)
        pages = await every_page(app.service, W1, limit=2)
    assert pages == [["k4", "k3"], ["k2", "k1"], ["k0"]]


async def test_a_full_last_page_has_no_cursor(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        for n in range(4):
            await put(app.service, W1, f"k{n}", "v", T0 + n)
        page = await app.service.list_memories(W1, limit=4)
    assert page.next_cursor is None


async def test_equal_timestamps_page_by_id_without_repeats(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        for n in range(7):
            await put(app.service, W1, f"k{n}", "same second", T0)
        pages = await every_page(app.service, W1, limit=3)
    assert sum(pages, []) == [f"k{n}" for n in reversed(range(7))]


async def test_paging_while_others_insert_misses_and_repeats_nothing(
    make_settings: Callable[..., Settings],
) -> None:
    """120 memories listed 7 at a time while two writers add 60 more: every memory that was
    there before the first page is seen exactly once, and nothing written meanwhile (always
    newer) slips into a later page."""
    async with opened(make_settings()) as app:
        service = app.service
        for n in range(120):
            await put(service, W1, f"old-{n:03}", f"old value {n}", T0 + n)
        seen: list[str] = []

        async def page_through() -> None:
            cursor = None
            while True:
                page = await service.list_memories(W1, cursor=cursor, limit=7)
                seen.extend(r.key for r in page.records)
                await anyio.sleep(0)  # let the writers in between pages
                if page.next_cursor is None:
                    return
                cursor = page.next_cursor

        async def write(prefix: str) -> None:
            for n in range(30):
                await put(service, W1, f"{prefix}-{n:03}", "written while paging", time.time())
                await anyio.sleep(0)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write, "new-a")
            tasks.start_soon(write, "new-b")
            tasks.start_soon(page_through)
    old = [key for key in seen if key.startswith("old-")]
    assert old == [f"old-{n:03}" for n in reversed(range(120))]
    assert len(seen) == len(set(seen))


async def test_a_worker_never_lists_another_agents_private_memories(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        await put(app.service, W2, "w2-private", "mine", T0)
        await put(app.service, W2, "w2-session", "this session", T0, scope=Scope.SESSION)
        await put(app.service, W2, "w2-shared", "for all", T0, scope=Scope.SWARM)
        await put(app.service, W1, "w1-own", "own", T0)
        as_w1 = await app.service.list_memories(W1)
        as_lead = await app.service.list_memories(LEAD, ListFilters(agent_id="w2"))
    assert sorted(r.key for r in as_w1.records) == ["w1-own", "w2-shared"]
    assert [r.key for r in as_lead.records] == ["w2-shared"]


async def test_filters_narrow_the_listing(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W1, "tagged", "v", T0, tags=["build", "ci"])
        await put(s, W1, "task", "v", T0 + 1, source=Source.TASK_COMPLETION, ttl_seconds=1e9)
        await put(s, W1, "shared", "v", T0 + 2, scope=Scope.SWARM)
        await put(s, W2, "by-w2", "v", T0 + 3, scope=Scope.SWARM)

        async def keys(filters: ListFilters) -> list[str]:
            return [r.key for r in (await s.list_memories(W1, filters)).records]

        assert await keys(ListFilters(tags=("build",))) == ["tagged"]
        assert await keys(ListFilters(source=Source.TASK_COMPLETION)) == ["task"]
        assert await keys(ListFilters(scope=Scope.SWARM)) == ["by-w2", "shared"]
        assert await keys(ListFilters(agent_id="w2")) == ["by-w2"]
        assert await keys(ListFilters(since=T0 + 1, until=T0 + 2)) == ["shared", "task"]


async def test_since_applies_to_the_order_column(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W1, "made-early", "v1", T0)
        await put(s, W1, "made-late", "v1", T0 + 100)
        await put(s, W1, "made-early", "v2", T0 + 200)  # updated last
        updated = await s.list_memories(W1, ListFilters(since=T0 + 150))
        created = await s.list_memories(W1, ListFilters(since=T0 + 50), order="created")
    assert [r.key for r in updated.records] == ["made-early"]
    assert [r.key for r in created.records] == ["made-late"]


async def test_expired_memories_are_listed_only_when_asked(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        await put(s, W1, "gone", "v", time.time() - 100, ttl_seconds=10)
        await put(s, W1, "live", "v", time.time())
        default = await s.list_memories(W1)
        everything = await s.list_memories(W1, ListFilters(include_expired=True))
    assert [r.key for r in default.records] == ["live"]
    assert [r.key for r in everything.records] == ["live", "gone"]


async def test_a_cursor_of_another_order_is_refused(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        for n in range(3):
            await put(app.service, W1, f"k{n}", "v", T0 + n)
        page = await app.service.list_memories(W1, limit=1)
        assert page.next_cursor is not None
        with pytest.raises(InvalidInputError, match="order='updated'"):
            await app.service.list_memories(W1, order="created", cursor=page.next_cursor)


@pytest.mark.parametrize("cursor", ["", "garbage!", "W10", "WyJ1cGRhdGVkIiwxLDJd" * 20])
async def test_a_forged_cursor_is_refused(
    make_settings: Callable[..., Settings], cursor: str
) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError) as raised:
            await app.service.list_memories(W1, cursor=cursor)
    assert raised.value.field == "cursor"


@pytest.mark.parametrize("limit", [0, 101, True])
async def test_limit_is_bounded(make_settings: Callable[..., Settings], limit: int) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError, match="limit"):
            await app.service.list_memories(W1, limit=limit)


async def test_an_unknown_order_is_refused(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        with pytest.raises(InvalidInputError, match="order"):
            await app.service.list_memories(W1, order="accessed")


async def test_history_lists_every_version_with_its_writer_and_time(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = await put(s, W1, "rule", "one reviewer", T0, scope=Scope.SWARM)
        await put(s, W1, "rule", "two reviewers", T0 + 10, scope=Scope.SWARM, tags=["process"])
        await put(s, LEAD, "rule", "three reviewers", T0 + 20, scope=Scope.SWARM)
        await put(s, W1, "rule", "two reviewers again", T0 + 30, scope=Scope.SWARM)
        versions = (await s.history(W2, memory_id)).versions
    assert [(v.version, v.value, v.written_by, v.written_at) for v in versions] == [
        (1, "one reviewer", "w1", T0),
        (2, "two reviewers", "w1", T0 + 10),
        (3, "three reviewers", "lead", T0 + 20),
        (4, "two reviewers again", "w1", T0 + 30),
    ]
    assert [v.current for v in versions] == [False, False, False, True]
    assert versions[1].tags == ["process"]


async def test_history_of_a_memory_never_updated_is_one_version(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W1, "k", "v", T0)
        versions = (await app.service.history(W1, memory_id)).versions
    assert [(v.version, v.value, v.current) for v in versions] == [(1, "v", True)]


async def test_history_pages_back_from_the_newest_version_to_the_first(
    make_settings: Callable[..., Settings],
) -> None:
    """A memory rewritten many times is shown a page at a time, newest first; following
    `earlier` reaches version 1, and the pages together are the whole history, each
    version dated when it was written."""
    async with opened(make_settings()) as app:
        s = app.service
        memory_id = 0
        for i in range(7):
            memory_id = await put(s, W1, "status", f"step {i + 1}", T0 + 10 * i)
        whole = await s.history(W1, memory_id, limit=None)
        pages = []
        page = await s.history(W1, memory_id, limit=3)
        pages.append(page)
        while page.earlier is not None:
            page = await s.history(W1, memory_id, limit=3, before=page.earlier)
            pages.append(page)
        one = await s.history(W1, memory_id, limit=1)
        fourth = await s.version_of(W1, memory_id, 4)
    assert [[v.version for v in p.versions] for p in pages] == [[5, 6, 7], [2, 3, 4], [1]]
    assert [p.earlier for p in pages] == [5, 2, None]
    assert [v for p in reversed(pages) for v in p.versions] == whole.versions
    assert [v.written_at for v in whole.versions] == [T0 + 10 * i for i in range(7)]
    assert whole.earlier is None
    assert ([v.version for v in one.versions], one.earlier) == ([7], 7)
    assert (fourth.value, fourth.written_at) == ("step 4", T0 + 30)


async def test_a_history_page_past_the_current_version_ends_with_it(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W1, "k", "v1", T0)
        await put(app.service, W1, "k", "v2", T0 + 1)
        page = await app.service.history(W1, memory_id, limit=5, before=99)
    assert [(v.version, v.current) for v in page.versions] == [(1, False), (2, True)]
    assert page.earlier is None


@pytest.mark.parametrize(
    ("limit", "before", "named"),
    [
        (0, None, "limit"),
        (501, None, "limit"),
        (True, None, "limit"),
        (5, 1, "before"),
        (5, "3", "before"),
        (5, False, "before"),
    ],
)
async def test_a_bad_history_page_is_refused_and_named(
    make_settings: Callable[..., Settings], limit: object, before: object, named: str
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W1, "k", "v", T0)
        with pytest.raises(InvalidInputError) as refused:
            await app.service.history(W1, memory_id, limit, before)  # type: ignore[arg-type]
    assert refused.value.field == named


async def test_history_of_another_agents_private_memory_is_not_found(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        memory_id = await put(app.service, W2, "secret-plan", "v1", T0)
        await put(app.service, W2, "secret-plan", "v2", T0 + 1)
        with pytest.raises(MemoryNotFoundError):
            await app.service.history(LEAD, memory_id)
