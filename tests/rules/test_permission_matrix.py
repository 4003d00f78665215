"""The permission matrix: 3 agents (workers w1, w2 and a lead) x 2 sessions, each storing
one memory in every scope in both sessions, plus a learning the lead injected about w2;
then every agent in every session tries every tool and read path on every memory.

The expected outcome of each cell comes from the README's rules, written out below as
plain functions; each path is checked against them cell by cell, and a failure prints
every cell that disagrees.

- see: a swarm memory, or your own agent memory, or your own session memory of this
  session (README "The tools");
- delete: what you can see and own, or any swarm memory if you are the lead;
  another agent's private memory is "not found" for everyone else, lead included;
- update (store_memory with the same key and scope): the same memory only where the
  upsert identity matches (swarm by key; agent by owner and key; session by owner,
  session and key), allowed to its owner or, for swarm memories, the lead; elsewhere the
  write makes the caller's own memory and leaves the other alone.

Read paths: memory-search, memory-get, the memory://context resource, the memory-context
prompt (with and without a query), `memory-mcp export --agent-id`, `memory-mcp context`
(with and without --query) and the SessionStart hook. The tools run in-process with the
FAKE embedder (this is about permissions, not retrieval); the CLI paths run main() in
this process on the same database file."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.cli import main as cli
from memory_mcp.hooks import runner
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings
from tests.conftest import BACKENDS, BOTH_BACKENDS, FakeEmbedder, ToolFailed, call, store_db

pytestmark = BOTH_BACKENDS

AGENTS = {"w1": "worker", "w2": "worker", "lead": "lead"}
SESSIONS = ("s1", "s2")
SCOPES = ("session", "agent", "swarm")
WORD = "quokka"  # in every value, so one search finds every memory the viewer may see


@dataclass(frozen=True)
class Viewer:
    agent: str
    session: str

    @property
    def is_lead(self) -> bool:
        return AGENTS[self.agent] == "lead"

    def __str__(self) -> str:
        return f"{self.agent}@{self.session}"


@dataclass
class Memory:
    key: str
    owner: str
    scope: str
    session: str  # where it was written; part of the identity for session scope only
    id: int = 0
    version: int = 1


VIEWERS = [Viewer(agent, session) for agent in AGENTS for session in SESSIONS]


# -- the README's rules ---------------------------------------------------------------------


def may_see(viewer: Viewer, memory: Memory) -> bool:
    if memory.scope == "swarm":
        return True
    if memory.owner != viewer.agent:
        return False
    return memory.scope == "agent" or memory.session == viewer.session


def delete_outcome(viewer: Viewer, memory: Memory) -> str:
    if not may_see(viewer, memory):
        return "not found"
    if memory.owner == viewer.agent or (memory.scope == "swarm" and viewer.is_lead):
        return "deleted"
    return "refused"


def overwrite_outcome(viewer: Viewer, memory: Memory) -> str:
    if memory.key.startswith("learning:") and not viewer.is_lead:
        return "refused"  # the key space is the lead's, in every scope
    same_identity = {
        "swarm": True,
        "agent": memory.owner == viewer.agent,
        "session": memory.owner == viewer.agent and memory.session == viewer.session,
    }[memory.scope]
    if not same_identity:
        return "separate"
    if memory.owner == viewer.agent or (memory.scope == "swarm" and viewer.is_lead):
        return "updated"
    return "refused"


# -- the world: six clients on one file ------------------------------------------------------


@dataclass
class World:
    db: Path | str  # a SQLite file or a PostgreSQL URL
    tmp: Path
    memories: list[Memory] = field(default_factory=list)

    def settings(self, viewer: Viewer) -> Settings:
        return Settings(
            db=str(self.db),
            agent_id=viewer.agent,
            role=AGENTS[viewer.agent],
            session_id=viewer.session,
            data_dir=self.tmp / "data",
            memory_dir=self.tmp / "notes",
            watch=False,
        )

    def by_id(self) -> dict[int, Memory]:
        return {m.id: m for m in self.memories}


async def with_clients(world: World, job: Callable[[dict[Viewer, Client]], Awaitable[Any]]) -> Any:
    async with AsyncExitStack() as stack:
        clients = {
            viewer: await stack.enter_async_context(
                Client(build_server(world.settings(viewer), FakeEmbedder(), open_app=open_app))
            )
            for viewer in VIEWERS
        }
        return await job(clients)


async def store(client: Client, memory: Memory) -> None:
    result = await call(
        client, "memory-store", key=memory.key, scope=memory.scope, value=f"{WORD} {memory.key}"
    )
    memory.id, memory.version = result["id"], result["version"]


async def inject(client: Client, memory: Memory) -> None:
    result = await call(
        client,
        "memory-inject-learning",
        learning=f"{WORD} always rebase first",
        category="best-practice",
        agent_id="w2",
    )
    memory.key, memory.id, memory.version = result["key"], result["id"], result["version"]


async def populate(world: World, clients: dict[Viewer, Client]) -> None:
    for viewer in VIEWERS:
        for scope in SCOPES:
            memory = Memory(
                f"{viewer.agent}.{scope}.{viewer.session}", viewer.agent, scope, viewer.session
            )
            await store(clients[viewer], memory)
            world.memories.append(memory)
    learning = Memory("", "lead", "swarm", "s1")
    await inject(clients[Viewer("lead", "s1")], learning)
    world.memories.append(learning)


async def restore(clients: dict[Viewer, Client], memory: Memory) -> None:
    """Put a deleted memory back, written again by its owner in its session."""
    owner = clients[Viewer(memory.owner, memory.session)]
    if memory.key.startswith("learning:"):
        await inject(owner, memory)
    else:
        await store(owner, memory)


def new_world(tmp: Path, db: str) -> World:
    world = World(db, tmp)
    anyio.run(with_clients, world, lambda clients: populate(world, clients))
    assert len(world.memories) == len(VIEWERS) * len(SCOPES) + 1
    return world


@pytest.fixture(scope="module", params=BACKENDS)
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """Shared by the read paths, which change nothing the rules depend on."""
    tmp = tmp_path_factory.mktemp("matrix")
    with store_db(request.param, tmp, request) as db:
        yield new_world(tmp, db)


@pytest.fixture
def cli_env(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The CLI and the hook read MEMORY_MCP_* (and may read a config file under HOME):
    point all of them at this world, never at the machine's real settings."""
    monkeypatch.setenv("HOME", str(world.tmp / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(world.tmp / "home" / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(world.tmp / "home" / "data"))
    monkeypatch.setenv("MEMORY_MCP_DB", str(world.db))
    monkeypatch.setenv("MEMORY_MCP_DATA_DIR", str(world.tmp / "data"))
    monkeypatch.setenv("MEMORY_MCP_MEMORY_DIR", str(world.tmp / "notes"))
    monkeypatch.setenv("MEMORY_MCP_WATCH", "false")
    yield


# -- read paths: each returns the ids one viewer gets -----------------------------------------

BLOCK_ID = re.compile(r'<memory id="(\d+)"')


async def by_search(world: World, viewer: Viewer, client: Client) -> set[int]:
    found = await call(client, "memory-search", query=WORD, limit=50)
    return {r["id"] for r in found["results"]}


def text_of(result: Any) -> str:
    return " ".join(getattr(item, "text", "") for item in result.content)


async def by_get(world: World, viewer: Viewer, client: Client) -> set[int]:
    readable = set()
    for memory in world.memories:
        result = await client.call_tool("memory-get", {"id": memory.id})
        if result.is_error:
            assert "not found" in text_of(result), text_of(result)
        else:
            readable.add(memory.id)
    return readable


async def by_resource(world: World, viewer: Viewer, client: Client) -> set[int]:
    contents = (await client.read_resource("memory://context")).contents
    return {int(i) for item in contents for i in BLOCK_ID.findall(getattr(item, "text", ""))}


async def prompt_ids(client: Client, arguments: dict[str, str] | None) -> set[int]:
    prompt = await client.get_prompt("memory-context", arguments)
    text = " ".join(getattr(m.content, "text", "") for m in prompt.messages)
    return {int(i) for i in BLOCK_ID.findall(text)}


async def by_prompt(world: World, viewer: Viewer, client: Client) -> set[int]:
    return await prompt_ids(client, None)


async def by_prompt_query(world: World, viewer: Viewer, client: Client) -> set[int]:
    return await prompt_ids(client, {"query": WORD})


TOOL_PATHS = {
    "memory-search": by_search,
    "memory-get": by_get,
    "memory://context": by_resource,
    "prompt memory-context": by_prompt,
    "prompt memory-context query": by_prompt_query,
}


def viewer_flags(viewer: Viewer) -> list[str]:
    return [
        "--agent-id",
        viewer.agent,
        "--session-id",
        viewer.session,
        "--role",
        AGENTS[viewer.agent],
    ]


def cli_export(world: World, viewer: Viewer, capsys: pytest.CaptureFixture[str]) -> set[int]:
    assert cli.main(["export", "--db", str(world.db), *viewer_flags(viewer)]) == 0
    lines = capsys.readouterr().out.splitlines()
    keys = {json.loads(line)["key"] for line in lines}
    return {m.id for m in world.memories if m.key in keys}


def cli_context(world: World, viewer: Viewer, capsys: pytest.CaptureFixture[str]) -> set[int]:
    assert cli.main(["context", "--db", str(world.db), *viewer_flags(viewer)]) == 0
    return {int(i) for i in BLOCK_ID.findall(capsys.readouterr().out)}


def cli_context_query(world: World, viewer: Viewer, capsys: pytest.CaptureFixture[str]) -> set[int]:
    argv = ["context", "--db", str(world.db), "--query", WORD, *viewer_flags(viewer)]
    assert cli.main(argv) == 0
    return {int(i) for i in BLOCK_ID.findall(capsys.readouterr().out)}


def session_start_hook(
    world: World, viewer: Viewer, capsys: pytest.CaptureFixture[str]
) -> set[int]:
    # The hook gets its agent and session from the environment, as hooks/session-start does.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEMORY_MCP_AGENT_ID", viewer.agent)
        env.setenv("MEMORY_MCP_SESSION_ID", viewer.session)
        env.setenv("MEMORY_MCP_ROLE", AGENTS[viewer.agent])
        payload = json.dumps(
            {"session_id": "claude-1", "hook_event_name": "SessionStart", "source": "startup"}
        ).encode()
        assert runner.main(["session-start"], stdin=payload, watchdog=False, open_app=open_app) == 0
    captured = capsys.readouterr()
    assert "memory-mcp hook" not in captured.err, captured.err
    return {int(i) for i in BLOCK_ID.findall(captured.out)}


CLI_PATHS = {
    "memory-mcp export --agent-id": cli_export,
    "memory-mcp context": cli_context,
    "memory-mcp context --query": cli_context_query,
    "SessionStart hook": session_start_hook,
}


def disagreements(world: World, seen: dict[Viewer, set[int]]) -> list[str]:
    wrong = []
    for viewer in VIEWERS:
        for memory in world.memories:
            expected, actual = may_see(viewer, memory), memory.id in seen[viewer]
            if expected != actual:
                wrong.append(
                    f"{viewer} {'should' if expected else 'should not'} see {memory.key} "
                    f"({memory.scope} of {memory.owner}@{memory.session})"
                )
    return wrong


@pytest.mark.parametrize("path", list(TOOL_PATHS))
def test_tool_read_paths_show_exactly_what_the_rules_allow(world: World, path: str) -> None:
    read = TOOL_PATHS[path]

    async def job(clients: dict[Viewer, Client]) -> dict[Viewer, set[int]]:
        return {viewer: await read(world, viewer, clients[viewer]) for viewer in VIEWERS}

    seen = anyio.run(with_clients, world, job)
    assert disagreements(world, seen) == []


@pytest.mark.parametrize("path", list(CLI_PATHS))
def test_cli_read_paths_show_exactly_what_the_rules_allow(
    world: World, path: str, cli_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    read = CLI_PATHS[path]
    seen = {viewer: read(world, viewer, capsys) for viewer in VIEWERS}
    assert disagreements(world, seen) == []


# -- write paths -------------------------------------------------------------------------------


def cells() -> Iterator[tuple[Viewer, int]]:
    for viewer in VIEWERS:
        for index in range(len(VIEWERS) * len(SCOPES) + 1):
            yield viewer, index


async def delete_matrix(world: World, clients: dict[Viewer, Client]) -> list[str]:
    wrong = []
    for viewer, index in cells():
        memory = world.memories[index]
        expected = delete_outcome(viewer, memory)
        result = await clients[viewer].call_tool("memory-delete", {"id": memory.id})
        if not result.is_error:
            actual = "deleted"
        elif "not found" in text_of(result):
            actual = "not found"
        elif "only its owner or the lead" in text_of(result):
            actual = "refused"
        else:
            actual = f"error: {text_of(result)}"
        if actual != expected:
            wrong.append(f"{viewer} deleting {memory.key}: {actual}, expected {expected}")
        owner = clients[Viewer(memory.owner, memory.session)]
        still_there = not (await owner.call_tool("memory-get", {"id": memory.id})).is_error
        if still_there == (actual == "deleted"):
            wrong.append(f"{viewer} deleting {memory.key}: {actual} but there={still_there}")
        if actual == "deleted":
            await restore(clients, memory)
    return wrong


def test_memory_delete_follows_the_rules(tmp_path: Path, db_url: str) -> None:
    world = new_world(tmp_path, db_url)
    assert anyio.run(with_clients, world, partial(delete_matrix, world)) == []


async def overwrite_matrix(world: World, clients: dict[Viewer, Client]) -> list[str]:
    wrong = []
    for viewer, index in cells():
        memory = world.memories[index]
        expected = overwrite_outcome(viewer, memory)
        client = clients[viewer]
        value = f"{WORD} rewritten by {viewer}"
        try:
            result = await call(
                client, "memory-store", key=memory.key, value=value, scope=memory.scope
            )
        except ToolFailed as failed:
            refusals = (f"agent '{memory.owner}'", "keys starting with 'learning:' are the lead's")
            actual = "refused" if any(r in str(failed) for r in refusals) else str(failed)
        else:
            actual = "updated" if result["id"] == memory.id else "separate"
        owner = clients[Viewer(memory.owner, memory.session)]
        now = await call(owner, "memory-get", id=memory.id)
        if actual == "updated":
            memory.version += 1
            if (now["value"], now["updated_by"], now["agent_id"]) != (
                value,
                viewer.agent,
                memory.owner,
            ):
                wrong.append(f"{viewer} updated {memory.key} but it reads {now}")
        elif actual == "separate":
            # The caller's own memory; remove it so the world stays as it was.
            await call(client, "memory-delete", id=result["id"])
        if now["version"] != memory.version:
            wrong.append(
                f"{viewer} on {memory.key}: version {now['version']}, expected {memory.version}"
            )
        if actual != expected:
            wrong.append(f"{viewer} storing {memory.key}: {actual}, expected {expected}")
    return wrong


def test_store_memory_overwrite_follows_the_rules(tmp_path: Path, db_url: str) -> None:
    world = new_world(tmp_path, db_url)
    assert anyio.run(with_clients, world, partial(overwrite_matrix, world)) == []


def test_the_matrix_covers_every_outcome() -> None:
    """The rules above are not vacuous: each outcome occurs, for workers and the lead."""
    memories = [
        Memory(f"{v.agent}.{s}.{v.session}", v.agent, s, v.session) for v in VIEWERS for s in SCOPES
    ]
    memories.append(Memory("learning", "lead", "swarm", "s1"))
    deletes = {(v.is_lead, delete_outcome(v, m)) for v in VIEWERS for m in memories}
    writes = {(v.is_lead, overwrite_outcome(v, m)) for v in VIEWERS for m in memories}
    assert deletes == {
        (lead, outcome) for lead in (True, False) for outcome in ("deleted", "not found", "refused")
    } - {(True, "refused")}
    assert writes == {
        (lead, outcome) for lead in (True, False) for outcome in ("updated", "separate", "refused")
    } - {(True, "refused")}
