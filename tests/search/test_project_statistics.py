"""A project's search ranks as if its memories (and `*`'s) were alone in the store: what
other projects hold changes no keyword score, no choice of terms and no order. The keyword
arm's statistics count the projects the search covers (store/fulltext.py, Population).
FakeEmbedder: the vector arm's cosines depend on the candidates only, not judged here."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.models import Caller, Role, Scope, SearchRequest, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import SQLITE_ONLY, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, SQLITE_ONLY]

IN_ALPHA = Caller("w1", Role.WORKER, "s1", project="alpha")
IN_BETA = Caller("w1", Role.WORKER, "s2", project="beta")
QUERIES = ("Vandelayindustries", "latex importer", "vandelayindustries latex exporter")


async def reports(
    app: AppContext, project: str | None = None
) -> list[list[tuple[str, float | None, float]]]:
    """Each query's results as alpha's caller is told them: key, raw BM25, score."""
    found = []
    for query in QUERIES:
        result = await app.service.search(IN_ALPHA, SearchRequest(query, project=project))
        found.append(
            [(h.record.key, h.parts.bm25 if h.parts else None, h.score) for h in result.hits]
        )
    return found


async def test_other_projects_change_nothing_a_projects_search_reports(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        for key, value in (
            ("vandelay", "Vandelayindustries imports latex"),
            ("exporter", "The latex exporter ships on Fridays"),
            ("importer", "Our importer reads latex catalogues"),
        ):
            await app.service.store_memory(IN_ALPHA, StoreRequest(key, value, Scope.SWARM))
        alone = await reports(app)
        assert alone[0][0][0] == "vandelay" and alone[0][0][1] is not None
        everywhere = await reports(app, project="*")

        # Beta's memories: the rare word once, one query word in many, long ones.
        for n, value in enumerate(
            ["Vandelayindustries is a cover"]
            + [f"latex gloves batch {i}" for i in range(12)]
            + ["importer " + "padding words " * 40]
        ):
            await app.service.store_memory(IN_BETA, StoreRequest(f"b{n}", value, Scope.SWARM))
        assert await reports(app) == alone
        # Read over every project, beta's memories count (the filter is what keeps them out).
        assert await reports(app, project="*") != everywhere
