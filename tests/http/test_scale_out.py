"""Three `memory-mcp serve --transport streamable-http` processes on one PostgreSQL
database, as a team runs them behind a reverse proxy (README, "Several server
processes"). Real processes, the real model in each, tokens from the real CLI.

What holds across processes: a memory stored through one is found by meaning through the
others at once (pgvector searches the committed rows; there is no per-process copy),
tokens made or revoked by the CLI count on every process at their next request, and
ownership and visibility are the store's. What does not: a session of the handshake
protocol lives in the memory of the process that opened it (another process answers its
id 404), so the per-agent session cap counts per process; the README's proxy keeps each
token on one process for that reason. Requests of the per-request protocol have no
session, and any process answers them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import call, call_error, initialize_request, pg_database
from tests.http.team_server import TeamServer, running, token_add, token_revoke
from tests.http.test_agent_sessions import (
    ACCEPT,
    STATELESS_VERSION,
    RawSession,
    bearer,
    rpc_body,
)

pytestmark = pytest.mark.anyio

PROCESSES = 3
CAP = 2  # sessions per agent (per process)
CAT = "The office cat is called Miso and sleeps on the printer."
ABOUT_THE_CAT = "what is the name of our feline?"  # no word in common with CAT


@pytest.fixture(scope="module")
def team(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[list[TeamServer], dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("scale-out")
    with pg_database(request.getfixturevalue("pg_server")) as db, ExitStack() as stack:
        tokens = {agent: token_add(db, agent, home=tmp) for agent in ("alice", "bob")}
        tokens["lead"] = token_add(db, "lead", "lead", home=tmp)
        args = ("--max-sessions-per-agent", str(CAP))
        servers = [
            stack.enter_context(running(tmp, "streamable-http", db, *args))
            for _ in range(PROCESSES)
        ]
        for server in servers:
            assert server.wait_healthy()["model"] == "up"
        yield servers, tokens


def initialize_status(server: TeamServer, token: str) -> int:
    """The status of a handshake's opening request with `token`."""
    headers = {**ACCEPT, **bearer(token)}
    body = initialize_request("raw")
    return httpx2.post(server.url, json=body, headers=headers, timeout=60).status_code


async def test_a_store_through_one_process_is_found_by_meaning_through_the_others(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    servers, tokens = team
    async with servers[0].client(tokens["alice"]) as alice:
        stored = await call(alice, "store_memory", key="pets", value=CAT, scope="swarm")
    for server in servers[1:]:  # at once: no wait, no retry
        async with server.client(tokens["bob"]) as bob:
            found = await call(bob, "memory-search", query=ABOUT_THE_CAT, limit=3)
        assert found.get("semantic", True), found
        assert [hit["id"] for hit in found["results"]][:1] == [stored["id"]]


async def test_any_process_answers_the_per_request_protocol(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    """No session: a write through one process and a read through each other, each
    request on its own, as a proxy that spreads requests would send them."""
    servers, tokens = team
    answers = []
    for turn, server in enumerate([servers[2], servers[0], servers[1]]):
        async with create_mcp_http_client(headers=bearer(tokens["alice"])) as http:
            transport = streamable_http_client(server.url, http_client=http)
            async with Client(transport, mode=STATELESS_VERSION) as client:
                if turn == 0:
                    await call(client, "store_memory", key="release-day", value="Tuesdays")
                answers.append(await call(client, "memory-search", query="release-day"))
    assert [[hit["key"] for hit in a["results"]][:1] for a in answers] == [["release-day"]] * 3


async def test_a_token_added_or_revoked_by_the_cli_counts_on_every_process(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    servers, _ = team
    db, home = servers[0].db, servers[0].tmp
    token = token_add(db, "carol", home=home)  # while the three run
    assert [initialize_status(server, token) for server in servers] == [200] * PROCESSES
    token_revoke(db, "carol", home=home)
    assert [initialize_status(server, token) for server in servers] == [401] * PROCESSES


async def test_ownership_and_visibility_hold_across_processes(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    servers, tokens = team
    async with servers[0].client(tokens["bob"]) as bob:
        private = await call(bob, "store_memory", key="bobs-diary", value="bob's own notes")
        shared = await call(
            bob, "store_memory", key="oncall", value="bob is on call", scope="swarm"
        )
    async with servers[1].client(tokens["alice"]) as alice:
        assert "not found" in (await call_error(alice, "memory-get", id=private["id"])).lower()
        found = await call(alice, "memory-search", query="bob's own notes diary")
        assert private["id"] not in [hit["id"] for hit in found["results"]]
    async with servers[2].client(tokens["alice"]) as alice:
        await call_error(alice, "memory-delete", id=private["id"])
        refused = await call_error(
            alice, "store_memory", key="oncall", value="alice is on call", scope="swarm"
        )
        assert "bob" in refused  # names the owner
    async with servers[1].client(tokens["lead"]) as lead:
        await call(lead, "store_memory", key="oncall", value="carol is on call", scope="swarm")
    async with servers[0].client(tokens["bob"]) as bob:
        assert (await call(bob, "memory-get", id=private["id"]))["value"] == "bob's own notes"
        assert (await call(bob, "memory-get", id=shared["id"]))["value"] == "carol is on call"


async def test_a_session_lives_in_the_process_that_opened_it(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    """Why the proxy keeps a token on one process: the session id means nothing to the
    others (404, after which a client opens a new session there)."""
    servers, tokens = team
    async with httpx2.AsyncClient(timeout=60) as http:
        session = RawSession(http, servers[0], tokens["bob"])
        await session.open()
        assert await session.ping() == 200
        elsewhere = RawSession(http, servers[1], tokens["bob"])
        assert (await elsewhere.post(rpc_body("ping"), session=session.id)).status_code == 404


async def test_the_session_cap_counts_per_process(
    team: tuple[list[TeamServer], dict[str, str]],
) -> None:
    servers, _ = team
    token = token_add(servers[0].db, "dave", home=servers[0].tmp)  # no session open yet
    async with httpx2.AsyncClient(timeout=60) as http:
        on_first = [RawSession(http, servers[0], token) for _ in range(CAP)]
        on_second = [RawSession(http, servers[1], token) for _ in range(CAP)]
        for session in on_first + on_second:
            await session.open()
        assert [await s.ping() for s in on_first + on_second] == [200] * (2 * CAP)
        newest = RawSession(http, servers[0], token)
        await newest.open()  # over the cap on the first process: its oldest closes
        pings = [await s.ping() for s in [*on_first, newest, *on_second]]
        assert pings == [404] + [200] * CAP + [200] * CAP
