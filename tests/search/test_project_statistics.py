"""A project's search ranks as if its memories (and `*`'s) were alone in the store: what
other projects hold changes no keyword score, no choice of terms and no order. The keyword
arm's statistics count the projects the search covers (store/sqlite/fts5.py, Population).
FakeEmbedder: the vector arm's cosines depend on the candidates only, not judged here."""

from __future__ import annotations

import sqlite3
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


def index_checks(settings: Settings) -> None:
    """FTS5's own check: the index holds exactly what its content (a view spelling each
    memory's project token) says."""
    db = sqlite3.connect(settings.database_file or "")
    try:
        db.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    finally:
        db.close()


async def test_the_keyword_index_filters_by_project_and_follows_a_move(
    make_settings: Callable[..., Settings],
) -> None:
    """The index's own project filter (store/schema.py, the `project` column) is on once
    other projects hold memories: counts of a word repeated in a memory stay exact, a
    memory moved to another project is found by its words there and no longer where it
    was, and a query spelling a project's token finds nothing by it."""
    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        service = app.service
        repeated = await service.store_memory(
            IN_ALPHA, StoreRequest("latex", "latex latex latex gloves", Scope.SWARM)
        )
        await service.store_memory(IN_ALPHA, StoreRequest("gloves", "gloves of latex", Scope.SWARM))
        for n in range(4):
            await service.store_memory(
                IN_ALPHA, StoreRequest(f"other{n}", f"nothing alike {n}", Scope.SWARM)
            )
        alone = await reports(app)
        latex_alone = await service.search(IN_ALPHA, SearchRequest("latex"))
        for n in range(24):  # alpha's 6 memories become a small part of the store
            await service.store_memory(
                IN_BETA, StoreRequest(f"b{n}", f"latex batch {n}", Scope.SWARM)
            )
        assert await reports(app) == alone
        latex = await service.search(IN_ALPHA, SearchRequest("latex"))
        assert [(h.record.key, h.parts and h.parts.bm25) for h in latex.hits] == [
            (h.record.key, h.parts and h.parts.bm25) for h in latex_alone.hits
        ]
        assert latex.hits[0].record.id == repeated.record.id

        moved = await service.tasks.move_to_project(IN_ALPHA, [repeated.record], "beta")
        assert moved
        in_beta = await service.search(IN_BETA, SearchRequest("gloves"))
        by_words = {h.record.id for h in in_beta.hits if h.parts and h.parts.bm25 is not None}
        assert repeated.record.id in by_words
        in_alpha = await service.search(IN_ALPHA, SearchRequest("gloves"))
        assert repeated.record.id not in {h.record.id for h in in_alpha.hits}

        token = "x" + b"alpha".hex()
        found = await service.search(IN_ALPHA, SearchRequest(token, project="*"))
        assert [h for h in found.hits if h.parts and h.parts.bm25 is not None] == []
    index_checks(settings)
