"""The whole OAuth flow against a real `memory-mcp serve --oauth` on 127.0.0.1, driven by
an OAuth client nobody here wrote, the MCP SDK's `OAuthClientProvider`: it finds the
protected resource metadata and the authorization server's, registers itself, sends the
person to the sign-in page (played over HTTP: a real GET, a real form post with the
page's cookie and Origin), exchanges the code with its PKCE verifier, calls tools,
refreshes, and is refused once its grant is revoked. Bearer tokens keep working beside it.
The attacks are in test_oauth_attacks.py, a real Chromium in
tests/web/test_authorize_browser.py.

The tests share the file's `--oauth` servers (`Sites`: one per transport on SQLite, and
streamable HTTP on PostgreSQL for the store's own SQL), each test with agents of its own:
what one test revokes or signs in to is no other's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mcp.client.auth import OAuthClientProvider

from tests.conftest import BOTH_BACKENDS, call, pg_query, store_db
from tests.http.oauth_client import (
    HttpBrowser,
    MemoryTokenStorage,
    RawClient,
    client_metadata,
    mcp_status,
    oauth_connection,
    register,
    sdk_client_auth,
    tokens_for,
)
from tests.http.team_server import (
    TRANSPORTS,
    TeamServer,
    cli_output,
    running,
    token_add,
    token_revoke,
)

pytestmark = pytest.mark.anyio


@dataclass
class Sites:
    """The file's `--oauth` servers, each started when a test first asks for it (by
    transport and store) and shared by the tests after it."""

    tmp: Path
    stack: ExitStack
    request: pytest.FixtureRequest
    started: dict[tuple[str, str], TeamServer] = field(default_factory=dict)

    def __call__(self, transport: str = "streamable-http", backend: str = "sqlite") -> TeamServer:
        key = (transport, backend)
        if key not in self.started:
            folder = self.tmp / "-".join(key)
            folder.mkdir()
            db = self.stack.enter_context(store_db(backend, folder, self.request))
            server = running(folder, transport, db, "--oauth")
            self.started[key] = self.stack.enter_context(server)
        return self.started[key]


@pytest.fixture(scope="module")
def sites(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sites]:
    with ExitStack() as stack:
        yield Sites(tmp_path_factory.mktemp("oauth-flow"), stack, request)


def agent_token(server: TeamServer, agent: str, role: str = "worker") -> str:
    """A bearer token for `agent` (the real CLI) on `server`'s store."""
    return token_add(server.db, agent, role, home=server.tmp)


class AskedToSignInAgain(Exception):
    """The client had to send the person back to the sign-in page: its tokens were refused."""


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_sdk_client_signs_in_calls_tools_refreshes_and_is_refused_after_revoking(
    sites: Sites, transport: str
) -> None:
    server = sites(transport)
    token = agent_token(server, "w1")
    storage = MemoryTokenStorage()
    browser = HttpBrowser(token)
    auth = sdk_client_auth(server, browser, storage)
    async with oauth_connection(server, auth) as client:
        # registered by DCR, signed in once on the page, exchanged with PKCE
        assert storage.client_info is not None and storage.client_info.client_secret
        assert len(browser.returned) == 1
        assert browser.returned[0]["iss"] == server.base  # RFC 9207, as the metadata
        first = storage.tokens
        assert first is not None and first.access_token.startswith("mmcp_at_")
        stored = await call(client, "store_memory", key="oauth-note", value="via OAuth")
        assert stored["agent_id"] == "w1"  # the bearer token's agent, exactly
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "memory-search" in tools and "inject-learning" not in tools  # worker

        auth.context.token_expiry_time = 1.0  # the client thinks its token expired
        got = await call(client, "memory-get", id=stored["id"])  # same MCP session
        assert got["value"] == "via OAuth"
        second = storage.tokens
        assert second is not None and first.refresh_token is not None
        assert second.access_token != first.access_token  # both rotated
        assert second.refresh_token not in (None, first.refresh_token)
        assert len(browser.returned) == 1  # no second sign-in

        # the bearer token works beside it, as Claude Code and the hooks use it
        async with server.client(token) as bearer:
            assert (await call(bearer, "memory-get", id=stored["id"]))["agent_id"] == "w1"

    # the client revokes its token (RFC 7009): the whole grant ends
    info = storage.client_info
    assert info.client_id is not None and info.client_secret is not None
    same_client = RawClient(server.base, server.url, info.client_id, info.client_secret, "")
    assert same_client.revoke(second.access_token).status_code == 200
    if transport == "streamable-http":
        assert mcp_status(server, second.access_token).status_code == 401
    assert second.refresh_token is not None
    again = same_client.refresh(second.refresh_token)
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")

    asked: list[str] = []

    async def sign_in_again(url: str) -> None:
        asked.append(url)
        raise AskedToSignInAgain

    auth.context.redirect_handler = sign_in_again
    # (streamable HTTP's transport raises it from its task group)
    with pytest.raises((AskedToSignInAgain, BaseExceptionGroup)) as refused:
        async with oauth_connection(server, auth) as client:
            await call(client, "memory-get", id=stored["id"])
    if isinstance(refused.value, BaseExceptionGroup):
        assert refused.group_contains(AskedToSignInAgain, depth=None)
    assert len(asked) == 1 and "/authorize?" in asked[0]


async def test_a_public_client_without_a_secret_signs_in_with_pkce_alone(sites: Sites) -> None:
    """As a connector registers: token_endpoint_auth_method "none", no client secret."""
    server = sites()
    token = agent_token(server, "public-1")
    storage, browser = MemoryTokenStorage(), HttpBrowser(token)
    auth = OAuthClientProvider(
        server.url,
        client_metadata(token_endpoint_auth_method="none"),
        storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    async with oauth_connection(server, auth) as client:
        stored = await call(client, "store_memory", key="k", value="public client")
        assert stored["agent_id"] == "public-1"
    assert storage.client_info is not None and storage.client_info.client_secret is None


async def test_token_revoke_ends_the_agents_oauth_grants_at_the_next_request(
    sites: Sites,
) -> None:
    server = sites()
    token, other = agent_token(server, "leaver"), agent_token(server, "stayer")
    client = register(server)
    issued, kept = tokens_for(client, token), tokens_for(client, other)
    assert mcp_status(server, issued["access_token"]).status_code == 200
    token_revoke(server.db, "leaver", home=server.tmp)  # the real CLI, not the server
    refused = mcp_status(server, issued["access_token"])
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    again = client.refresh(issued["refresh_token"])
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")
    assert mcp_status(server, kept["access_token"]).status_code == 200  # its agent's only


async def test_a_one_time_code_signs_in_once_as_its_agent_and_role(sites: Sites) -> None:
    """`token add --oauth-code` in this process (`cli_output`): the README test runs it as
    a process."""
    server = sites()
    argv = ["token", "add", "lead-1", "--role", "lead", "--oauth-code", "--db", str(server.db)]
    out, err = cli_output(argv, server.tmp)
    code = out.strip().splitlines()[-1]
    assert code.startswith("mmcp_otc_") and "once" in err
    storage = MemoryTokenStorage()
    auth = sdk_client_auth(server, HttpBrowser(code), storage)
    async with oauth_connection(server, auth) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "inject-learning" in tools  # the lead's tool: the code's role
        stored = await call(client, "store_memory", key="k", value="v", scope="swarm")
        assert stored["agent_id"] == "lead-1"
    with pytest.raises(AssertionError, match="not valid"):  # the page refuses it now
        await HttpBrowser(code).open(register(server).authorize_url("x" * 43, "s"))


@BOTH_BACKENDS
def test_oauth_secrets_are_stored_hashed(
    sites: Sites, db_backend: str, request: pytest.FixtureRequest
) -> None:
    """Read while the server runs (SQLite: the file, its WAL and shared memory), with what
    the file's other tests issued on that store too. Not a coroutine: a PostgreSQL
    server's first start runs its own event loop."""
    server = sites("streamable-http", db_backend)
    token = agent_token(server, "hasher")
    client = register(server)
    issued = tokens_for(client, token)
    secrets = [issued["access_token"], issued["refresh_token"]]
    rotated = client.refresh(issued["refresh_token"]).json()
    secrets += [rotated["access_token"], rotated["refresh_token"]]
    assert mcp_status(server, rotated["access_token"]).status_code == 200
    stored = _every_stored_byte(server, request)
    assert [s for s in secrets if s.encode() in stored] == []
    assert b"mmcp_at_" not in stored and b"mmcp_rt_" not in stored


def _every_stored_byte(server: TeamServer, request: pytest.FixtureRequest) -> bytes:
    if "://" in str(server.db):
        pg = request.getfixturevalue("pg_server")
        tables = ("oauth_tokens", "oauth_codes", "oauth_grants", "oauth_requests")
        text = "".join(pg_query(pg, str(server.db), f"TABLE {table};") for table in tables)
        assert "refresh" in text  # the rows were read
        return text.encode()
    return b"".join(p.read_bytes() for p in server.tmp.glob("memory.db*"))
