"""Context at write time (store/write_context.py): a memory's keyword document holds the
words of what its writer wrote just before and just after it in the same session, read
from the store in the writing transaction, kept exact when a memory is written after it,
deleted or rewritten, lent only by memories at least as widely visible, recomputed once
in a store made by the older rule, the same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from memory_mcp.models import Caller, NoteChunk, Role, Scope, StoreRequest, Visibility
from memory_mcp.rules.permissions import Origin
from memory_mcp.rules.service import MemoryService
from memory_mcp.search.pipeline import KEYWORD_COLUMN_WEIGHTS
from memory_mcp.settings import Settings
from memory_mcp.store.keyword import query_terms
from memory_mcp.store.memories_table import M
from memory_mcp.store.migrations import CONTEXT_RECIPE
from memory_mcp.store.schema import StoreMetaRow
from memory_mcp.store.write_context import (
    CONTEXT_AFTER,
    CONTEXT_BEFORE,
    MAX_CONTEXT_CHARS,
    RECIPE,
    context_text,
)
from memory_mcp.transfer.batches import ImportReport, write_batches
from memory_mcp.transfer.jsonl import export_lines, prepare_lines, read_lines
from tests.conftest import BOTH_BACKENDS, UNSTAMP, opened

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

ALICE = Caller("alice", Role.WORKER, "morning")
# A session's memories, in order: only the last one names what the query asks.
SESSION = [
    ("sail", "Tomas repaired the old sailboat"),
    ("pottery", "Ines started pottery classes on Thursdays"),
    ("first", "Pottery sounds relaxing, what are you making first?"),
    ("mugs", "A set of blue mugs for my sister"),
    ("bye", "She will love them, talk soon"),
]


async def keys_found_by_words(
    service: MemoryService, caller: Caller, query: str, now: float = 0.0
) -> list[str]:
    """The keyword arm alone, best first: what BM25 (or ts_rank) finds."""
    vis = Visibility(caller=caller, now=now)
    hits = await service.store.keyword_search(query_terms(query), vis, 50, KEYWORD_COLUMN_WEIGHTS)
    records = await service.store.fetch_many([memory_id for memory_id, _ in hits])
    return [records[memory_id].key for memory_id, _ in hits]


async def store_all(
    service: MemoryService, caller: Caller, memories: list[tuple[str, str]], **request: object
) -> None:
    for key, value in memories:
        await service.store_memory(caller, StoreRequest(key, value, **request))  # type: ignore[arg-type]


def test_a_long_context_keeps_the_words_nearest_the_memory() -> None:
    text = context_text(["old " * 1_000, "the newest words"])
    assert len(text) == MAX_CONTEXT_CHARS
    assert text.endswith("old \nthe newest words")
    text = context_text(["before"], ["the next words", "later " * 1_000])
    assert text.startswith("before\nthe next words\nlater")
    assert len(text) == len("before\n") + MAX_CONTEXT_CHARS


async def test_the_answer_is_found_by_the_words_around_it_own_words_first(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        await store_all(app.service, ALICE, SESSION)
        found = await keys_found_by_words(app.service, ALICE, "pottery")
        sister = await keys_found_by_words(app.service, ALICE, "mugs sister")
    # The two that say it, then the ones written within 3 after or 4 before them.
    assert found[:2] in (["pottery", "first"], ["first", "pottery"]), found
    assert set(found[2:]) == {"sail", "mugs", "bye"}, found
    # The question is found by the answer written after it.
    assert sister[0] == "mugs" and "first" in sister, sister


async def test_the_window_is_the_few_around_it_of_the_same_writer_and_session(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, [(f"before{i}", f"before {i}") for i in range(5)])
        await store_all(service, ALICE, [("zebra", "a zebra crossing")])
        await store_all(service, ALICE, [(f"after{i}", f"after {i}") for i in range(3)])
        await store_all(service, replace(ALICE, session_id="evening"), [("other", "unrelated")])
        await store_all(service, Caller("bob", Role.WORKER, "morning"), [("bobs", "bob's")])
        await store_all(service, ALICE, [("fourth", "written fourth")])
        found = await keys_found_by_words(service, ALICE, "zebra")
    # The 4 before and the 3 after hold it in their context; before0 and "fourth" are
    # one too far; another session's memory and another writer's in the same session id
    # borrow nothing.
    assert found[0] == "zebra"
    assert sorted(found[1:]) == [
        "after0",
        "after1",
        "after2",
        "before1",
        "before2",
        "before3",
        "before4",
    ]


async def test_a_deleted_memory_leaves_no_words_in_its_neighbours(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, SESSION)
        pottery = await service.store.get_by_identity("agent\x1falice\x1fpottery")
        assert pottery is not None
        await service.deletes.delete(ALICE, pottery.id)
        found = await keys_found_by_words(service, ALICE, "classes thursdays")
        assert found == []
        # The followers' windows close up: "bye" now reaches back to the sailboat.
        assert sorted(await keys_found_by_words(service, ALICE, "sailboat")) == [
            "bye",
            "first",
            "mugs",
            "sail",
        ]


async def test_a_rewritten_memory_leaves_its_old_words_nowhere(
    make_settings: Callable[..., Settings],
) -> None:
    later = [(f"later{i}", f"later note {i}") for i in range(4)]
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, SESSION + later)
        await store_all(service, ALICE, [("pottery", "Ines gave up ceramics")])
        assert await keys_found_by_words(service, ALICE, "thursdays") == []
        # Rewritten now, it follows the whole session: the last four lend it their words
        # and hold its new ones; "love" (in "bye") is now five before it.
        found = await keys_found_by_words(service, ALICE, "ceramics")
        assert found[0] == "pottery"
        assert sorted(found[1:]) == ["later0", "later1", "later2", "later3"]
        assert "pottery" not in await keys_found_by_words(service, ALICE, "love")


async def test_a_memory_rewritten_in_another_session_moves_there(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, SESSION)
        evening = replace(ALICE, session_id="evening")
        await store_all(service, evening, [("dinner", "the pasta recipe")])
        await store_all(service, evening, [("sail", "Tomas sold the sailboat")])
        # Its old neighbours forget it; in the evening it follows the dinner.
        assert await keys_found_by_words(service, ALICE, "repaired") == []
        assert await keys_found_by_words(service, ALICE, "sailboat") == ["sail", "dinner"]
        assert await keys_found_by_words(service, ALICE, "pasta") == ["dinner", "sail"]


async def test_expired_memories_purged_and_bulk_deleted_ones_leave_no_words(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, [("brief", "the quetzal plan")], ttl_seconds=60)
        await store_all(service, ALICE, [("tagged", "the okapi plan")], tags=["drop"])
        await store_all(service, ALICE, SESSION[:3])
        # Its own, the 3 after it (the fourth, "first", is one too far).
        assert len(await keys_found_by_words(service, ALICE, "quetzal", now=1.0)) == 4
        service.clock = lambda: 1e12
        assert await service.purge_expired() == 1
        assert await keys_found_by_words(service, ALICE, "quetzal") == []
        deleted = await service.deletes.delete_many(ALICE, tags=["drop"])
        assert deleted.deleted == 1
        assert await keys_found_by_words(service, ALICE, "okapi") == []


async def test_only_memories_seen_as_widely_lend_their_words(
    make_settings: Callable[..., Settings],
) -> None:
    """Every pair of scopes, written one after the other: each memory holds the other's
    word only if everyone who sees it also sees the other."""
    lends = {
        (Scope.SWARM, Scope.SWARM),
        (Scope.SWARM, Scope.AGENT),
        (Scope.SWARM, Scope.SESSION),
        (Scope.AGENT, Scope.AGENT),
        (Scope.AGENT, Scope.SESSION),
        (Scope.SESSION, Scope.SESSION),
    }
    async with opened(make_settings()) as app:
        service = app.service
        borrowed, lent_back = set(), set()
        for n, (first, then) in enumerate((a, b) for a in Scope for b in Scope):
            caller = replace(ALICE, session_id=f"pair{n}")
            word, later_word = f"lent{chr(97 + n)}word", f"back{chr(97 + n)}word"
            await store_all(service, caller, [(f"a{n}", word)], scope=first)
            await store_all(service, caller, [(f"b{n}", later_word)], scope=then)
            if f"b{n}" in await keys_found_by_words(service, caller, word):
                borrowed.add((first, then))
            if f"a{n}" in await keys_found_by_words(service, caller, later_word):
                lent_back.add((first, then))
    assert borrowed == lends
    assert lent_back == {(then, first) for first, then in lends}


async def test_a_private_memory_is_never_found_through_another_agents_memory(
    make_settings: Callable[..., Settings],
) -> None:
    """Alice's private words reach her own later memories' context, never one that Bob
    can see: not Bob's own (written in a session with the same id, in between), not
    Alice's swarm memory written right after, not a swarm memory of Bob's that a lead
    rewrites after writing a private memory of its own."""
    bob = Caller("bob", Role.WORKER, "morning")
    lead = Caller("lead", Role.LEAD, "morning")
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, [("secret", "the zanzibar offer")], scope=Scope.AGENT)
        await store_all(service, bob, [("bobs", "bob's plan")], scope=Scope.SWARM)
        await store_all(service, ALICE, [("mine", "my own follow-up")], scope=Scope.AGENT)
        await store_all(service, ALICE, [("shared", "team lunch at noon")], scope=Scope.SWARM)
        await store_all(service, lead, [("lead-only", "the okapi budget")], scope=Scope.AGENT)
        await store_all(service, lead, [("bobs", "bob's plan, revised")], scope=Scope.SWARM)
        # Not vacuous: the word is in the context of Alice's next private memory.
        assert await keys_found_by_words(service, ALICE, "zanzibar") == ["secret", "mine"]
        assert await keys_found_by_words(service, bob, "zanzibar") == []
        assert await keys_found_by_words(service, bob, "okapi") == []
        assert await keys_found_by_words(service, lead, "okapi") == ["lead-only"]


async def test_notes_neither_lend_nor_borrow(make_settings: Callable[..., Settings]) -> None:
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, [("before", "the capybara memo")])
        chunk = NoteChunk(
            key="file:/notes/a.md#1",
            value="# Notes\nthe wombat section",
            scope=Scope.AGENT,
            file_path="/notes/a.md",
            metadata={},
            expires_at=None,
        )
        await service.note_memories.store_note_chunk(ALICE, chunk, Origin.FOLDER)
        await store_all(service, ALICE, [("after", "written after the note")])
        assert await keys_found_by_words(service, ALICE, "wombat") == ["file:/notes/a.md#1"]
        assert sorted(await keys_found_by_words(service, ALICE, "capybara")) == [
            "after",
            "before",
        ]


async def test_import_gives_the_same_context_as_storing_one_by_one(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """`memory-mcp import` (write_batch): lines are written in file order in the
    importing session, or in the session a line names (`written_session`, which export
    writes), so an export imported elsewhere keeps every memory's context. Each path
    writes as its own agent, in one store."""
    elsewhere = ("elsewhere", "pottery wheel")
    queries = ["pottery", "sailboat", "making first", "mugs sister"]

    async def imported(service: MemoryService, lines: list[dict[str, Any]], as_: str) -> None:
        path = tmp_path / f"{as_}.jsonl"
        path.write_text("".join(json.dumps({**line, "agent_id": as_}) + "\n" for line in lines))
        parsed, errors = read_lines(path)
        prepared, bad = prepare_lines(service, parsed, Caller(as_, Role.WORKER, "import"))
        assert errors == bad == []
        # Batches of 2: a session's window reaches back into the batches before.
        assert await write_batches(service, prepared, ImportReport(), batch_lines=2)

    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, SESSION[:2])
        await store_all(service, replace(ALICE, session_id="other"), [elsewhere])
        await store_all(service, ALICE, SESSION[2:])
        expected = [await keys_found_by_words(service, ALICE, q) for q in queries]
        exported = tmp_path / "export.jsonl"
        with exported.open("w") as out:
            await export_lines(service.visible_records(ALICE), out)
        lines = [json.loads(line) for line in exported.read_text().splitlines()]
        assert [line["written_session"] for line in lines] == ["morning"] * 2 + ["other"] + [
            "morning"
        ] * 3
        await imported(service, lines, "carol")
        written = [{"key": k, "value": v} for k, v in SESSION]
        written.insert(2, {"key": elsewhere[0], "value": elsewhere[1], "written_session": "x"})
        await imported(service, written, "dave")
        for agent in ("carol", "dave"):
            reader = Caller(agent, Role.WORKER, "later")
            found = [await keys_found_by_words(service, reader, q) for q in queries]
            assert found == expected, agent


def test_the_window_is_three_before_and_four_after() -> None:
    # The benchmark and the docs quote these (chosen under leave-one-out).
    assert (CONTEXT_BEFORE, CONTEXT_AFTER) == (3, 4)


async def test_a_store_made_by_the_older_rule_is_recomputed_once(
    make_settings: Callable[..., Settings],
) -> None:
    """Contexts made before the following memories lent theirs (issue 23's rule) are
    recomputed at the next start, and the rule recorded."""
    settings = make_settings()
    async with opened(settings) as app:
        await store_all(app.service, ALICE, SESSION)
        async with app.service.store._engines.write() as conn:
            await conn.execute(
                update(StoreMetaRow).where(StoreMetaRow.name == CONTEXT_RECIPE).values(value=1)
            )
            await conn.exec_driver_sql("UPDATE memories SET context = NULL")
            await conn.exec_driver_sql(UNSTAMP)
        assert await keys_found_by_words(app.service, ALICE, "thursdays") == ["pottery"]
    async with opened(settings) as app:
        found = await keys_found_by_words(app.service, ALICE, "thursdays")
        async with app.service.store._engines.write() as conn:
            recipe = await conn.scalar(
                StoreMetaRow.__table__.select()
                .with_only_columns(StoreMetaRow.value)
                .where(StoreMetaRow.name == CONTEXT_RECIPE)
            )
    assert found[0] == "pottery"
    assert sorted(found[1:]) == ["bye", "first", "mugs", "sail"]
    assert recipe == RECIPE


async def test_an_older_postgresql_index_is_made_again_with_the_context(
    pg_url: str, tmp_path: Path
) -> None:
    """search_text is a generated column: one made before the context is dropped and made
    again at start (store/postgres/ddl.py), and the context words are found."""
    settings = Settings(db=pg_url, data_dir=tmp_path / "data", memory_dir=tmp_path / "m")
    async with opened(settings) as app:
        async with app.service.store._engines.write() as conn:
            await conn.exec_driver_sql("ALTER TABLE memories DROP COLUMN search_text")
            await conn.exec_driver_sql(
                "ALTER TABLE memories ADD COLUMN search_text tsvector GENERATED ALWAYS AS "
                "(to_tsvector('english', key) || to_tsvector('english', value)) STORED"
            )
            await conn.exec_driver_sql(UNSTAMP)
        await store_all(app.service, ALICE, SESSION)
        assert await keys_found_by_words(app.service, ALICE, "thursdays") == ["pottery"]
    async with opened(settings) as app:
        await store_all(app.service, ALICE, [("later", "after the goodbye")])
        found = await keys_found_by_words(app.service, ALICE, "thursdays")
    # Those around it before the restart, whose context was kept while the old index
    # ignored it ("later", written since, is four after it).
    assert sorted(found) == ["bye", "first", "mugs", "pottery", "sail"]


async def test_an_import_line_with_a_bad_written_session_is_a_bad_line(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [
        {"key": "fine", "value": "v", "written_session": "s1"},
        {"key": "long", "value": "v", "written_session": "s" * 129},
        {"key": "empty", "value": "v", "written_session": "   "},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    async with opened(make_settings()) as app:
        parsed, errors = read_lines(path)
        prepared, bad = prepare_lines(app.service, parsed, ALICE)
    assert errors == []
    assert [line.memory.written_session for line in prepared] == ["s1"]
    assert len(bad) == 2
    assert bad[0].startswith("line 2:") and "written_session" in bad[0] and "128" in bad[0]
    assert bad[1].startswith("line 3:") and "written_session" in bad[1]


async def test_an_import_batch_lends_only_to_memories_seen_as_widely(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The import computes a batch's contexts before writing it (write_context.
    batch_contexts): the same rule as one by one, from the store and within the batch."""
    path = tmp_path / "mixed.jsonl"
    lines = [
        {"key": "stored-secret", "value": "the quokka memo", "scope": "agent"},
        {"key": "open", "value": "an open note", "scope": "swarm"},
        {"key": "mine", "value": "my follow-up", "scope": "agent"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bob = Caller("bob", Role.WORKER, "morning")
    async with opened(make_settings()) as app:
        service = app.service
        await store_all(service, ALICE, [("secret", "the zanzibar offer")], scope=Scope.AGENT)
        parsed, _ = read_lines(path)
        prepared, bad = prepare_lines(service, parsed, ALICE)
        assert bad == []
        assert await write_batches(service, prepared, ImportReport(), batch_lines=500)
        # The swarm line borrows neither the stored private memory nor the private lines
        # around it; the private line after it borrows all three.
        found = await keys_found_by_words(service, ALICE, "zanzibar")
        assert found[0] == "secret" and sorted(found[1:]) == ["mine", "stored-secret"]
        # The stored private memory before the batch borrows the private lines after it.
        found = await keys_found_by_words(service, ALICE, "quokka")
        assert found[0] == "stored-secret" and sorted(found[1:]) == ["mine", "secret"]
        assert await keys_found_by_words(service, bob, "zanzibar quokka") == []


async def test_a_memory_of_another_project_lends_nothing_on_either_side(
    make_settings: Callable[..., Settings],
) -> None:
    """Written one after the other in one session, the middle one in another project: the
    memories before and after it hold each other's words, and none of its own, and it
    holds none of theirs (its words would reach searches that cannot see it)."""
    async with opened(make_settings()) as app:
        caller = replace(ALICE, session_id="two projects")
        await store_all(app.service, caller, [("kiln", "kiln porcelain")], project="alpha")
        await store_all(app.service, caller, [("glaze", "glaze recipe")], project="beta")
        await store_all(app.service, caller, [("wheel", "wheel throwing")], project="alpha")
        async with app.service.store._engines.write() as conn:
            rows = (await conn.execute(select(M.key, M.context))).all()
    contexts = {key: context for key, context in rows}
    assert contexts == {"kiln": "wheel throwing", "glaze": None, "wheel": "kiln porcelain"}
