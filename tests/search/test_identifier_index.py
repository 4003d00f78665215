"""Issue 39: an identifier with `_` is one token of its own index, not a phrase of its parts.

In the main keyword index `gcloud_alpha_compute` is the phrase `gcloud alpha compute`, and
matching it walks the position lists of three tokens that a store of man pages holds in a
large share of its memories (the 1M store's p95). The identifiers' index
(store/schema.py, `memory_identifiers`) keeps `_` inside a token, so the query word is one
lookup. A part alone (`gcloud`) is still found through the main index. FakeEmbedder: what
is judged is the keyword arm's matching, not meaning."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import Connection

from memory_mcp.app.context import AppContext
from memory_mcp.models import Caller, Role, SearchRequest, StoreRequest, Visibility
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.keyword import query_terms
from memory_mcp.store.sqlite import fts5
from tests.conftest import SQLITE_ONLY, UNSTAMP, FakeEmbedder, opened

pytestmark = [pytest.mark.anyio, SQLITE_ONLY]

W1 = Caller("w1", Role.WORKER, "s1")
MEMORIES = {
    "whole": "Create the VM with gcloud_alpha_compute_instances_create and a zone",
    "apart": "The gcloud alpha compute instances create command makes a VM",
    "longer": "gcloud_alpha_compute_instances_create_with_container runs a container",
    "tool": "Install the gcloud tool first",
}


async def _stored(app: AppContext) -> dict[str, int]:
    """Each in a session of its own: no memory lends its words to another's context."""
    ids = {}
    for key, value in MEMORIES.items():
        writer = Caller("w1", Role.WORKER, f"own-{key}")
        ids[key] = (await app.service.store_memory(writer, StoreRequest(key, value))).record.id
    return ids


async def _read(app: AppContext, read: Callable[[Connection], object]) -> object:
    async with app.service.store._engines.reader.connect() as conn:
        return await conn.run_sync(read)


async def _keyword_ids(app: AppContext, query: str) -> set[int]:
    vis = Visibility(caller=W1, now=app.service.clock())
    found = await app.service.store.keyword_search(
        query_terms(query), vis, 10, KEYWORD_COLUMN_WEIGHTS
    )
    return {memory_id for memory_id, _ in found}


async def test_an_identifier_is_matched_whole_and_its_parts_alone(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(), FakeEmbedder()) as app:
        ids = await _stored(app)
        # Matched as a phrase of its parts (the old way), the identifier also found the
        # memory that spells the command out with spaces, and the longer identifier.
        assert await _keyword_ids(app, "gcloud_alpha_compute_instances_create") == {ids["whole"]}
        vis = Visibility(caller=W1, now=app.service.clock())

        def holding(conn: Connection) -> list[int]:
            return fts5.holding_phrase(conn, "GCLOUD_alpha_compute_instances_create", vis, 10)

        assert await _read(app, holding) == [ids["whole"]]
        # One part alone is a word of the main index: every memory holding it.
        assert await _keyword_ids(app, "gcloud") == set(ids.values())
        # A query word with `_` and another word: each looked up in its own index.
        assert await _keyword_ids(app, "container gcloud_alpha_compute_instances_create") == {
            ids["whole"],
            ids["longer"],
        }
        # Stemmed as the main index stems: the plural finds the singular.
        alone = Caller("w1", Role.WORKER, "s9")
        plural = await app.service.store_memory(alone, StoreRequest("ids", "read the user_id"))
        assert await _keyword_ids(app, "user_ids") == {plural.record.id}
        # Through the whole search, exact first.
        found = await app.service.search(
            W1, SearchRequest("gcloud_alpha_compute_instances_create", limit=2)
        )
        assert found.hits[0].record.id == ids["whole"]
        assert found.hits[0].parts is not None and found.hits[0].parts.bm25


async def test_the_identifiers_index_follows_every_write(
    make_settings: Callable[..., Settings],
) -> None:
    """Only memories with a `_` are in it; an update that adds or removes one, and a
    delete, keep it equal to what it would index now (FTS5's integrity-check against the
    view), and a store made before it fills it when opened."""

    def check(conn: Connection) -> list[int]:
        conn.exec_driver_sql(
            "INSERT INTO memory_identifiers(memory_identifiers, rank) VALUES ('integrity-check', 1)"
        )
        rows = conn.exec_driver_sql("SELECT id FROM memory_identifiers_source ORDER BY id")
        return [row[0] for row in rows]

    settings = make_settings()
    async with opened(settings, FakeEmbedder()) as app:
        ids = await _stored(app)
        assert await _read(app, check) == sorted([ids["whole"], ids["longer"]])
        for key, value in (("whole", "no identifier now"), ("tool", "Install gcloud_cli first")):
            writer = Caller("w1", Role.WORKER, f"own-{key}")
            await app.service.store_memory(writer, StoreRequest(key, value))
        await app.service.deletes.delete(W1, ids["longer"])
        assert await _read(app, check) == [ids["tool"]]
        assert await _keyword_ids(app, "gcloud_cli") == {ids["tool"]}
        assert await _keyword_ids(app, "gcloud_alpha_compute_instances_create") == set()

        def drop(conn: Connection) -> None:
            for ddl in (
                "DROP TRIGGER memory_identifiers_insert",
                "DROP TRIGGER memory_identifiers_delete",
                "DROP TRIGGER memory_identifiers_update",
                "DROP TABLE memory_identifiers",
                "DROP VIEW memory_identifiers_source",
                UNSTAMP,
            ):
                conn.exec_driver_sql(ddl)

        async with app.service.store._engines.write() as conn:
            await conn.run_sync(drop)
        # Written while it is missing (a store from before it): not in it yet.
        writer = Caller("w1", Role.WORKER, "own-later")
        later = await app.service.store_memory(
            writer, StoreRequest("later", "set max_retries to 5")
        )
    async with opened(settings, FakeEmbedder()) as app:  # made again, and filled
        assert await _read(app, check) == [ids["tool"], later.record.id]
        assert await _keyword_ids(app, "max_retries") == {later.record.id}


async def test_an_identifier_is_found_only_in_the_projects_a_search_covers(
    make_settings: Callable[..., Settings],
) -> None:
    """The identifiers' index has no project token: its matches are checked against each
    memory's project, as the main index's project filter would."""
    async with opened(make_settings(), FakeEmbedder()) as app:
        stored = {}
        for project in ("alpha", "beta"):
            writer = Caller("w1", Role.WORKER, f"in-{project}", project=project)
            request = StoreRequest(f"key-{project}", f"rotate the deploy_key of {project}")
            stored[project] = (await app.service.store_memory(writer, request)).record.id
        in_alpha = Caller("w1", Role.WORKER, "reader", project="alpha")
        found = await app.service.search(in_alpha, SearchRequest("deploy_key"))
        assert [hit.record.id for hit in found.hits] == [stored["alpha"]]
        everywhere = await app.service.search(in_alpha, SearchRequest("deploy_key", project="*"))
        assert {hit.record.id for hit in everywhere.hits} == set(stored.values())
