"""The permission matrix of tests/rules/test_permission_matrix.py over real HTTP: the same rules,
read paths and write paths, with each agent known only by what its connection presents
and each viewer's session being its own MCP session (one connection per viewer) on a
spawned `memory-mcp serve --transport streamable-http|sse`. Everything runs inside one
set of connections, because a session scope lives as long as its connection.

Two ways in, in one world: on the `--oauth` servers each agent's first viewer connects
with the agent's bearer token and its second signs in by OAuth with that token (the MCP
SDK's `OAuthClientProvider`: registered, signed in, PKCE; `signed_in`). Every cell of
both must come out as the README's rules say: an OAuth login sees and changes exactly
what its bearer token does, never more, and the two are one agent (each reads and
changes the memories the other wrote as that agent) in two sessions. Over HTTP a
viewer's session is its connection, so the two viewers of an agent are alike but for
how they came in.

One server runs the whole matrix (`whole_matrix`) on streamable HTTP and SQLite: the read
paths, then every delete, then every overwrite (a server's start, its tokens and the world
cost more than a part of the matrix, and each part leaves the world as the next one
expects). SSE and PostgreSQL run the read paths (`read_paths`): every viewer, connected as
its own agent and session, reads every memory through every tool, which comes out wrong if
the transport or the store gives a connection the wrong agent or session. The deletes and
overwrites take that identity from the same place; they run whole on both stores in
process (tests/rules/test_permission_matrix.py). PostgreSQL's server runs without --oauth,
every viewer with its bearer token: the matrix on a server whose only way in is the
bearer check. A whole matrix costs ~15 s of CPU: it runs once, with both ways in."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.http.oauth_client import (
    HttpBrowser,
    MemoryTokenStorage,
    oauth_connection,
    sdk_client_auth,
)
from tests.http.team_server import TeamServer, running, token_add
from tests.rules.test_permission_matrix import (
    AGENTS,
    SCOPES,
    SESSIONS,
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
    `connect` connects it (`bearer_and_oauth`)."""
    world = World(server.db, server.tmp)
    connect = connect or (lambda viewer: server.client(tokens[viewer.agent]))
    async with AsyncExitStack() as stack:
        clients = {viewer: await stack.enter_async_context(connect(viewer)) for viewer in VIEWERS}
        await populate(world, clients)
        assert len(world.memories) == len(VIEWERS) * len(SCOPES) + 1
        return await job(world, clients)


def signed_in(server: TeamServer, token: str) -> AbstractAsyncContextManager[Client]:
    """A connection of its own OAuth client (registered, signed in with `token`, PKCE)."""
    browser = HttpBrowser(token)
    return oauth_connection(server, sdk_client_auth(server, browser, MemoryTokenStorage()))


def bearer_and_oauth(server: TeamServer, tokens: dict[str, str]) -> Connect:
    """Each agent's first session with its bearer token, its second signed in by OAuth."""

    def connect(viewer: Viewer) -> AbstractAsyncContextManager[Client]:
        token = tokens[viewer.agent]
        return server.client(token) if viewer.session == SESSIONS[0] else signed_in(server, token)

    return connect


# PostgreSQL over one transport: the transports are the same code above the store.
@pytest.mark.parametrize(
    ("transport", "db_backend", "job", "oauth"),
    [
        ("streamable-http", "sqlite", whole_matrix, True),
        ("sse", "sqlite", read_paths, True),
        ("streamable-http", "postgresql", read_paths, False),
    ],
    ids=[
        "streamable-http-sqlite-whole-bearer+oauth",
        "sse-sqlite-read-bearer+oauth",
        "streamable-http-postgresql-read-bearer",
    ],
)
def test_the_permission_matrix_holds_over_http(
    tmp_path: Path, transport: str, db_url: str, job: Job, oauth: bool
) -> None:
    db = db_url
    tokens = {agent: token_add(db, agent, role, home=tmp_path) for agent, role in AGENTS.items()}
    with running(tmp_path, transport, db, *(["--oauth"] if oauth else [])) as server:
        connect = bearer_and_oauth(server, tokens) if oauth else None
        assert anyio.run(in_a_world, server, tokens, job, connect) == []
