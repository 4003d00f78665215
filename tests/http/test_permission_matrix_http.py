"""The permission matrix of tests/test_permission_matrix.py over real HTTP: the same rules,
read paths and write paths, with each agent known only by its bearer token and each
viewer's session being its own MCP session (one connection per viewer) on a spawned
`memory-mcp serve --transport streamable-http|sse`. Everything runs inside one set of
connections, because a session scope lives as long as its connection.

One server runs the whole matrix (`whole_matrix`) on streamable HTTP and SQLite: the read
paths, then every delete, then every overwrite (a server's start, its tokens and the world
cost more than a part of the matrix, and each part leaves the world as the next one
expects). SSE and PostgreSQL run the read paths (`read_paths`): every viewer, connected as
its own agent and session, reads every memory through every tool, which comes out wrong if
the transport or the store gives a connection the wrong agent or session. The deletes and
overwrites take that identity from the same place; they run whole on both stores in
process (tests/test_permission_matrix.py). A whole matrix per variant cost ~15 s of CPU."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.http.team_server import TeamServer, running, token_add
from tests.test_permission_matrix import (
    AGENTS,
    SCOPES,
    TOOL_PATHS,
    VIEWERS,
    Viewer,
    World,
    delete_matrix,
    disagreements,
    overwrite_matrix,
    populate,
)

Job = Callable[[World, dict[Viewer, Client]], Awaitable[list[str]]]
Connect = Callable[[Viewer], AbstractAsyncContextManager[Client]]


async def read_paths(world: World, clients: dict[Viewer, Client]) -> list[str]:
    wrong = []
    for name, read in TOOL_PATHS.items():
        seen = {viewer: await read(world, viewer, clients[viewer]) for viewer in VIEWERS}
        wrong += [f"{name}: {problem}" for problem in disagreements(world, seen)]
    return wrong


PARTS: dict[str, Job] = {"read": read_paths, "delete": delete_matrix, "overwrite": overwrite_matrix}


async def whole_matrix(world: World, clients: dict[Viewer, Client]) -> list[str]:
    """The three parts in turn on one world, each failure named by its part. Reading
    changes nothing; the delete matrix writes back what it deleted (its owner stores it
    again, in its session), and the world's memories follow their new ids and versions,
    so the overwrite matrix starts from the same rules' world as a fresh one."""
    wrong = []
    for part, job in PARTS.items():
        wrong += [f"{part}: {problem}" for problem in await job(world, clients)]
    return wrong


async def in_a_world(
    server: TeamServer, tokens: dict[str, str], job: Job, connect: Connect | None = None
) -> list[str]:
    """`job` run by every viewer, each connected with its agent's bearer token, or as
    `connect` connects it (tests/http/test_oauth_identity.py: signed in by OAuth)."""
    world = World(server.db, server.tmp)
    connect = connect or (lambda viewer: server.client(tokens[viewer.agent]))
    async with AsyncExitStack() as stack:
        clients = {viewer: await stack.enter_async_context(connect(viewer)) for viewer in VIEWERS}
        await populate(world, clients)
        assert len(world.memories) == len(VIEWERS) * len(SCOPES) + 1
        return await job(world, clients)


# PostgreSQL over one transport: the transports are the same code above the store.
@pytest.mark.parametrize(
    ("transport", "db_backend", "job"),
    [
        ("streamable-http", "sqlite", whole_matrix),
        ("sse", "sqlite", read_paths),
        ("streamable-http", "postgresql", read_paths),
    ],
    ids=["streamable-http-sqlite-whole", "sse-sqlite-read", "streamable-http-postgresql-read"],
)
def test_the_permission_matrix_holds_over_http(
    tmp_path: Path, transport: str, db_url: str, job: Job
) -> None:
    db = db_url
    tokens = {agent: token_add(db, agent, role, home=tmp_path) for agent, role in AGENTS.items()}
    with running(tmp_path, transport, db) as server:
        assert anyio.run(in_a_world, server, tokens, job) == []
