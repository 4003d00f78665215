"""The visibility rule is written three times: `can_see` (rules/service.py, one record: get,
delete), the SQL condition (store/visibility.py; `visible_to` binds it into SQLAlchemy's
statements: keyword arm, exact matches, prompt block, export) and the numpy mask
(semantic/vector_index.py: the vector arm); on SQLite the keyword arm runs the condition's
SQL text (`visible_sql`) on the driver's cursor, and the hooks' reads on the standard
library's sqlite3 run it too (store/sqlite/stdlib_reads.py, no SQLAlchemy). This holds them
against each other on one real SQLite file (and PostgreSQL), over every scope (a private
memory, a session memory, a swarm memory, a learning) x owner x session x tags x source x
expiry x held for approval (rules/quarantine.py: served to no one), asked by every kind of
caller with every filter a search can carry; and over every
project x task x archived, asked by callers with and without a current project and
grants, with every project, task and archive filter a read can carry
(`test_the_project_rules_agree`)."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Connection

from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import (
    BatchItem,
    Caller,
    Caps,
    MemoryRecord,
    NewMemory,
    Role,
    Scope,
    Source,
    Visibility,
)
from memory_mcp.rules.permissions import can_see, readable_projects
from memory_mcp.semantic import coarse_index, quantised_index
from memory_mcp.semantic import in_process_index as vectors_module
from memory_mcp.settings import Settings
from memory_mcp.store.sqlite.cursor import cursor_rows
from memory_mcp.store.sqlite.stdlib_reads import open_reads
from memory_mcp.store.visibility import visible_sql
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, opened, store_db

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

WRITTEN_AT = 1_000_000.0
NOW = 2_000_000.0


# (owner, role, scope, session, about_agent, extra tags): who holds what.
KINDS = [
    ("alice", Role.WORKER, Scope.AGENT, "", None, ()),
    ("alice", Role.WORKER, Scope.SESSION, "s1", None, ()),
    ("alice", Role.WORKER, Scope.SESSION, "s2", None, ()),
    ("alice", Role.WORKER, Scope.SESSION, "", None, ()),  # written with no session
    ("alice", Role.WORKER, Scope.SWARM, "", None, ()),
    ("bob", Role.WORKER, Scope.AGENT, "", None, ()),
    ("bob", Role.WORKER, Scope.SESSION, "s1", None, ()),
    ("bob", Role.WORKER, Scope.SWARM, "", None, ()),
    # A learning: the lead owns it, it is about alice (inject-learning's shape).
    ("lead", Role.LEAD, Scope.SWARM, "", "alice", ("best-practice", "learning")),
    ("lead", Role.LEAD, Scope.AGENT, "", None, ()),
]
TAGS = [(), ("red",), ("red", "blue")]
SOURCES = [Source.MANUAL, Source.TASK_COMPLETION, Source.SESSION_SUMMARY, Source.FILE_INDEX]
# Never, long gone, expiring exactly now (expired: `expires_at <= now`), still to come.
EXPIRIES = [None, NOW - 86_400, NOW, NOW + 86_400]

CALLERS = [
    Caller("alice", Role.WORKER, "s1"),
    Caller("alice", Role.WORKER, "s2"),
    Caller("alice", Role.WORKER, ""),
    Caller("bob", Role.WORKER, "s1"),
    Caller("lead", Role.LEAD, "s1"),
    Caller("carol", Role.WORKER, "s1"),  # owns nothing
]
QUERY_SCOPES = [None, Scope.SESSION, Scope.AGENT, Scope.SWARM]
QUERY_TAGS = [(), ("red",), ("red", "blue"), ("blue",), ("learning",), ("absent",)]
QUERY_SOURCES = [None, Source.MANUAL, Source.SESSION_SUMMARY, Source.FILE_INDEX]


def rows_to_write() -> list[NewMemory]:
    rows = []
    for n, (kind, tags, source, expires_at) in enumerate(
        itertools.product(KINDS, TAGS, SOURCES, EXPIRIES)
    ):
        owner, _, scope, session, about, extra = kind
        rows.append(
            NewMemory(
                key=f"memory-{n}",
                value=f"memory number {n} of {owner}",
                scope=scope,
                agent_id=owner,
                session_id=session,
                source=source,
                tags=[*tags, *extra],
                expires_at=expires_at,
                file_path=f"/notes/{n}.md" if source is Source.FILE_INDEX else None,
                about_agent=about,
                # Every fifth row is held for approval: can_see hides it, and so must the
                # others (it never reaches the vector index).
                quarantined=n % 5 == 2,
            )
        )
    return rows


def reference(vis: Visibility, record: MemoryRecord) -> bool:
    """can_see, plus a search's filters as the README states them."""
    return (
        can_see(vis.caller, record)
        and (vis.scope is None or record.scope is vis.scope)
        and set(vis.tags) <= set(record.tags)
        and (vis.source is None or record.source is vis.source)
        and (vis.include_expired or record.expires_at is None or record.expires_at > vis.now)
    )


def queries(caller: Caller) -> list[Visibility]:
    return [
        Visibility(caller, scope, tags, source, include_expired, NOW)
        for scope, tags, source, include_expired in itertools.product(
            QUERY_SCOPES, QUERY_TAGS, QUERY_SOURCES, (False, True)
        )
    ]


def ids_by_sql_text(conn: Connection, vis: Visibility) -> set[int]:
    visible = visible_sql(vis)
    sql = f"SELECT memories.id FROM memories WHERE {visible.sql}"
    return {row[0] for row in cursor_rows(conn, sql, visible.params)}


def describe(vis: Visibility) -> str:
    c = vis.caller
    return (
        f"{c.agent_id}/{c.session_id or '-'} scope={vis.scope} tags={vis.tags} "
        f"source={vis.source} include_expired={vis.include_expired} "
        f"project={c.project}/{sorted(c.grants or ['all'])} projects={sorted(vis.projects or [])} "
        f"task={vis.task} every_task={vis.every_task} archived={vis.include_archived}"
    )


CALLER_IDS = lambda c: f"{c.agent_id}-{c.session_id or 'none'}"  # noqa: E731


@dataclass
class Verdict:
    """What one group of callers' queries found on a store: the checks read it."""

    written: int = 0
    records: int = 0
    sql: list[str] = field(default_factory=list)
    numpy: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    stdlib: list[str] = field(default_factory=list)
    answers: set[frozenset[int]] = field(default_factory=set)


@pytest.fixture(scope="module")
def stores_judged(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str, str], Awaitable[list[Verdict]]]]:
    """Every caller's verdict on one store per backend and index kind, built by the first
    test that asks (writing, embedding and indexing 480 rows is the cost; the queries
    only read): each caller's test then asserts its own verdict."""
    found: dict[tuple[str, str], list[Verdict]] = {}
    with ExitStack() as databases:

        async def verdicts(backend: str, index: str) -> list[Verdict]:
            if (backend, index) not in found:
                folder = tmp_path_factory.mktemp(f"parity-{backend}-{index}")
                db = databases.enter_context(store_db(backend, folder, request))
                found[(backend, index)] = await judge(
                    [[caller] for caller in CALLERS], settings_in(folder, db), index
                )
            return found[(backend, index)]

        yield verdicts


Verdicts = Callable[[str], Awaitable[list[Verdict]]]


@pytest.fixture
def caller_verdicts(
    db_backend: str,
    stores_judged: Callable[[str, str], Awaitable[list[Verdict]]],
    request: pytest.FixtureRequest,
) -> Verdicts:
    """The verdicts on this test's backend, by index kind."""
    if db_backend == "postgresql":
        request.getfixturevalue("pg_server")  # started here, outside the test's event loop
    return partial(stores_judged, db_backend)


def settings_in(folder: Path, db: str) -> Settings:
    """make_settings' store, for a module-scoped one."""
    return Settings(
        db=db, data_dir=folder / "data", memory_dir=folder / "memory", synchronous="normal"
    )


@pytest.mark.parametrize("caller", CALLERS, ids=CALLER_IDS)
async def test_the_three_visibility_rules_agree(caller: Caller, caller_verdicts: Verdicts) -> None:
    verdicts = await caller_verdicts("exact")
    assert_agrees(verdicts[CALLERS.index(caller)])


@SQLITE_ONLY  # PostgreSQL searches vectors in the database (pgvector), checked above
@pytest.mark.parametrize("caller", CALLERS, ids=CALLER_IDS)
async def test_the_quantised_index_agrees(caller: Caller, caller_verdicts: Verdicts) -> None:
    """A big store's index (semantic/quantised_index.py): sign bits over every visible
    set, then int8, then the store's float32 — the same memories as the rule."""
    verdicts = await caller_verdicts("quantised")
    assert_agrees(verdicts[CALLERS.index(caller)])


@SQLITE_ONLY
@pytest.mark.parametrize("caller", CALLERS, ids=CALLER_IDS)
async def test_the_coarse_index_agrees(caller: Caller, caller_verdicts: Verdicts) -> None:
    """The same with a big store's coarse index (semantic/coarse_index.py, real faiss),
    every list probed so that it answers each query itself (no fallback allowed): the
    mask applied inside its search lets through exactly what the rule does."""
    verdicts = await caller_verdicts("coarse")
    assert_agrees(verdicts[CALLERS.index(caller)])


@contextmanager
def index_kind(index: str) -> Iterator[None]:
    """The in-process index `index` names: "exact" (a small store's), "quantised" or
    "coarse" (a big store's, forced on 480 rows)."""
    with pytest.MonkeyPatch.context() as patch:
        if index != "exact":
            patch.setattr(vectors_module, "QUANTISE_FROM", 1)
            patch.setattr(quantised_index, "BITS_FROM", 0)
        if index == "coarse":
            patch.setattr(coarse_index, "LISTS", 4)
            patch.setattr(coarse_index, "PROBES", 4)

            def refuse(*args: object) -> object:
                raise AssertionError("the coarse index did not answer")

            patch.setattr(quantised_index.QuantisedIndex, "_exact_pass_candidates", refuse)
        yield


# -- projects, tasks and archived memories ----------------------------------------------

PROJECTS = ["*", "alpha", "beta"]
TASKS = [None, "t1"]
PROJECT_CALLERS = [
    Caller("alice", Role.WORKER, "s1"),  # stdio outside a work tree: every project
    Caller("alice", Role.WORKER, "s1", project="alpha"),  # stdio in alpha's work tree
    Caller("bob", Role.WORKER, "s1", project="alpha", grants=frozenset({"alpha"})),
    Caller("bob", Role.WORKER, "s1", grants=frozenset({"alpha"})),
    Caller("lead", Role.LEAD, "s1", project="beta", grants=frozenset({"beta", "gamma"})),
    Caller("carol", Role.WORKER, "s1", grants=frozenset({"gamma"})),
]


def project_rows() -> list[NewMemory]:
    rows = []
    for n, (kind, project, task, archived) in enumerate(
        itertools.product(KINDS, PROJECTS, TASKS, (False, True))
    ):
        owner, _, scope, session, about, extra = kind
        rows.append(
            NewMemory(
                key=f"memory-{n}" + ("-archived" if archived else ""),
                value=f"memory number {n} of {owner}",
                scope=scope,
                agent_id=owner,
                session_id=session,
                source=Source.MANUAL,
                tags=list(extra),
                about_agent=about,
                project=project,
                task=task,
            )
        )
    return rows


def project_reference(vis: Visibility, record: MemoryRecord) -> bool:
    """can_see (grants), and the read's projects, task and archive filters as the README
    states them."""
    return (
        reference(vis, record)
        and (vis.projects is None or record.project in vis.projects)
        and (
            vis.every_task
            or record.task is None
            or record.task == vis.task
            # Every completed task's memories, asked for by include_archived alone.
            or (vis.include_archived and record.archived_at is not None)
        )
        and (vis.include_archived or record.archived_at is None)
    )


def project_queries(caller: Caller) -> list[Visibility]:
    found = []
    for asked, task, every_task, archived, scope in itertools.product(
        [None, "*", "alpha", "beta"], [None, "t1", "t2"], (False, True), (False, True),
        [None, Scope.SWARM, Scope.SESSION],
    ):  # fmt: skip
        try:
            projects = readable_projects(caller, asked)
        except PermissionDeniedError:  # a project not granted: refused, nothing read
            continue
        found.append(
            Visibility(
                caller,
                scope,
                now=NOW,
                projects=projects,
                task=task,
                every_task=every_task,
                include_archived=archived,
            )
        )
    return found


async def test_the_project_rules_agree(make_settings: Callable[..., Settings]) -> None:
    """Projects, tasks and archived memories: the three rules agree for every caller."""
    await project_rules_agree(make_settings(), "exact")


@SQLITE_ONLY  # PostgreSQL searches vectors in the database (pgvector), checked above
async def test_the_quantised_index_agrees_on_projects(
    make_settings: Callable[..., Settings],
) -> None:
    await project_rules_agree(make_settings(), "quantised")


async def project_rules_agree(settings: Settings, index: str) -> None:
    (verdict,) = await judge(
        [PROJECT_CALLERS],
        settings,
        index,
        rows=project_rows(),
        queries_of=project_queries,
        expected_of=project_reference,
        archive=lambda record: record.key.endswith("-archived"),
    )
    assert_agrees(verdict)


def assert_agrees(verdict: Verdict) -> None:
    assert verdict.records == verdict.written
    assert verdict.sql == []
    assert verdict.numpy == []
    assert verdict.text == []
    assert verdict.stdlib == []
    # The table tells the rules apart: many distinct answers, some of them empty.
    assert len(verdict.answers) >= 20
    assert frozenset() in verdict.answers


async def judge(
    groups: list[list[Caller]],
    settings: Settings,
    index: str,
    *,
    rows: list[NewMemory] | None = None,
    queries_of: Callable[[Caller], list[Visibility]] = queries,
    expected_of: Callable[[Visibility, MemoryRecord], bool] = reference,
    archive: Callable[[MemoryRecord], bool] | None = None,
) -> list[Verdict]:
    """One store of `rows` behind the `index` kind; each group of callers' queries, asked
    of every rule (of the vector arm alone for a big store's index), against the
    reference: one verdict per group."""
    with index_kind(index):
        return await judged(groups, settings, index, rows, queries_of, expected_of, archive)


async def judged(
    groups: list[list[Caller]],
    settings: Settings,
    index: str,
    rows: list[NewMemory] | None,
    queries_of: Callable[[Caller], list[Visibility]],
    expected_of: Callable[[Visibility, MemoryRecord], bool],
    archive: Callable[[MemoryRecord], bool] | None,
) -> list[Verdict]:
    quantised, coarse = index != "exact", index == "coarse"
    written = rows_to_write() if rows is None else rows
    verdicts = [Verdict(written=len(written)) for _ in groups]
    async with opened(settings) as app:
        store, vectors = app.service.store, app.service.vectors
        batch = [BatchItem(new, WRITTEN_AT, may_overwrite_others=True) for new in written]
        assert (await store.upsert_many(batch, cap=Caps())).created == len(batch)  # one transaction
        if archive is not None:
            chosen = [r.id async for r in store.iter_records() if archive(r)]
            assert chosen
            await store.archive(chosen, WRITTEN_AT)
        await vectors.embed_pending()
        await vectors.search.catch_up()
        records = [record async for record in store.iter_records()]
        if quantised:
            search = vectors.search
            assert isinstance(search, vectors_module.InProcessIndex)
            assert isinstance(search.index, quantised_index.QuantisedIndex)
        if coarse:
            assert await vectors.search.build_coarse_if_due()
        query_vector = np.ones(384, dtype=np.float32) / np.sqrt(384)

        # A big store's index changes the vector arm only: on the same rows, for the same
        # callers, the SQL condition, its text and the sqlite3 reads are the exact
        # variant's to judge (the quantised and coarse ones would only repeat them).
        sql_rules = index == "exact"
        sqlite = store._engines.dialect.name == "sqlite" and sql_rules
        path = settings.database_file
        reads = open_reads(path, "full") if sqlite and path is not None else None
        assert reads is not None or not sqlite
        asked = [
            (verdict, vis)
            for verdict, callers in zip(verdicts, groups, strict=True)
            for caller in callers
            for vis in queries_of(caller)
        ]
        for verdict in verdicts:
            verdict.records = len(records)
        for verdict, vis in asked:
            expected = {r.id for r in records if expected_of(vis, r)}
            verdict.answers.add(frozenset(expected))
            by_mask = {i for i, _ in await vectors.search.nearest(query_vector, vis, len(records))}
            if by_mask != expected:
                verdict.numpy.append(
                    f"{describe(vis)}: mask also {sorted(by_mask - expected)}, "
                    f"misses {sorted(expected - by_mask)}"
                )
            if sql_rules and (by_sql := {r.id async for r in store.iter_records(vis)}) != expected:
                verdict.sql.append(
                    f"{describe(vis)}: SQL also {sorted(by_sql - expected)}, "
                    f"misses {sorted(expected - by_sql)}"
                )
            if sqlite and (by_text := await store._engines.read(ids_by_sql_text, vis)) != expected:
                verdict.text.append(
                    f"{describe(vis)}: SQL text also {sorted(by_text - expected)}, "
                    f"misses {sorted(expected - by_text)}"
                )
            if (
                reads is not None
                and (by_reads := {r.id for r in reads.recent(vis, len(records))}) != expected
            ):
                verdict.stdlib.append(
                    f"{describe(vis)}: sqlite3 also {sorted(by_reads - expected)}, "
                    f"misses {sorted(expected - by_reads)}"
                )

    if reads is not None:
        reads.close()
    return verdicts
