"""Exact keys and identifiers come first, judged with the real all-MiniLM-L6-v2 (issue 7,
item 1): fusion weighs meaning 0.7 and words 0.3, which buried them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.search.hits import RankedHit
from memory_mcp.semantic.embeddings import SentenceTransformerEmbedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

# What a bulk import of generated records looks like: keys that differ only by a number,
# values from templates (100 distinct texts, so the model embeds 100, not 2,000).
TOPICS = [
    "Nightly build finished; the integration tests passed on the staging cluster.",
    "Rotated the database credentials and restarted the API workers.",
    "Customer reported slow page loads on the checkout flow after the release.",
    "Upgraded the search service and rebuilt its index from scratch.",
    "The cache hit rate dropped below eighty percent during the traffic spike.",
    "Reviewed the pull request that moves the scheduler to a separate process.",
    "Backups were verified by restoring last night's snapshot to a scratch server.",
    "The mobile app crashed on start for users with an outdated operating system.",
    "Sprint planning: the team agreed to pay down the logging debt first.",
    "Latency alerts fired for the payments endpoint and cleared after ten minutes.",
]


def generated(i: int) -> tuple[str, str]:
    return f"gen-{i:04d}", f"{TOPICS[i % 10]} Batch {i // 10 % 10}."


def keys_of(hits: list[RankedHit]) -> list[str]:
    return [hit.record.key for hit in hits]


def assert_scores_in_order(hits: list[RankedHit]) -> None:
    scores = [hit.score for hit in hits]
    assert all(0.0 <= s <= 1.0 for s in scores), scores
    assert scores == sorted(scores, reverse=True), scores


async def test_a_key_among_2000_generated_ones_comes_first(
    make_settings: Callable[..., Settings], real_embedder: SentenceTransformerEmbedder
) -> None:
    await real_embedder.wait_ready()
    settings = make_settings(watch=False)
    # Stored as `memory-mcp import` stores them: every line first, vectors afterwards in
    # batches (FAKE embedder that is never ready: nothing is embedded while storing).
    async with opened(settings, FakeEmbedder(ready=False)) as app:
        service, caller = app.service, app.caller
        batch = [  # each line checked, then written in one transaction
            (caller, service.prepare_memory(caller, StoreRequest(*generated(i))), None)
            for i in range(2000)
        ]
        assert (await service.write_batch(batch)).created == 2000
    async with opened(settings, real_embedder) as app:
        assert await app.service.vectors.embed_pending() == 100

        hits = (await app.service.search(app.caller, SearchRequest("gen-0042", limit=50))).hits
        assert keys_of(hits)[0] == "gen-0042"
        assert_scores_in_order(hits)

        hits = (await app.service.search(app.caller, SearchRequest("GEN-1234", limit=5))).hits
        assert keys_of(hits)[0] == "gen-1234"  # keys match whatever the case

        # An identifier inside a question: the memory holding it, then the others.
        hits = (
            await app.service.search(
                app.caller, SearchRequest("what did gen-1999 say about the cache?")
            )
        ).hits
        assert keys_of(hits)[0] == "gen-1999"
        assert_scores_in_order(hits)


CODE_NOTES = {
    # The exact words, in passing, in a note about many things: a diluted vector.
    "release-3.2": (
        "Release 3.2 notes: bumped the logging library to 2.x, renamed two config keys, "
        "moved the nightly jobs to the new scheduler, PaymentService.refund now takes an "
        "idempotency key, the admin dashboard got a dark mode, and the mobile app shows "
        "offline banners."
    ),
    # About the same thing, without the identifier: close in meaning only.
    "refund-flow": (
        "The payment service handles refunds: it reverses the charge with the card "
        "provider and emails the customer a receipt."
    ),
    "support-money-back": (
        "To give a customer their money back, support issues a refund of the payment "
        "from the billing console; it reaches the card within five days."
    ),
    "payment-provider": "Card payments go through Stripe; the service retries declined charges.",
    "deploy": "Deploys go through the blue-green pipeline; never push straight to prod.",
    "editor": "The team edits code in Neovim with the LSP configured.",
    "oncall": "The on-call rotation changes every Monday at 10:00.",
}


async def test_an_identifier_beats_memories_that_only_mean_the_same(
    make_settings: Callable[..., Settings], real_embedder: SentenceTransformerEmbedder
) -> None:
    await real_embedder.wait_ready()
    async with opened(make_settings(watch=False), real_embedder) as app:
        for key, value in CODE_NOTES.items():
            await app.service.store_memory(app.caller, StoreRequest(key, value))

        for query in (
            "PaymentService.refund",
            "what changed in PaymentService.refund?",  # today's main: 3rd, under refund-flow
            "where is PaymentService.refund called",
        ):
            hits = (await app.service.search(app.caller, SearchRequest(query, limit=3))).hits
            assert keys_of(hits)[0] == "release-3.2", query
            assert hits[0].matched_by == "both"
            assert_scores_in_order(hits)

        # Without the identifier, meaning decides as before.
        hits = (
            await app.service.search(app.caller, SearchRequest("how do customers get money back?"))
        ).hits
        assert keys_of(hits)[0] == "support-money-back"
