"""The team server over real HTTP on 127.0.0.1: `memory-mcp serve --transport
streamable-http|sse` spawned as a process, tokens from the real `memory-mcp token add`,
the SDK's own clients. Identity comes from the token only.

One server per variant serves every test of the module, each test with its own keys or
agents. The variants: each transport on SQLite (the transport's own code: its routes,
its 401s, its session being the connection) and PostgreSQL on streamable HTTP (the
store's own SQL: tokens, visibility, search, the restart). SSE on PostgreSQL would run
the same SSE code above the same SQL again."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.conftest import (
    BOTH_BACKENDS,
    call,
    call_error,
    initialize_request,
    pg_query,
    store_db,
)
from tests.http.team_server import (
    EXE,
    TeamServer,
    cli,
    restart,
    running,
    server_env,
    stored_keys,
    token_add,
    token_revoke,
)

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]
WORD = "quokka"


VARIANTS = [("streamable-http", "sqlite"), ("sse", "sqlite"), ("streamable-http", "postgresql")]


@pytest.fixture(scope="module", params=VARIANTS, ids=lambda p: "-".join(p))
def team(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TeamServer, dict[str, str]]]:
    """One server per transport and store, with tokens for two workers and a lead."""
    transport, backend = request.param
    tmp = tmp_path_factory.mktemp(f"team-{transport}")
    with store_db(backend, tmp, request) as db:
        tokens = {"w1": token_add(db, "w1", home=tmp), "w2": token_add(db, "w2", home=tmp)}
        tokens["lead"] = token_add(db, "lead", "lead", home=tmp)
        with running(tmp, transport, db) as server:
            yield server, tokens


def post_mcp(server: TeamServer, headers: dict[str, str]) -> httpx2.Response:
    """An initialize request to the MCP endpoint (SSE: its message endpoint)."""
    body = initialize_request("raw")
    path = "/messages/?session_id=0123456789abcdef" if server.transport == "sse" else "/mcp"
    return httpx2.post(
        f"{server.base}{path}",
        json=body,
        headers={"Accept": "application/json, text/event-stream", **headers},
        timeout=30,
    )


BAD_HEADERS = {
    "no header": {},
    "wrong token": {"Authorization": "Bearer mmcp_not-a-token-anyone-was-given"},
    "not bearer": {"Authorization": "Basic dzE6cGFzc3dvcmQ="},
    "a revoked-looking token": {"Authorization": "Bearer mmcp_"},
}


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_a_request_without_a_valid_token_gets_401(
    team: tuple[TeamServer, dict[str, str]], case: str
) -> None:
    server, _ = team
    assert post_mcp(server, BAD_HEADERS[case]).status_code == 401


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_the_event_stream_without_a_valid_token_gets_401(
    team: tuple[TeamServer, dict[str, str]], case: str
) -> None:
    """GET /sse (SSE) or GET /mcp (streamable HTTP's server-to-client stream)."""
    server, _ = team
    headers = {"Accept": "text/event-stream", **BAD_HEADERS[case]}
    assert httpx2.get(server.url, headers=headers, timeout=30).status_code == 401


def test_a_401_carries_nothing_but_the_refusal(team: tuple[TeamServer, dict[str, str]]) -> None:
    server, _ = team
    assert post_mcp(server, {}).json() == {
        "error": "invalid_token",
        "error_description": "Authentication required",
    }


def test_healthz_needs_no_token_and_says_store_and_model_are_up(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, _ = team
    assert server.wait_healthy() == {"store": "up", "model": "up", "version": "0.1.0"}


def test_the_host_header_check_stays_on(team: tuple[TeamServer, dict[str, str]]) -> None:
    """DNS rebinding: a valid token from a page that reached us under another name."""
    server, tokens = team
    headers = {"Authorization": f"Bearer {tokens['w1']}", "Host": "evil.example:80"}
    assert post_mcp(server, headers).status_code == 421


async def test_each_agent_sees_exactly_what_its_scopes_allow(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, tokens = team
    seen: dict[str, set[str]] = {}
    for agent in ("w1", "w2", "lead"):
        async with server.client(tokens[agent]) as client:
            for scope in ("session", "agent", "swarm"):
                key = f"scopes.{agent}.{scope}"
                await call(client, "store_memory", key=key, value=f"{WORD} {key}", scope=scope)
    for agent in ("w1", "w2", "lead"):
        async with server.client(tokens[agent]) as client:  # a new connection: a new session
            found = await call(client, "memory-search", query=WORD, limit=50)
            seen[agent] = {r["key"] for r in found["results"] if r["key"].startswith("scopes.")}
    assert seen == {
        agent: {f"scopes.{agent}.agent"} | {f"scopes.{a}.swarm" for a in ("w1", "w2", "lead")}
        for agent in ("w1", "w2", "lead")
    }


async def test_the_token_decides_the_owner(team: tuple[TeamServer, dict[str, str]]) -> None:
    server, tokens = team
    async with server.client(tokens["w2"]) as client:
        stored = await call(client, "store_memory", key="owner.check", value=f"{WORD} owner")
    assert stored["agent_id"] == "w2"


async def test_the_session_scope_is_the_mcp_session(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, tokens = team
    async with server.client(tokens["w1"]) as first, server.client(tokens["w1"]) as second:
        stored = await call(first, "store_memory", key="s.note", value="wombat", scope="session")
        in_first = await call(first, "memory-get", id=stored["id"])
        missing = await call_error(second, "memory-get", id=stored["id"])
    assert in_first["value"] == "wombat"
    assert "not found" in missing


async def test_a_lead_injects_a_learning_a_worker_finds(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, tokens = team
    lesson = f"Run the migrations before the API tests ({server.transport})"
    async with server.client(tokens["lead"]) as lead:
        injected = await call(
            lead,
            "inject-learning",
            learning=lesson,
            category="mistake-pattern",
            agent_id="w2",
        )
    async with server.client(tokens["w2"]) as worker:
        found = await call(worker, "memory-search", query="migrations before the API tests")
    assert injected["id"] in [r["id"] for r in found["results"]]


async def test_a_worker_token_cannot_inject(team: tuple[TeamServer, dict[str, str]]) -> None:
    server, tokens = team
    async with server.client(tokens["w1"]) as worker:
        error = await call_error(
            worker, "inject-learning", learning="I am the lead now", category="preference"
        )
    assert "lead" in error


async def test_a_revoked_token_is_refused_at_once(
    team: tuple[TeamServer, dict[str, str]],
) -> None:
    server, _ = team
    token = token_add(server.db, f"leaver-{server.transport}", home=server.tmp)  # server runs
    headers = {"Authorization": f"Bearer {token}"}
    async with server.client(token) as client:
        await call(client, "store_memory", key="before", value="still allowed")
        token_revoke(server.db, f"leaver-{server.transport}", home=server.tmp)
        # Streamable HTTP raises the 401 at once; the SDK's SSE client only logs the 401 of
        # its POST and waits for an answer that never comes: a short wait stands for it
        # (the 120 s default would be idle time), and the store below says nothing was written.
        with pytest.raises(Exception):  # noqa: B017 - the transport's own error, any kind
            await client.call_tool(
                "store_memory", {"key": "after", "value": "refused"}, read_timeout_seconds=10
            )
    assert post_mcp(server, headers).status_code == 401
    stored = await stored_keys(server.db)
    assert "before" in stored
    assert "after" not in stored


def test_token_list_shows_agents_never_tokens(team: tuple[TeamServer, dict[str, str]]) -> None:
    """`token list` run in this process (`cli`): the README test runs it as a process."""
    server, tokens = team
    listing = cli(["token", "list", "--db", str(server.db)], server.tmp)
    assert "lead\tlead\t" in listing
    assert not [t for t in tokens.values() if t in listing]


def test_only_a_hash_of_a_token_is_stored(
    team: tuple[TeamServer, dict[str, str]], request: pytest.FixtureRequest
) -> None:
    server, tokens = team
    if "://" in str(server.db):  # every token row, as text
        rows = pg_query(request.getfixturevalue("pg_server"), str(server.db), "TABLE agent_tokens;")
        stored = rows.encode()
        assert "lead" in rows  # the table was read
    else:  # the file and its WAL, as bytes
        stored = b"".join(p.read_bytes() for p in server.tmp.glob("memory.db*"))
    assert not [t for t in tokens.values() if t.encode() in stored]


async def test_data_survives_a_restart(team: tuple[TeamServer, dict[str, str]]) -> None:
    """The module's server stopped and started again on its store (a new process, a new
    port): what it stored is there, and the tests after this one use the new process."""
    server, tokens = team
    async with server.client(tokens["w1"]) as client:
        stored = await call(client, "store_memory", key="durable", value="kept across runs")
    before = server.process.pid
    restart(server)
    assert server.process.pid != before
    async with server.client(tokens["w1"]) as client:
        again = await call(client, "memory-get", id=stored["id"])
    assert again["value"] == "kept across runs"


def test_listening_beyond_loopback_without_tokens_is_refused(tmp_path: Path, db_url: str) -> None:
    done = subprocess.run(
        [EXE, "serve", "--transport", "streamable-http", "--host", "0.0.0.0", "--port", "1"]
        + ["--db", db_url],
        capture_output=True,
        text=True,
        env=server_env(tmp_path),
        timeout=120,
    )
    assert done.returncode == 1
    assert "refusing to listen on 0.0.0.0: the store has no tokens" in done.stderr
