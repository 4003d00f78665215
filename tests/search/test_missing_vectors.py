"""search/missing_vectors.py on both stores, with the real model and no background worker
(the CLI's situation): a search embeds its keyword candidates that have no vector, saves
their vectors, and ranks them by their meaning too; past its bound it ranks them on their
words and says so. As processes, the way a user meets it: tests/cli/test_search_vectorless.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.search import missing_vectors
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

QUESTION = "how do I undo a bad release"
NOTE = """# Rolling back a release

If a release goes bad, roll it back: run `deploy rollback --to previous` from the ops box,
then confirm the health check is green before telling the channel.
"""
MEMORIES = {
    "style": "Prefer small pull requests with one concern each",
    "coffee": "The coffee machine on floor 3 is bad, use the one on floor 2",
}


async def test_a_search_embeds_the_note_it_matched_by_words(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    settings = make_settings()
    settings.personal_memory_dir.mkdir(parents=True)
    (settings.personal_memory_dir / "releases.md").write_text(NOTE)
    async with opened(settings, real_embedder) as app:
        await app.notes.reconcile(app.notes.folders[0])
        for key, value in MEMORIES.items():
            await app.service.store_memory(app.caller, StoreRequest(key, value))
        assert await app.service.vectors.has_pending()  # the note: no vector yet

        result = await app.service.search(app.caller, SearchRequest(QUESTION))

        first = result.hits[0]
        assert first.record.key.endswith("#rolling-back-a-release")
        assert first.matched_by == "both"
        assert first.parts is not None and first.parts.cosine is not None
        assert first.parts.cosine > 0.3
        assert first.score > 2 * max(hit.score for hit in result.hits[1:])
        assert result.notices == []
        assert not await app.service.vectors.has_pending()  # saved for every later search


async def test_past_the_bound_the_note_ranks_on_its_words_and_is_named(
    make_settings: Callable[..., Settings],
    real_embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(missing_vectors, "FILL_TEXTS", 0)
    settings = make_settings()
    settings.personal_memory_dir.mkdir(parents=True)
    (settings.personal_memory_dir / "releases.md").write_text(NOTE)
    async with opened(settings, real_embedder) as app:
        await app.notes.reconcile(app.notes.folders[0])
        for key, value in MEMORIES.items():
            await app.service.store_memory(app.caller, StoreRequest(key, value))

        result = await app.service.search(app.caller, SearchRequest(QUESTION))

        first = result.hits[0]
        assert first.record.key.endswith("#rolling-back-a-release")
        assert first.matched_by == "keyword"
        assert result.notices == [missing_vectors.unembedded_notice(1)]
        assert await app.service.vectors.has_pending()
