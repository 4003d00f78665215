"""No agent crowds out the others on a real team server (issue 35): an agent's MCP sessions
are bounded per agent across its bearer tokens, the OAuth grants it signs in to with its
own token (the real /register -> /authorize -> sign-in -> /token flow) and SSE
connections; the refusal names the limit and reaches that agent only, while another
agent's `initialize` goes through; a flood of refusals leaves the log bounded; anonymous
client registrations are rate-limited and never cost a client in the middle of signing in
its sign-in (memory_mcp/http/agent_sessions.py, rates.py, oauth_provider.py). The grants
and the flood share one server (`capped`), each with agents of its own."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from memory_mcp.http.rates import LOG_LINES_PER_MINUTE
from tests.conftest import initialize_request
from tests.http.oauth_client import (
    client_metadata,
    mcp_status,
    origin_of,
    page_form,
    pkce,
    query_of,
    register,
    tokens_for,
)
from tests.http.team_server import TeamServer, running, token_add
from tests.http.test_agent_sessions import RawSession, answer_of, bearer

pytestmark = pytest.mark.anyio

CAP = 2


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    """Streamable HTTP with OAuth and CAP sessions per agent."""
    tmp = tmp_path_factory.mktemp("capped")
    args = ("--oauth", "--max-sessions-per-agent", str(CAP))
    with running(tmp, "streamable-http", tmp / "memory.db", *args) as server:
        yield server


def agent_token(server: TeamServer, agent: str, role: str = "worker") -> str:
    return token_add(server.db, agent, role, home=server.tmp)


def refusal_of(response: httpx2.Response) -> str:
    """The message of a refused session: 429 and a JSON-RPC error naming the limit."""
    assert response.status_code == 429, response.text
    message: str = answer_of(response)["error"]["message"]
    assert "--max-sessions-per-agent" in message
    return message


async def test_oauth_grants_an_agent_mints_count_as_its_own(capped: TeamServer) -> None:
    """Signing in again and again with its own token gives an agent no more sessions
    (each grant had its own cap before), and its oldest grant ends beyond the cap."""
    server = capped
    w1, lead = agent_token(server, "w1"), agent_token(server, "lead", "lead")
    client = register(server)
    grants = [tokens_for(client, w1)["access_token"] for _ in range(CAP + 1)]
    assert mcp_status(server, grants[0]).status_code == 401, "the oldest grant ended"
    async with httpx2.AsyncClient(timeout=60) as http, AsyncExitStack() as held:
        for access_token in grants[1:]:  # each grant's session busy, as the SDK's client's
            session = RawSession(http, server, access_token)
            await session.open()
            await held.enter_async_context(session.listening())
        through_bearer = await RawSession(http, server, w1).post(initialize_request("w1"))
        assert f"'w1' has {CAP} MCP sessions open" in refusal_of(through_bearer)
        fresh = tokens_for(client, w1)["access_token"]  # a new grant makes no room
        refusal_of(await RawSession(http, server, fresh).post(initialize_request("w1")))
        assert mcp_status(server, lead).status_code == 200, "another agent gets in"


@asynccontextmanager
async def sse_stream(server: TeamServer, token: str) -> AsyncIterator[httpx2.Response]:
    """GET /sse held open: the response (200 and its endpoint event, or a refusal)."""
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        http.stream("GET", server.url, headers=bearer(token)) as stream,
    ):
        if stream.status_code != 200:
            await stream.aread()
            yield stream
            return
        lines = stream.aiter_lines()  # kept while the stream is held: dropping it closes it
        async for line in lines:
            if line.startswith("data:"):
                break
        yield stream


async def test_sse_connections_are_bounded_per_agent(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    w1, w2 = token_add(db, "w1"), token_add(db, "w2")
    args = ("--oauth", "--max-sessions-per-agent", str(CAP))
    with running(tmp_path, "sse", db, *args) as server:
        grant = tokens_for(register(server), w1)["access_token"]  # w1 signed in once
        async with AsyncExitStack() as held:
            for token in (w1, grant):  # one connection with its token, one with its grant
                opened = await held.enter_async_context(sse_stream(server, token))
                assert opened.status_code == 200
            async with sse_stream(server, w1) as third:
                assert third.status_code == 429
                message = json.loads(third.text)["error"]["message"]
                assert f"'w1' has {CAP} MCP sessions open" in message
            async with sse_stream(server, w2) as other:
                assert other.status_code == 200, "another agent connects"
        deadline = time.monotonic() + 30
        while True:  # the closed streams stop counting once the server sees them end
            async with sse_stream(server, w1) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "closed connections still count"
            await anyio.sleep(0.2)


async def test_a_flood_of_refused_sessions_leaves_the_log_bounded(capped: TeamServer) -> None:
    server = capped
    flooder, other_agent = agent_token(server, "flooder"), agent_token(server, "bystander")
    flood = 5 * LOG_LINES_PER_MINUTE
    async with httpx2.AsyncClient(timeout=60) as http, AsyncExitStack() as held:
        for _ in range(CAP):  # the flooder's sessions all busy
            busy = RawSession(http, server, flooder)
            await busy.open()
            await held.enter_async_context(busy.listening())
        logged = len(server.log.splitlines())
        for _ in range(flood):
            refusal_of(await RawSession(http, server, flooder).post(initialize_request("f")))
        other = RawSession(http, server, other_agent)
        await other.open()
        assert await other.ping() == 200
    lines = server.log.splitlines()[logged:]
    refusals = [line for line in lines if "refused a new session of agent 'flooder'" in line]
    assert 0 < len(refusals) <= LOG_LINES_PER_MINUTE, "a line a refusal, up to the budget"
    assert len(lines) < 2 * LOG_LINES_PER_MINUTE, lines[-5:]


def _open_sign_in(browser: httpx2.Client, authorization_url: str) -> tuple[str, dict[str, str]]:
    """A person's browser on the sign-in page: (form action URL, its fields)."""
    found = browser.get(authorization_url)
    assert found.status_code == 302, found.text
    page_url = found.headers["location"]
    page = browser.get(page_url)
    assert page.status_code == 200, page.text
    action, fields = page_form(page.text)
    return origin_of(page_url) + action, fields


def test_a_registration_flood_is_refused_and_spares_a_sign_in_under_way(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    w1 = token_add(db, "w1")
    per_minute = 4
    args = ("--oauth", "--oauth-registrations-per-minute", str(per_minute))
    with running(tmp_path, "streamable-http", db, *args) as server:
        client = register(server)  # the person's client: the minute's first registration
        verifier, challenge = pkce()
        with httpx2.Client(timeout=60) as browser:
            action, fields = _open_sign_in(browser, client.authorize_url(challenge, "st"))
            metadata: dict[str, Any] = client_metadata().model_dump(mode="json", exclude_none=True)
            answers = [
                httpx2.post(f"{server.base}/register", json=metadata, timeout=60)
                for _ in range(3 * per_minute)
            ]
            statuses = [answer.status_code for answer in answers]
            assert statuses == [201] * (per_minute - 1) + [429] * (2 * per_minute + 1)
            refused = answers[-1]
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert (
                f"accepts {per_minute} client registrations a minute"
                in (refused.json()["error_description"])
            )
            answered = browser.post(
                action,
                data={**fields, "credential": w1, "answer": "allow"},
                headers={"Origin": origin_of(action)},
            )
        assert answered.status_code == 303, answered.text
        exchanged = client.exchange(query_of(answered.headers["location"])["code"], verifier)
        assert exchanged.status_code == 200, exchanged.text
        assert mcp_status(server, exchanged.json()["access_token"]).status_code == 200
        assert "refused a client registration" in server.log
