"""Every write path asks the one decision (memory_mcp/rules/permissions.py `decide`).

The write paths are enumerated, not listed by hand: the tools that are not read-only in a
real team server's tools/list (index-note included, and the aliases), the
public methods of the rules' gate and subjects (MemoryService and those beside it) and of
FileIndexService, the CLI's commands and the web
view's routes. Each must be in one of the tables below: a write path with a case where a
worker tries to change a memory the lead owns (refused in the decision's words, nothing
changed) or a reason it changes no memory on an agent's behalf. A new write path that is
in neither table fails here; so does one that changes the memory, or that is refused
without asking the decision (the service-level cases spy on `decide`).

(Who may see what, the read paths: tests/rules/test_permission_matrix.py.)"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app import root as app_module
from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.auth.oauth import SIGN_IN_PATH
from memory_mcp.cli.main import build_parser, main
from memory_mcp.errors import MemoryMcpError
from memory_mcp.mcp.server import build_server
from memory_mcp.models import (
    Caller,
    LearningCategory,
    NoteChunk,
    Role,
    Scope,
    Source,
    StoreRequest,
)
from memory_mcp.notes.file_memories import FileIndexService
from memory_mcp.notes.reports import FileMemory
from memory_mcp.rules import permissions
from memory_mcp.rules.deletes import DeleteService
from memory_mcp.rules.gate import Gate
from memory_mcp.rules.linking import LinkService
from memory_mcp.rules.note_memories import NoteMemoryService
from memory_mcp.rules.permissions import Origin
from memory_mcp.rules.quarantine import Quarantine
from memory_mcp.rules.service import MemoryService
from memory_mcp.rules.tasks import TaskService
from memory_mcp.settings import Settings
from memory_mcp.web.pages import WebPages
from memory_mcp.web.ui_server import web_routes
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error, opened
from tests.http.team_server import TeamServer, running, token_add

LEAD = Caller("lead", Role.LEAD, "s-lead")
WORKER = Caller("w1", Role.WORKER, "s-w1")
RULE_KEY = "team-rule"
NOTE_PATH = "/team/shared/deploy.md"
TASK = "issue-36"
LEARNING = "Run migrations before the API tests"
# What the decision says when it refuses (permissions.decide), and nothing else does.
DECISION_WORDS = (
    "only its owner or the lead may",
    "only a lead may",
    "keys starting with 'learning:' are the lead's",
    "or the lead may complete it",
)
LEAD_ONLY_TOOL = "inject-learning is for the lead agent"


def refused_by_the_decision(text: str) -> bool:
    return any(words in text for words in DECISION_WORDS)


# -- the service: every public method ----------------------------------------------------------


@dataclass
class World:
    """A store where the lead owns a swarm memory (two versions), a shared note it indexed
    through index-note's path, and a learning; `w1` is the worker who tries."""

    app: AppContext
    rule_id: int = 0
    learning_key: str = ""
    learning_id: int = 0
    held_id: int = 0  # the worker's external memory, held for approval (rules/quarantine.py)

    @property
    def service(self) -> MemoryService:
        return self.app.service

    @property
    def files(self) -> FileIndexService:
        return self.app.notes.files

    async def snapshot(self) -> list[tuple[Any, ...]]:
        records = [r async for r in self.service.all_records()]
        links = [
            (x.link.source_id, x.link.target_id, x.link.relation)
            for r in records
            for x in (await self.service.links.links_of(LEAD, r))[0]
            if x.direction == "out"
        ]
        return [
            (r.id, r.key, r.value, r.version, r.agent_id, r.updated_by, r.expires_at)
            + (r.project, r.task, r.archived_at, r.quarantined)
            for r in records
        ] + [("link", *link) for link in links]

    async def note(self) -> list[Any]:
        return await self.service.note_memories.note_records(WORKER, Scope.SWARM, NOTE_PATH)


def note_memories(text: str) -> list[FileMemory]:
    return [FileMemory(f"file:{NOTE_PATH}#deploy", text, {"file_path": NOTE_PATH})]


async def seed(world: World) -> None:
    service = world.service
    first = await service.store_memory(
        LEAD, StoreRequest(RULE_KEY, "Two reviewers", Scope.SWARM, tags=["process"])
    )
    await service.store_memory(
        LEAD, StoreRequest(RULE_KEY, "Three reviewers", Scope.SWARM, tags=["process"])
    )
    world.rule_id = first.record.id
    await world.files.sync_file(
        LEAD, Scope.SWARM, NOTE_PATH, note_memories("Ship on Tuesdays"), 2e9, origin=Origin.CALLER
    )
    learning = await service.inject_learning(LEAD, LEARNING, LearningCategory.MISTAKE_PATTERN)
    world.learning_key = learning.record.key
    world.learning_id = learning.record.id
    await service.links.link(LEAD, world.rule_id, world.learning_id, "explained_by")
    await service.store_memory(LEAD, StoreRequest("plan", "Split the migration", task=TASK))
    held = await service.store_memory(
        WORKER, StoreRequest("copied", "A page said so.", Scope.SWARM, source=Source.EXTERNAL)
    )
    world.held_id = held.record.id


ServiceCase = Callable[[World], Awaitable[Any]]


def worker_rewrite(_world: World | None = None) -> StoreRequest:
    return StoreRequest(RULE_KEY, "No reviews", Scope.SWARM)


async def _write(world: World) -> Any:
    new = world.service.prepare_memory(WORKER, worker_rewrite(world))
    return await world.service.gate.write(WORKER, new, world.service.clock())


async def _write_and_check(world: World) -> Any:
    new = world.service.prepare_memory(WORKER, worker_rewrite(world))
    return await world.service.gate.write_and_check(WORKER, new, world.service.clock())


async def _write_batch(world: World) -> Any:
    new = world.service.prepare_memory(WORKER, worker_rewrite(world))
    outcome = await world.service.write_batch([(WORKER, new, None)])
    assert outcome.refused and refused_by_the_decision(outcome.refused[0][1]), outcome
    return outcome


async def _ownership_refusals(world: World) -> Any:
    new = world.service.prepare_memory(WORKER, worker_rewrite(world))
    refused = await world.service.ownership_refusals([(WORKER, new)])
    assert refused_by_the_decision(refused[0]), refused
    return refused


async def _store_note_chunk(world: World) -> Any:
    chunk = NoteChunk(NOTE_PATH, Scope.SWARM, f"file:{NOTE_PATH}#deploy", "Skip tests", {}, None)
    return await world.service.note_memories.store_note_chunk(WORKER, chunk, Origin.CALLER)


async def _delete_many(world: World) -> Any:
    result = await world.service.deletes.delete_many(WORKER, tags=["process"])
    assert (result.deleted, result.not_allowed) == (0, 1), result
    return result


async def _prepare_memory(world: World) -> Any:
    request = StoreRequest(world.learning_key, "Skip migrations", Scope.SWARM)
    return world.service.prepare_memory(WORKER, request)


async def _inject_learning(world: World) -> Any:
    """A lead's injection over a memory it did not make: the decision is asked, and the
    learning becomes the lead's (tests/rules/test_learning_keys.py)."""
    other_lead = Caller("lead-2", Role.LEAD, "s-lead-2")
    outcome = await world.service.inject_learning(
        other_lead, LEARNING, LearningCategory.MISTAKE_PATTERN
    )
    assert (outcome.record.agent_id, outcome.taken_over_from) == ("lead-2", "lead")
    return outcome


async def _sync_file(world: World) -> Any:
    return await world.files.sync_file(
        WORKER, Scope.SWARM, NOTE_PATH, note_memories("Skip tests"), 2e9, origin=Origin.CALLER
    )


# Each write path: a worker's attempt on the lead's memories (or, for injection, a lead's
# over another lead's), which the decision must answer.
SERVICE_WRITES: dict[str, ServiceCase] = {
    "store_memory": lambda w: w.service.store_memory(WORKER, worker_rewrite(w)),
    "store_and_check": lambda w: w.service.store_and_check(WORKER, worker_rewrite(w)),
    "prepare_memory": _prepare_memory,
    "write": _write,
    "write_and_check": _write_and_check,
    "write_batch": _write_batch,
    "ownership_refusals": _ownership_refusals,
    "inject_learning": _inject_learning,
    "delete": lambda w: w.service.deletes.delete(WORKER, w.rule_id),
    "delete_by_key": lambda w: w.service.deletes.delete_by_key(WORKER, RULE_KEY, Scope.SWARM),
    "delete_many": _delete_many,
    "revert": lambda w: w.service.revert(WORKER, w.rule_id, 1),
    "store_note_chunk": _store_note_chunk,
    "link": lambda w: w.service.links.link(WORKER, w.rule_id, w.learning_id, "overrides"),
    "change_links": lambda w: w.service.links.change_links(
        WORKER, w.rule_id, [], [(w.learning_id, "explained_by")]
    ),
    "check_note_change": lambda w: _with_note(
        w, w.service.note_memories.check_note_change, Origin.CALLER
    ),
    "forget_note_records": lambda w: _with_note(
        w, w.service.note_memories.forget_note_records, Origin.CALLER
    ),
    "set_note_expiry": lambda w: _set_note_expiry(w),
    "rename_note_keys": lambda w: _rename_note_keys(w),
    "bring_to_project": lambda w: _bring_to_project(w),
    "sync_file": _sync_file,
    "remove_file": lambda w: w.files.remove_file(
        WORKER, Scope.SWARM, NOTE_PATH, origin=Origin.CALLER
    ),
    "complete_task": lambda w: w.service.tasks.complete_task(WORKER, TASK),
    "move_to_project": lambda w: _move_to_project(w),
    # A batch whose second memory is the lead's: refused, and the first not stored either.
    "store_batch": lambda w: w.service.store_batch(
        WORKER, [StoreRequest("mine", "a note of mine"), worker_rewrite(w)]
    ),
    "change_scope": lambda w: w.service.change_scope(WORKER, RULE_KEY, Scope.SWARM, Scope.AGENT),
    "approve": lambda w: _held_for_approval(w, w.service.quarantine.approve),
    "discard": lambda w: _held_for_approval(w, w.service.quarantine.discard),
}


async def _held_for_approval(world: World, method: Callable[..., Any]) -> Any:
    """A worker approving (or discarding) its own memory held for approval: the lead's."""
    return await method(WORKER, world.held_id)


async def _move_to_project(world: World) -> Any:
    rule = await world.service.get(WORKER, world.rule_id)
    return await world.service.tasks.move_to_project(WORKER, [rule], "elsewhere")


async def _with_note(world: World, method: Callable[..., Any], origin: Origin) -> Any:
    result = method(WORKER, await world.note(), origin)
    return await result if inspect.isawaitable(result) else result


async def _rename_note_keys(world: World) -> Any:
    renames = [(record, f"{record.key}-renamed") for record in await world.note()]
    return await world.service.note_memories.rename_note_keys(WORKER, renames, Origin.CALLER)


async def _bring_to_project(world: World) -> Any:
    """A worker carrying the lead's note to another project (a work tree renamed), with
    text it sent: the lead's to change."""
    return await world.service.note_memories.bring_to_project(
        WORKER, await world.note(), "acme/renamed", Origin.CALLER
    )


async def _set_note_expiry(world: World) -> Any:
    return await world.service.note_memories.set_note_expiry(
        WORKER, await world.note(), 1.0, Origin.CALLER
    )


# The public methods that change no memory on a caller's behalf, and why.
NOT_A_CALLERS_CHANGE = {
    "purge_expired": "deletes what has expired, whoever owns it: time decides, not a caller",
    "decay": "archives faded guesses, whoever owns them: confidence and time decide",
    "held": "reads (a lead's review; permissions.check_reviewer)",
    "trust_marks": "reads",
    "flush_accesses": "writes read counts, not memories",
    "expiry_for": "computes a date",
    "get": "reads (and counts the read)",
    "get_by_key": "reads (and counts the read)",
    "search": "reads",
    "similar_to": "reads",
    "history": "reads",
    "version_of": "reads",
    "as_of": "reads: a memory already read, as it held at a time",
    "list_memories": "reads",
    "visible_records": "reads",
    "all_records": "reads, for operators",
    "recent_visible": "reads",
    "count": "reads",
    "cap_usage": "reads",
    "is_expired": "reads",
    "note_records": "reads",
    "note_paths": "reads",
    "copies_elsewhere": "reads",
    "links_of": "reads",
    "related": "reads",
    "link_history": "reads",
    "links_among": "reads",
    "by_key": "reads",
    "by_id": "reads: the visibility of a read by id",
    "read": "reads: the one read by id",
    "project_counts": "reads",
}


def public_methods(cls: type) -> set[str]:
    """Its own and inherited ones."""
    return {
        name
        for klass in cls.__mro__
        if klass is not object
        for name, member in vars(klass).items()
        if not name.startswith("_")
        and (inspect.isfunction(member) or isinstance(member, staticmethod))
    }


def test_every_public_method_of_the_service_is_a_write_path_or_says_why_not() -> None:
    subjects = (
        MemoryService,
        Gate,
        LinkService,
        TaskService,
        NoteMemoryService,
        Quarantine,
        DeleteService,
    )
    methods = set().union(*map(public_methods, subjects)) | public_methods(FileIndexService)
    unlisted = methods - set(SERVICE_WRITES) - set(NOT_A_CALLERS_CHANGE)
    assert not unlisted, (
        f"new public methods: add each to SERVICE_WRITES or NOT_A_CALLERS_CHANGE: {unlisted}"
    )
    assert not (set(SERVICE_WRITES) & set(NOT_A_CALLERS_CHANGE))
    assert set(SERVICE_WRITES) | set(NOT_A_CALLERS_CHANGE) <= methods, "a listed method is gone"


@pytest.fixture
def spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, bool]]:
    """Every call of permissions.decide: (change, origin, refused)."""
    asked: list[tuple[str, str, bool]] = []
    decide = permissions.decide

    def spy(caller: Caller, target: Any, change: Any, origin: Any = Origin.CALLER) -> Any:
        answer = decide(caller, target, change, origin)
        asked.append((change.value, origin.value, answer is not None))
        return answer

    monkeypatch.setattr(permissions, "decide", spy)
    return asked


@BOTH_BACKENDS
@pytest.mark.anyio
@pytest.mark.parametrize("method", list(SERVICE_WRITES))
async def test_each_service_write_path_asks_the_decision(
    make_settings: Callable[..., Settings], spied: list[tuple[str, str, bool]], method: str
) -> None:
    async with opened(make_settings(watch=False)) as app:
        world = World(app)
        await seed(world)
        before = await world.snapshot()
        spied.clear()
        try:
            await SERVICE_WRITES[method](world)
        except MemoryMcpError as refused:
            assert refused_by_the_decision(str(refused)), refused
        assert spied, f"{method} never asked permissions.decide"
        if method == "inject_learning":  # the lead's: allowed, and it asked
            return
        assert any(refused for *_, refused in spied), f"{method}: the decision refused nothing"
        assert await world.snapshot() == before, f"{method} changed the store"


# -- the tools of a real team server ------------------------------------------------------------


@dataclass
class TeamWorld:
    server: TeamServer
    tokens: dict[str, str]
    rule_id: int = 0


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamWorld]:
    tmp = tmp_path_factory.mktemp("write-paths")
    db = tmp / "team.db"
    tokens = {"w1": token_add(db, "w1"), "lead": token_add(db, "lead", "lead")}
    # The aliases are write paths too: listed, so that the inventory sees them.
    with running(tmp, "streamable-http", db, "--legacy-tool-names") as server:
        world = TeamWorld(server, tokens)
        anyio.run(_seed_team, world)
        yield world


async def _seed_team(world: TeamWorld) -> None:
    async with world.server.client(world.tokens["lead"]) as lead:
        first = await call(
            lead,
            "store_memory",
            key=RULE_KEY,
            value="Two reviewers",
            scope="swarm",
            tags=["process"],
        )
        await call(
            lead,
            "store_memory",
            key=RULE_KEY,
            value="Three reviewers",
            scope="swarm",
            tags=["process"],
        )
        world.rule_id = first["id"]
        await call(
            lead,
            "index-note",
            path=NOTE_PATH,
            content="# Deploy\nShip on Tuesdays",
            folder="shared",
        )
        await call(lead, "inject-learning", learning=LEARNING, category="mistake-pattern")
        await call(lead, "store_memory", key="plan", value="Split the migration", task=TASK)


ToolCase = Callable[[TeamWorld, Client, str], Awaitable[str]]


async def _tool_store(world: TeamWorld, w1: Client, tool: str) -> str:
    return await call_error(w1, tool, key=RULE_KEY, value="No reviews", scope="swarm")


async def _tool_delete(world: TeamWorld, w1: Client, tool: str) -> str:
    return await call_error(w1, tool, id=world.rule_id)


async def _tool_revert(world: TeamWorld, w1: Client, tool: str) -> str:
    return await call_error(w1, tool, id=world.rule_id, version=1)


async def _tool_delete_many(world: TeamWorld, w1: Client, tool: str) -> str:
    result = await call(w1, tool, tags=["process"])
    assert (result["deleted"], result["not_allowed"]) == (0, 1), result
    return DECISION_WORDS[0]  # counted as not allowed: the store chose by the decision's rights


async def _tool_inject(world: TeamWorld, w1: Client, tool: str) -> str:
    error = await call_error(
        w1, tool, learning=LEARNING + " (rewritten)", category="mistake-pattern"
    )
    assert LEAD_ONLY_TOOL in error
    return await call_error(  # and the key it would write is the lead's
        w1, "store_memory", key=_learning_key(), value="rewritten", scope="swarm"
    )


def _learning_key() -> str:
    import hashlib

    normalised = " ".join(LEARNING.lower().split())
    digest = hashlib.sha256(f"mistake-pattern\x1f{normalised}".encode()).hexdigest()[:16]
    return f"learning:mistake-pattern:{digest}"


async def _tool_index_note(world: TeamWorld, w1: Client, tool: str) -> str:
    return await call_error(w1, tool, path=NOTE_PATH, content="", folder="shared")


async def _tool_link(world: TeamWorld, w1: Client, tool: str) -> str:
    # The decision is asked before the target is looked at (even this one, the rule itself).
    return await call_error(w1, tool, id=world.rule_id, to=world.rule_id, relation="overrides")


async def _tool_complete_task(world: TeamWorld, w1: Client, tool: str) -> str:
    return await call_error(w1, tool, task=TASK)


TOOL_WRITES: dict[str, ToolCase] = {
    "memory-complete-task": _tool_complete_task,
    "store_memory": _tool_store,
    "memory-store": _tool_store,  # alias
    "memory-delete": _tool_delete,
    "memory-revert": _tool_revert,
    "memory-delete-many": _tool_delete_many,
    "inject-learning": _tool_inject,
    "memory-inject-learning": _tool_inject,  # alias
    "index-note": _tool_index_note,
    "memory-link": _tool_link,
}


async def _write_tools(world: TeamWorld) -> set[str]:
    async with world.server.client(world.tokens["lead"]) as lead:  # the lead sees every tool
        tools = (await lead.list_tools()).tools
    return {t.name for t in tools if not (t.annotations and t.annotations.read_only_hint is True)}


async def _team_snapshot(world: TeamWorld) -> list[tuple[Any, ...]]:
    async with world.server.client(world.tokens["lead"]) as lead:
        listed = await call(
            lead,
            "memory-list",
            scope="all",
            limit=100,
            include_expired=True,
            task=TASK,
            include_archived=True,
        )
        links = [
            (m["id"], link["relation"], link["direction"], link["id"])
            for m in listed["memories"]
            for link in (await call(lead, "memory-get", id=m["id"])).get("links", [])
        ]
        return sorted(
            (m["id"], m["key"], m["value"], m["version"], m["agent_id"], m["updated_by"])
            + (m["project"], m.get("task"), m.get("archived_at"))
            for m in listed["memories"]
        ) + sorted(links)


def test_every_tool_that_is_not_read_only_is_in_the_table(team: TeamWorld) -> None:
    found = anyio.run(_write_tools, team)
    assert "index-note" in found  # the HTTP transports' own tool is listed
    assert found == set(TOOL_WRITES), f"add a case to TOOL_WRITES for: {found - set(TOOL_WRITES)}"


@pytest.mark.parametrize("tool", list(TOOL_WRITES))
def test_each_write_tool_refuses_a_worker_the_leads_memories(team: TeamWorld, tool: str) -> None:
    async def attempt() -> str:
        async with team.server.client(team.tokens["w1"]) as w1:
            return await TOOL_WRITES[tool](team, w1, tool)

    before = anyio.run(_team_snapshot, team)
    refusal = anyio.run(attempt)
    assert refused_by_the_decision(refusal), refusal
    assert anyio.run(_team_snapshot, team) == before, f"{tool} changed the store"


# -- the knowledge-graph profile's tools (memory_mcp/graph/profile.py, on the service's writes) --

GRAPH_ENTITIES = [
    {"name": "Review", "entityType": "rule", "observations": ["Two reviewers"]},
    {"name": "Deploy", "entityType": "rule", "observations": ["Tuesdays"]},
]
GRAPH_RELATION = {"from": "Review", "to": "Deploy", "relationType": "gates"}
# Each write tool as a worker aims it at the lead's swarm graph.
GRAPH_WRITES: dict[str, dict[str, Any]] = {
    "add_observations": {"observations": [{"entityName": "Review", "contents": ["None"]}]},
    "delete_observations": {
        "deletions": [{"entityName": "Review", "observations": ["Two reviewers"]}]
    },
    "delete_entities": {"entityNames": ["Review"]},
    "create_relations": {"relations": [{**GRAPH_RELATION, "relationType": "overrides"}]},
    "delete_relations": {"relations": [GRAPH_RELATION]},
    # A taken name is left as it is (the reference's rule): nothing to ask, nothing written.
    "create_entities": {"entities": [{**GRAPH_ENTITIES[0], "observations": ["No reviews"]}]},
}


@pytest.mark.anyio
async def test_each_graph_tool_refuses_a_worker_the_leads_entities(
    make_settings: Callable[..., Settings],
) -> None:
    def server(agent: str, role: str) -> Client:
        settings = make_settings(
            agent_id=agent, role=role, watch=False, profile="knowledge-graph", graph_scope="swarm"
        )
        return Client(build_server(settings, FakeEmbedder(), open_app=open_app))

    async with server("lead", "lead") as lead, server("w1", "worker") as w1:
        tools = (await w1.list_tools()).tools
        writes = {t.name for t in tools if t.annotations and not t.annotations.read_only_hint}
        await call(lead, "create_entities", entities=GRAPH_ENTITIES)
        await call(lead, "create_relations", relations=[GRAPH_RELATION])
        before = await call(lead, "read_graph")
        for tool, arguments in GRAPH_WRITES.items():
            if tool == "create_entities":
                assert (await call(w1, tool, **arguments)) == {"entities": []}
            else:
                error = await call_error(w1, tool, **arguments)
                assert refused_by_the_decision(error), (tool, error)
            assert await call(lead, "read_graph") == before, f"{tool} changed the graph"
    assert writes == set(GRAPH_WRITES), (
        f"add a case to GRAPH_WRITES for {writes - set(GRAPH_WRITES)}"
    )


# -- the CLI and the web view --------------------------------------------------------------------


# The commands that change memories, and the service paths (above) they go through.
CLI_WRITES = {
    "delete": "MemoryService.delete",
    "store": "MemoryService.store_and_check (or the team server's store_memory)",
    "import": "prepare_memory, ownership_refusals, write_batch",
    "index": "the notes indexer: sync_file / remove_file with Origin.FOLDER (it reads the file)",
    "hook": "store_memory (SessionEnd), the notes indexer or index-note (PostToolUse)",
    "serve": "the tools (above)",
    "projects": "projects move: MemoryService.move_to_project (the decision for each)",
    "quarantine": "approve / discard: Quarantine.approve, discard (Change.APPROVE)",
    "ui": "the web view reads, and a lead approves held memories (routes checked below)",
}
CLI_OTHERS = {
    "search": "reads",
    "get": "reads (and counts the read)",
    "list": "reads",
    "history": "reads",
    "stats": "reads",
    "tasks": "reads",
    "export": "reads",
    "context": "reads",
    "doctor": "reads",
    "purge": "purge_expired: time decides, not a caller",
    "decay": "MemoryService.decay: confidence and time decide, not a caller",
    "copy": "an operator copies a whole store row for row into an empty one",
    "token": "bearer tokens and OAuth grants, not memories",
    "model": "the model export",
    "setup": "a client's config files and the settings file, never the store",
}


def test_every_cli_command_is_a_write_path_or_says_why_not() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names = set(commands.choices)
    assert names == set(CLI_WRITES) | set(CLI_OTHERS), (
        f"classify: {names - set(CLI_WRITES) - set(CLI_OTHERS)}"
    )


@pytest.mark.anyio
async def test_the_web_view_changes_nothing_but_its_login(
    make_settings: Callable[..., Settings],
) -> None:
    async with opened(make_settings(watch=False)) as app:
        routes = WebPages(app, None).routes()
    changing = {route.path for route in routes if set(route.methods) - {"GET", "HEAD"}}
    # a session cookie; and a lead's approval of a held memory: Quarantine.approve
    # (Change.APPROVE, SERVICE_WRITES above)
    assert changing == {"/ui/login", "/ui/logout", "/ui/quarantine/{memory_id:int}/approve"}


@pytest.mark.anyio
async def test_the_oauth_sign_in_page_changes_grants_never_memories(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(watch=False, oauth=True)
    async with opened(settings) as app:
        routes = web_routes(settings, app, sign_in=True)
    changing = {route.path for route in routes if set(route.methods) - {"GET", "HEAD"}}
    # its POST answers an authorization request (auth/oauth.py): a code, never a memory
    approve = "/ui/quarantine/{memory_id:int}/approve"  # Quarantine.approve
    assert changing == {"/ui/login", "/ui/logout", approve, SIGN_IN_PATH}


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())


def test_the_cli_write_commands_ask_the_decision(
    tmp_path: Path,
    cli_env: None,
    spied: list[tuple[str, str, bool]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = str(tmp_path / "m.db")
    seed_file = tmp_path / "seed.jsonl"
    seed_file.write_text(
        json.dumps({"key": RULE_KEY, "value": "Two reviewers", "scope": "swarm"}) + "\n"
    )
    assert main(["import", str(seed_file), "--db", db, "--agent-id", "lead", "--role", "lead"]) == 0
    found = main(["search", "reviewers", "--db", db, "--agent-id", "w1", "--json"])
    rule_id = json.loads(capsys.readouterr().out)["results"][0]["id"]
    assert found == 0
    spied.clear()
    assert main(["delete", str(rule_id), "--db", db, "--agent-id", "w1"]) == 1
    assert refused_by_the_decision(capsys.readouterr().err)
    assert spied and spied[-1][2], "delete did not ask the decision"
    spied.clear()
    rewrite = tmp_path / "rewrite.jsonl"
    rewrite.write_text(
        json.dumps({"key": RULE_KEY, "value": "No reviews", "scope": "swarm"}) + "\n"
    )
    assert main(["import", str(rewrite), "--db", db, "--agent-id", "w1"]) == 1
    assert refused_by_the_decision(capsys.readouterr().err)
    assert any(refused for *_, refused in spied), "import did not ask the decision"
    spied.clear()
    move = ["projects", "move", "--to", "elsewhere", "--key", RULE_KEY, "--from", "*", "--db", db]
    assert main([*move, "--agent-id", "w1"]) == 1
    assert refused_by_the_decision(capsys.readouterr().err)
    assert spied and spied[-1][2], "projects move did not ask the decision"
    assert main(["get", str(rule_id), "--db", db, "--agent-id", "w1", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["value"], got["project"]) == ("Two reviewers", "*")
