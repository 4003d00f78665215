"""The search read path: a repeated query text is embedded once, and reading the keyword
candidates while the query is embedded changes no result."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memory_mcp.models import StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened

pytestmark = pytest.mark.anyio


class CountingEmbedder(FakeEmbedder):
    """FAKE (see FakeEmbedder), counting the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return await super().embed(texts)


async def test_the_same_query_is_embedded_once(make_settings: Callable[..., Settings]) -> None:
    embedder = CountingEmbedder()
    async with opened(make_settings(), embedder) as app:
        await app.service.store_memory(app.caller, StoreRequest("deploys", "we deploy on fridays"))
        embedder.texts.clear()
        first = await app.service.search(app.caller, "when do we deploy")
        second = await app.service.search(app.caller, "when do we deploy")
        assert embedder.texts == ["when do we deploy"]
        assert [h.record.key for h in second.hits] == [h.record.key for h in first.hits]


async def test_both_arms_find_records_with_their_current_values(
    make_settings: Callable[..., Settings],
) -> None:
    """One memory found by its words (read with the keyword arm), one only by its vector
    (read after the scan): both come back whole and current."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        service, caller = app.service, app.caller
        await service.store_memory(caller, StoreRequest("a", "the lemur migration plan"))
        await service.store_memory(caller, StoreRequest("b", "lemur"))
        await service.store_memory(caller, StoreRequest("a", "the lemur migration plan, revised"))
        result = await service.search(caller, "lemur migration")
        values = {hit.record.key: hit.record.value for hit in result.hits}
        assert values == {"a": "the lemur migration plan, revised", "b": "lemur"}
