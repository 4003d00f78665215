"""MCP sessions on the team server over real HTTP (tests/http/team_server.py): streamable HTTP
sessions bounded per agent (memory_mcp/http/agent_sessions.py), idle ones closed, a quick
shutdown with sessions open, and the session scope bound to the connection a message
really belongs to on both transports. The same bound across OAuth grants and SSE
connections, and under a flood: test_agent_limits.py."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import call, initialize_request
from tests.http.team_server import TeamServer, running, token_add

pytestmark = pytest.mark.anyio

LEGACY_VERSION = "2025-06-18"
STATELESS_VERSION = "2026-07-28"  # the per-request protocol: no handshake, no session
ACCEPT = {"Accept": "application/json, text/event-stream"}
MCP_SESSION = "Mcp-Session-Id"
CAP = 3


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rpc_body(method: str, params: dict[str, Any] | None = None, rid: int = 2) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a POST: a JSON body, or the last `data:` of an event stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        body: dict[str, Any] = response.json()
        return body
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    answer: dict[str, Any] = json.loads(data[-1])
    return answer


class RawSession:
    """One streamable HTTP session spoken by hand, to know and reuse its id."""

    def __init__(self, http: httpx2.AsyncClient, server: TeamServer, token: str) -> None:
        self.http, self.server, self.token = http, server, token
        self.id = ""

    async def post(self, body: dict[str, Any], session: str | None = None) -> httpx2.Response:
        headers = {**ACCEPT, **bearer(self.token), "MCP-Protocol-Version": LEGACY_VERSION}
        if session or self.id:
            headers["Mcp-Session-Id"] = session or self.id
        return await self.http.post(f"{self.server.base}/mcp", json=body, headers=headers)

    async def open(self) -> str:
        opened = await self.post(initialize_request("raw"))
        assert opened.status_code == 200, opened.text
        self.id = opened.headers["mcp-session-id"]
        done = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text
        return self.id

    @asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        """The session's GET stream held open, as the SDK's client holds it: the session is
        not idle while it is."""
        headers = {
            **ACCEPT,
            **bearer(self.token),
            "MCP-Protocol-Version": LEGACY_VERSION,
            MCP_SESSION: self.id,
        }
        async with self.http.stream("GET", f"{self.server.base}/mcp", headers=headers) as stream:
            assert stream.status_code == 200, await stream.aread()
            yield

    async def ping(self) -> int:
        return (await self.post(rpc_body("ping"))).status_code

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        answered = await self.post(rpc_body("tools/call", {"name": name, "arguments": arguments}))
        assert answered.status_code == 200, answered.text
        result: dict[str, Any] = answer_of(answered)["result"]
        return result


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TeamServer, dict[str, str]]]:
    """Streamable HTTP with a cap of CAP sessions per agent and 3 idle seconds."""
    tmp = tmp_path_factory.mktemp("sessions")
    db = tmp / "team.db"
    tokens = {agent: token_add(db, agent) for agent in ("w1", "w2")}
    tokens["w1-second"] = token_add(db, "w1", another=True)  # the same agent's second
    args = ("--max-sessions-per-agent", str(CAP), "--session-idle-seconds", "3")
    with running(tmp, "streamable-http", db, *args) as server:
        yield server, tokens


async def test_an_agent_over_its_cap_closes_its_own_oldest_idle_sessions(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, tokens = team
    async with httpx2.AsyncClient(timeout=60) as http:
        other = RawSession(http, server, tokens["w1-second"])  # same agent, another token
        await other.open()
        sessions = [RawSession(http, server, tokens["w1"]) for _ in range(CAP + 2)]
        for session in sessions:  # none holds a GET stream: each is idle between requests
            await session.open()
        answers = [await session.ping() for session in sessions]
        assert answers == [404, 404] + [200] * CAP, "the three oldest were closed, none refused"
        assert await other.ping() == 404, "the agent's cap counts every token of it"
        borrowed = await other.post(rpc_body("ping"), session=sessions[-1].id)
        assert borrowed.status_code == 404, "a session answers only the token that opened it"
        async with server.client(tokens["w2"]) as client:  # another agent: the SDK's client
            found = await call(client, "memory-search", query="anything")
        assert found["results"] == []


async def test_an_agent_whose_sessions_are_all_busy_is_refused_with_the_limit_named(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, tokens = team
    async with httpx2.AsyncClient(timeout=60) as http, AsyncExitStack() as held:
        busy = [RawSession(http, server, tokens[t]) for t in ("w1", "w1-second", "w1")]
        for session in busy:
            await session.open()
            await held.enter_async_context(session.listening())
        refused = await RawSession(http, server, tokens["w1-second"]).post(
            initialize_request("one too many")
        )
        assert refused.status_code == 429
        message = answer_of(refused)["error"]["message"]
        assert f"'w1' has {CAP} MCP sessions open" in message
        assert "--max-sessions-per-agent" in message
        assert [await session.ping() for session in busy] == [200] * CAP, "none was closed"
        another = RawSession(http, server, tokens["w2"])
        await another.open()  # another agent is not refused
        assert await another.ping() == 200
        await held.aclose()  # the GET streams end: those sessions are idle once the server sees it
        again = RawSession(http, server, tokens["w1"])
        deadline = time.monotonic() + 30
        while (await again.post(initialize_request("again"))).status_code == 429:
            assert time.monotonic() < deadline, "the ended streams still count"
            await anyio.sleep(0.2)
        pings = [await session.ping() for session in busy]
        assert sorted(pings) == [200, 200, 404], "an idle one made room"


async def test_a_cap_of_one_keeps_the_newest_session(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    token = token_add(db, "w1")
    with running(tmp_path, "streamable-http", db, "--max-sessions-per-agent", "1") as server:
        async with httpx2.AsyncClient(timeout=60) as http:
            sessions = [RawSession(http, server, token) for _ in range(4)]
            for session in sessions:
                await session.open()
            assert [await session.ping() for session in sessions] == [404, 404, 404, 200]


async def test_an_idle_session_is_closed(team: tuple[TeamServer, dict[str, str]]) -> None:
    server, tokens = team
    async with httpx2.AsyncClient(timeout=60) as http:
        session = RawSession(http, server, tokens["w2"])
        await session.open()
        assert await session.ping() == 200
        deadline = time.monotonic() + 60  # 3 idle seconds; a busy machine may be slow
        while await session.ping() == 200:
            assert time.monotonic() < deadline, "the idle session stayed open"
            await anyio.sleep(4)
        assert await session.ping() == 404


async def test_a_session_header_on_a_stateless_request_names_no_session(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    """The SDK checks `Mcp-Session-Id` only on the handshake protocol's requests; a
    request of the stateless protocol carrying one must not act in that session."""
    server, tokens = team
    async with httpx2.AsyncClient(timeout=60) as http:
        owner = RawSession(http, server, tokens["w1"])
        await owner.open()
        stored = await owner.tool(
            "store_memory", key="session.secret", value="only this session", scope="session"
        )
        memory_id = stored["structuredContent"]["id"]
        mine = await owner.tool("memory-get", id=memory_id)
        assert mine["structuredContent"]["value"] == "only this session"
        headers = {**bearer(tokens["w1"]), "Mcp-Session-Id": owner.id}
        async with create_mcp_http_client(headers=headers) as named:
            transport = streamable_http_client(server.url, http_client=named)
            async with Client(transport, mode=STATELESS_VERSION) as client:
                answer = await client.call_tool("memory-get", {"id": memory_id})
    assert answer.is_error
    assert "not found" in str(answer.content)


async def test_shutdown_is_quick_with_many_sessions_open(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    token = token_add(db, "w1")
    with running(tmp_path, "streamable-http", db, "--max-sessions-per-agent", "64") as server:
        server.wait_healthy()
        async with httpx2.AsyncClient(timeout=60) as http, AsyncExitStack() as streams:
            for _ in range(50):  # each holds its GET stream open, as the SDK's client does
                session = RawSession(http, server, token)
                await session.open()
                await streams.enter_async_context(session.listening())
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            while server.process.poll() is None and time.monotonic() - started < 60:
                await anyio.sleep(0.05)
            took = time.monotonic() - started
            streams.pop_all()  # the server is gone: nothing left to close
    assert server.process.poll() is not None
    # The grace (SHUTDOWN_GRACE_SECONDS, 5 s) and the exit; never the streams' end, which
    # would reach the 60 s cap above. 10 s left a loaded machine 5 s to close 50 sessions
    # and the store: too tight under `make test`.
    assert took < 30, f"SIGTERM with 50 sessions open took {took:.1f} s"


# -- SSE: a message acts in the session of the connection it is routed to --------------------


class SseConnection:
    """One SSE connection spoken by hand: its event stream, and POSTs to its endpoint."""

    def __init__(self, http: httpx2.AsyncClient, lines: AsyncIterator[str], endpoint: str) -> None:
        self.http, self.lines, self.endpoint = http, lines, endpoint

    @property
    def session_id(self) -> str:
        return self.endpoint.split("session_id=", 1)[1]

    async def _answer(self, rid: int) -> dict[str, Any]:
        with anyio.fail_after(120):
            async for line in self.lines:
                if line.startswith("data:"):
                    message: dict[str, Any] = json.loads(line[5:])
                    if message.get("id") == rid:
                        return message
        raise AssertionError("the event stream ended without an answer")

    async def request(
        self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        rid = int(time.monotonic_ns() % 1_000_000_000)
        posted = await self.http.post(
            self.endpoint, json=rpc_body(method, params, rid), headers=headers or {}
        )
        assert posted.status_code == 202, posted.text
        return await self._answer(rid)

    async def tool(self, name: str, headers: dict[str, str] | None = None, **args: Any) -> Any:
        answer = await self.request("tools/call", {"name": name, "arguments": args}, headers)
        return answer["result"]


@asynccontextmanager
async def sse_connection(server: TeamServer, token: str) -> AsyncIterator[SseConnection]:
    async with (
        httpx2.AsyncClient(base_url=server.base, headers=bearer(token), timeout=60) as http,
        http.stream("GET", "/sse") as stream,
    ):
        lines = stream.aiter_lines()
        endpoint = ""
        async for line in lines:
            if line.startswith("data:"):
                endpoint = line[5:].strip()
                break
        connection = SseConnection(http, lines, endpoint)
        await connection.request("initialize", initialize_request("raw")["params"])
        await http.post(endpoint, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield connection


async def test_on_sse_a_session_header_cannot_switch_the_connections_session(
    tmp_path: Path,
) -> None:
    db = tmp_path / "team.db"
    token = token_add(db, "w1")
    with running(tmp_path, "sse", db) as server:
        async with sse_connection(server, token) as first, sse_connection(server, token) as second:
            stored = await first.tool(
                "store_memory", key="sse.secret", value="first connection only", scope="session"
            )
            memory_id = stored["structuredContent"]["id"]
            mine = await first.tool("memory-get", id=memory_id)
            switched = await second.tool(
                "memory-get", headers={"Mcp-Session-Id": first.session_id}, id=memory_id
            )
            plain = await second.tool("memory-get", id=memory_id)
    assert mine["structuredContent"]["value"] == "first connection only"
    assert switched["isError"] and "not found" in json.dumps(switched["content"])
    assert plain["isError"]
