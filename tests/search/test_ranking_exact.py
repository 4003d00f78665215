"""Exact matches first (memory_mcp/search/exact_match.py): what counts as an identifier, how
exactness orders and scores results, and that the exact candidates are found and kept
within the caller's visibility. FakeEmbedder where only the keyword side and the rules are
judged; retrieval with the real model is in test_search_exact.py."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import (
    Caller,
    MemoryRecord,
    Role,
    Scope,
    SearchRequest,
    Source,
    StoreRequest,
    Visibility,
)
from memory_mcp.search.exact_match import (
    MAX_IDENTIFIERS,
    ExactMatches,
    exact_first,
    identifier_tokens,
    is_identifier,
    with_candidates,
)
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.keyword import MATCH_BUDGET, query_terms
from memory_mcp.store.sqlite import fts5
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, FakeEmbedder, opened
from tests.store.test_store_migration import build_old_store

pytestmark = BOTH_BACKENDS


@pytest.mark.parametrize(
    "token",
    [
        "gen-0042",
        "PaymentService.refund",
        "ERR_CONN_42",
        "snake_case",
        "getUser",
        "PaymentService",
        "v2",
        "sha256",
        "x86_64",
        "api.v2",
        "src/app.py",
        "node.js",
        "1.2.3",
        "2024-05-01",
        "10:30",
        "D1:3",
    ],
)
def test_identifiers(token: str) -> None:
    assert is_identifier(token)


@pytest.mark.parametrize(
    "token",
    [
        "refund",
        "the",
        "Payment",  # capitalised
        "LGBTQ",  # all capitals
        "2022",  # a number
        "3",
        "15th",  # ordinals and quantities
        "5K",
        "10am",
        "64GB",
        "self-care",  # hyphenated English
        "gluten-free",
        "one-year-old",
        "and/or",
        "U.S",  # abbreviations
        "e.g",
        "J.K",
    ],
)
def test_not_identifiers(token: str) -> None:
    assert not is_identifier(token)


def test_identifier_tokens_of_a_query() -> None:
    assert identifier_tokens("Where is PaymentService.refund called?") == ["PaymentService.refund"]
    # Sentence punctuation is not part of the identifier; each is kept once, first spelling.
    assert identifier_tokens("see gen-0042. Then GEN-0042, and ERR_42!") == [
        "gen-0042",
        "ERR_42",
    ]
    assert identifier_tokens("What did Caroline say about the self-care group in 2022?") == []
    many = " ".join(f"id_{i}" for i in range(20))
    assert len(identifier_tokens(many)) == MAX_IDENTIFIERS


def record(memory_id: int, key: str, value: str, updated_at: float = 0.0) -> MemoryRecord:
    return MemoryRecord(
        id=memory_id, key=key, value=value, scope=Scope.AGENT, agent_id="a", session_id="s",
        source=Source.MANUAL, tags=[], metadata={}, flags=[], confidence=None, pinned=False,
        version=1, content_hash="h", created_at=0.0, updated_at=updated_at,
        expires_at=None, last_accessed_at=None, access_count=0,
    )  # fmt: skip


def test_levels() -> None:
    matches = ExactMatches(key="Deploy-Notes", identifiers=("gen-0042", "PaymentService.refund"))
    assert matches.level(record(1, "deploy-notes", "anything")) == 2  # case-insensitive
    assert matches.level(record(2, "gen-0042", "x")) == 1
    assert matches.level(record(3, "k", "calls paymentservice.refund() twice")) == 1
    assert matches.level(record(4, "k", "(gen-0042)")) == 1
    # Not inside a longer word, and words alone are not the identifier.
    assert matches.level(record(5, "gen-00421", "PaymentService.refunds")) == 0
    assert matches.level(record(6, "k", "the payment service refund")) == 0
    assert matches.level(record(7, "deploy-notes-2", "gen 0042")) == 0


@dataclass
class Hit:
    record: MemoryRecord
    score: float


def test_exact_first_orders_by_level_then_score_and_keeps_scores_in_order() -> None:
    matches = ExactMatches(key="gen-0042", identifiers=("gen-0042",))
    hits = [
        Hit(record(1, "close-in-meaning", "x"), 0.9),
        Hit(record(2, "mentions", "see gen-0042"), 0.2),
        Hit(record(3, "gen-0042", "x"), 0.1),
        Hit(record(4, "also-mentions", "gen-0042 again"), 0.6),
        Hit(record(5, "other", "x"), 0.3),
    ]
    ranked = exact_first(hits, lambda hit: matches.level(hit.record))
    assert [h.record.id for h in ranked] == [3, 4, 2, 1, 5]
    scores = [h.score for h in ranked]
    assert scores == sorted(scores, reverse=True)
    # Three levels: thirds of [0, 1].
    assert scores == pytest.approx([(2 + 0.1) / 3, (1 + 0.6) / 3, (1 + 0.2) / 3, 0.3, 0.1])


def test_a_search_without_exact_matches_is_unchanged() -> None:
    hits = [Hit(record(1, "a", "x", updated_at=1.0), 0.4), Hit(record(2, "b", "y"), 0.7)]
    hits.append(replace(hits[0], record=record(3, "c", "z", updated_at=2.0)))
    matches = ExactMatches(key="q", identifiers=("v2",))
    ranked = exact_first(hits, lambda hit: matches.level(hit.record))
    assert [(h.record.id, h.score) for h in ranked] == [(2, 0.7), (3, 0.4), (1, 0.4)]


def test_candidates_join_the_keyword_pool_at_its_lowest_bm25() -> None:
    assert with_candidates([(1, 5.0), (2, 2.0)], [2, 3]) == [(1, 5.0), (2, 2.0), (3, 2.0)]
    assert with_candidates([], [7]) == [(7, 0.0)]


async def keys(app: AppContext, query: str, **filters: Any) -> list[str]:
    result = await app.service.search(app.caller, SearchRequest(query, **filters))
    return [hit.record.key for hit in result.hits]


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [MATCH_BUDGET, 0])
async def test_an_identifier_beyond_the_keyword_pool_is_still_first(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """Sixty short memories full of the query's other words fill the keyword arm's pool of
    50, and BM25 ranks the long note holding the identifier below them. With a budget of 0
    FTS5's cost guard returns the newest matches unranked, and the note is the oldest."""
    monkeypatch.setattr(fts5, "MATCH_BUDGET", budget)
    async with opened(make_settings()) as app:
        filler = " ".join(f"word{i}" for i in range(300))
        note = await app.service.store_memory(
            app.caller, StoreRequest("misc", f"{filler} gen-0042 {filler}")
        )
        for i in range(200):  # so that the checklist words are not in half of all memories
            await app.service.store_memory(
                app.caller, StoreRequest(f"other-{i}", f"lunch order {i}")
            )
        for i in range(60):
            await app.service.store_memory(
                app.caller,
                StoreRequest(f"deploy-checklist-{i}", "deploy checklist: deploy, then checklist"),
            )
        query = "deploy checklist gen-0042"
        vis = Visibility(caller=app.caller, now=app.service.clock())
        pool = await app.service.store.keyword_search(
            query_terms(query), vis, 50, KEYWORD_COLUMN_WEIGHTS
        )
        assert note.record.id not in {memory_id for memory_id, _ in pool}
        assert (await keys(app, query))[0] == "misc"


@pytest.mark.anyio
async def test_a_common_identifier_is_ranked_as_usual(
    make_settings: Callable[..., Settings],
) -> None:
    """In more than 50 memories an identifier does not single one out: no exact level."""
    async with opened(make_settings()) as app:
        for i in range(51):
            await app.service.store_memory(
                app.caller, StoreRequest(f"n{i}", f"node.js note number {i}")
            )
        result = await app.service.search(app.caller, SearchRequest("node.js upgrade", limit=5))
        assert max(hit.score for hit in result.hits) <= 2 / 3  # a fresh memory's best


@pytest.mark.anyio
async def test_exact_matches_stay_within_visibility_and_filters(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        other = Caller("worker-2", Role.WORKER, "s2")
        await app.service.store_memory(
            other, StoreRequest("gen-0042", "worker-2's private gen-0042")
        )
        await app.service.store_memory(
            app.caller, StoreRequest("mine", "my note on gen-0042", tags=["a"])
        )
        await app.service.store_memory(
            app.caller, StoreRequest("untagged", "gen-0042 without the tag")
        )
        await app.service.store_memory(
            other, StoreRequest("shared", "swarm gen-0042 note", scope=Scope.SWARM)
        )

        found = await keys(app, "gen-0042")
        assert "gen-0042" not in found  # another agent's private memory
        assert set(found) == {"mine", "untagged", "shared"}
        assert await keys(app, "gen-0042", tags=["a"]) == ["mine"]
        assert await keys(app, "gen-0042", scope="swarm") == ["shared"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "query", ['"gen-0042" OR *', "gen-0042 NEAR( ^ : -", 'a "quoted" key', '"', "-"]
)
async def test_fts_syntax_in_a_query_is_plain_text(
    make_settings: Callable[..., Settings], query: str
) -> None:
    async with opened(make_settings()) as app:
        await app.service.store_memory(
            app.caller, StoreRequest(query, "a memory keyed by odd text")
        )
        await app.service.store_memory(app.caller, StoreRequest("other", "gen-0042 is here"))
        found = await keys(app, query)
        if any(ch.isalnum() for ch in query):
            assert found[0] in (query, "other")


@SQLITE_ONLY  # an older SQLite file
@pytest.mark.anyio
async def test_the_key_lookup_uses_an_index_also_in_an_older_store(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """Without an index, finding the memory keyed by the query scans every memory."""
    path = tmp_path / "old.db"
    build_old_store(path)
    async with opened(make_settings(db=str(path))) as app:
        assert await keys(app, "RELEASE-DAY") == ["release-day"]
    plan = (
        sqlite3.connect(path)
        .execute("EXPLAIN QUERY PLAN SELECT id FROM memories WHERE lower(key) = lower(?)", ("x",))
        .fetchall()
    )
    assert "ix_memories_key_lower" in str(plan)
