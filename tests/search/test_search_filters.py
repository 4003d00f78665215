"""memory-search's time window (`since`/`until` on the time of last change), `min_score`
and `explain`, through an in-process MCP client, on SQLite and PostgreSQL. The filters
apply before either arm's top-k cut, so a narrow window still fills the page."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

import numpy as np
import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.checks.validation import iso
from memory_mcp.mcp.server import build_server
from memory_mcp.models import Caller, Caps, NewMemory, Role, Scope, Source, StoreRequest, Visibility
from memory_mcp.rules.permissions import can_see
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

DAY = 86_400.0
# More old matches than either arm's candidate pool (50 at limit 3): a filter applied
# after the cut would find none of the recent ones.
OLD_MATCHES = 120


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


async def write_old_and_recent(settings: Settings) -> tuple[set[int], set[int]]:
    """OLD_MATCHES memories changed 30 days ago that match "deploy staging" closely, and
    three changed an hour ago that match it loosely: (old ids, recent ids)."""
    now = time.time()
    old, recent = set(), set()
    async with opened(settings, FakeEmbedder()) as app:
        for n in range(OLD_MATCHES):
            outcome = await app.service.store_memory(
                app.caller,
                StoreRequest(
                    f"old-{n}",
                    f"deploy staging deploy staging run {n}",
                    written_at=now - 30 * DAY,
                ),
            )
            old.add(outcome.record.id)
        for n in range(3):
            outcome = await app.service.store_memory(
                app.caller,
                StoreRequest(
                    f"recent-{n}",
                    f"notes from the week, item {n}: we deploy on Tuesdays",
                    written_at=now - 3_600,
                ),
            )
            recent.add(outcome.record.id)
    return old, recent


async def test_since_fills_the_page_from_the_window(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    _, recent = await write_old_and_recent(settings)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        found = await call(client, "memory-search", query="deploy staging", limit=3, since="7d")
    assert {hit["id"] for hit in found["results"]} == recent


async def test_until_keeps_only_what_has_not_changed_since(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    old, _ = await write_old_and_recent(settings)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        found = await call(client, "memory-search", query="deploy", limit=50, until="7d")
    ids = {hit["id"] for hit in found["results"]}
    assert len(ids) == 50
    assert ids <= old


async def test_since_takes_an_iso_date_time(make_settings: Callable[..., Settings]) -> None:
    settings = make_settings()
    _, recent = await write_old_and_recent(settings)
    three_days_ago = iso(time.time() - 3 * DAY)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        found = await call(client, "memory-search", query="deploy", limit=10, since=three_days_ago)
    assert {hit["id"] for hit in found["results"]} == recent


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"since": "yesterday"}, "invalid since:"),
        ({"until": "7"}, "invalid until:"),
        ({"since": "1d", "until": "7d"}, "nothing can match"),
        ({"min_score": 1.5}, "invalid min_score:"),
        ({"min_score": -0.1}, "invalid min_score:"),
    ],
)
async def test_bad_filters_are_refused_by_name(
    make_settings: Callable[..., Settings], arguments: dict[str, object], named: str
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        error = await call_error(client, "memory-search", query="deploy", **arguments)
    assert named in error


async def store_varied(client: Client) -> None:
    for key, value in [
        ("deploy", "deploy staging with make deploy"),
        ("deploy-notes", "deploy notes: staging first, then production"),
        ("lunch", "lunch is at noon; deploy nothing on Fridays"),
        ("cat", "the office cat is called Miso"),
    ]:
        await call(client, "store_memory", key=key, value=value)


async def test_min_score_leaves_out_the_weaker_results(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await store_varied(client)
        every = (await call(client, "memory-search", query="deploy staging"))["results"]
        scores = sorted(hit["score"] for hit in every)
        floor = (scores[0] + scores[-1]) / 2
        kept = (await call(client, "memory-search", query="deploy staging", min_score=floor))[
            "results"
        ]
    assert [hit["id"] for hit in kept] == [hit["id"] for hit in every if hit["score"] >= floor]
    assert 0 < len(kept) < len(every)


async def test_explain_gives_the_parts_of_each_score(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await store_varied(client)
        found = (await call(client, "memory-search", query="staging deploy", explain=True))[
            "results"
        ]
    assert found
    for hit in found:
        parts = hit["explain"]
        assert parts["exact"] is None
        assert hit["score"] == pytest.approx(parts["relevance"] * parts["prior"], abs=2e-4)
        assert parts["prior"] == pytest.approx(
            parts["recency"] * parts["access"] * parts["source_quality"], abs=2e-4
        )
        assert parts["why"]


async def test_explain_names_an_exact_key_match(make_settings: Callable[..., Settings]) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await store_varied(client)
        found = (await call(client, "memory-search", query="deploy-notes", explain=True))["results"]
    assert found[0]["key"] == "deploy-notes"
    assert found[0]["explain"]["exact"] == "key"
    assert "its key is the query" in found[0]["explain"]["why"]


async def test_without_explain_there_is_none(make_settings: Callable[..., Settings]) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        await store_varied(client)
        found = (await call(client, "memory-search", query="deploy"))["results"]
    assert found
    assert all("explain" not in hit for hit in found)


# -- the time window is one rule in two places: SQL (both arms on PostgreSQL, the keyword
#    arm on SQLite) and the numpy mask (the vector arm on SQLite) ---------------------------

CHANGED_AT = [1_000.0, 2_000.0, 3_000.0, 4_000.0]
WINDOWS = [
    (None, None),
    (2_000.0, None),
    (None, 2_000.0),
    (2_000.0, 3_000.0),
    (2_500.0, 2_600.0),
    (4_000.0, 4_000.0),
]


async def test_sql_and_the_vector_mask_agree_on_the_window(
    make_settings: Callable[..., Settings],
) -> None:
    caller = Caller("alice", Role.WORKER, "s1")
    async with opened(make_settings()) as app:
        store, vectors = app.service.store, app.service.vectors
        for n, (at, owner) in enumerate(itertools.product(CHANGED_AT, ["alice", "bob"])):
            await store.upsert(
                NewMemory(f"m{n}", f"memory {n}", Scope.AGENT, owner, "", Source.MANUAL),
                expected_version=None,
                now=at,
                cap=Caps(),
                may_overwrite_others=False,
            )
        await vectors.embed_pending()
        await vectors.search.catch_up()
        records = [record async for record in store.iter_records()]
        query = np.ones(384, dtype=np.float32) / np.sqrt(384)
        wrong = []
        for since, until in WINDOWS:
            vis = Visibility(caller, now=5_000.0, updated_since=since, updated_until=until)
            expected = {
                r.id
                for r in records
                if can_see(caller, r)
                and (since is None or r.updated_at >= since)
                and (until is None or r.updated_at <= until)
            }
            by_sql = {r.id async for r in store.iter_records(vis)}
            by_vectors = {i for i, _ in await vectors.search.nearest(query, vis, len(records))}
            if by_sql != expected or by_vectors != expected:
                wrong.append(f"{since}-{until}: {expected} sql {by_sql} vectors {by_vectors}")
    assert wrong == []
