"""OAuth grants on a real store, SQLite and PostgreSQL: codes and refresh tokens work once
(also when two requests race), a second use ends the grant, lifetimes hold (the clock is
driven, not slept past), revoking an agent or the bearer token a person signed in with
ends its grants, registration stays bounded, and the store keeps no secret in the clear.
The HTTP flow with the SDK's client is tests/http/test_oauth_flow.py."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from memory_mcp.app.context import AppContext
from memory_mcp.auth import oauth as oauth_grants
from memory_mcp.auth.oauth import (
    CLIENT_UNUSED_SECONDS,
    CODE_SECONDS,
    LOGIN_CODE_SECONDS,
    REQUEST_SECONDS,
    AuthorizationRequest,
    IssuedTokens,
    OAuthGrants,
    redirect_to,
    redirect_uri_problem,
)
from memory_mcp.models import Role
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, SQLITE_ONLY, opened
from tests.store.test_store_migration import build_old_store

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]

ISSUER = "https://memory.example.com"
RESOURCE = ISSUER + "/mcp"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def app(make_settings: Callable[..., Settings]) -> AsyncIterator[AppContext]:
    async with opened(make_settings(watch=False)) as opened_app:
        yield opened_app


@pytest.fixture
def clock(app: AppContext) -> Clock:
    ticking = Clock()
    app.oauth.clock = ticking
    return ticking


def request(client_id: str = "client-1", state: str | None = "st&te=1") -> AuthorizationRequest:
    return AuthorizationRequest(
        client_id=client_id,
        redirect_uri="https://claude.ai/api/mcp/auth_callback?x=1",
        redirect_uri_explicit=True,
        code_challenge="c" * 43,
        state=state,
        scopes=(),
        resource=RESOURCE,
    )


async def signed_in_code(oauth: OAuthGrants, credential: str) -> str:
    """A person signs in on a waiting request: the code the browser brings back."""
    request_id = await oauth.open_request(request())
    who = await oauth.sign_in(credential)
    assert who is not None
    back = await oauth.approve(request_id, who, ISSUER)
    assert back is not None
    return back.split("code=", 1)[1].split("&", 1)[0]


async def test_a_sign_in_with_a_token_acts_as_its_agent_and_role(
    app: AppContext, clock: Clock
) -> None:
    lead = await app.tokens.issue("boss", "lead")
    request_id = await app.oauth.open_request(request())
    who = await app.oauth.sign_in(lead)
    assert who is not None and (who.agent_id, who.role) == ("boss", Role.LEAD)
    back = await app.oauth.approve(request_id, who, ISSUER)
    assert back is not None
    # the client's own query kept; state exactly as sent; this server's iss (RFC 9207)
    assert back.startswith("https://claude.ai/api/mcp/auth_callback?x=1&code=mmcp_ac_")
    assert back.endswith("&state=st%26te%3D1&iss=https%3A%2F%2Fmemory.example.com")
    code = back.split("code=", 1)[1].split("&", 1)[0]
    issued = await app.oauth.exchange_code(code)
    assert issued is not None
    grant = await app.oauth.access_token(issued.access_token)
    assert grant is not None
    assert (grant.agent_id, grant.role, grant.client_id) == ("boss", Role.LEAD, "client-1")
    assert grant.expires_at == clock.now + app.oauth.access_seconds


async def test_a_request_is_answered_once(app: AppContext, clock: Clock) -> None:
    token = await app.tokens.issue("w1")
    request_id = await app.oauth.open_request(request())
    who = await app.oauth.sign_in(token)
    assert who is not None
    assert await app.oauth.approve(request_id, who, ISSUER) is not None
    assert await app.oauth.approve(request_id, who, ISSUER) is None
    assert await app.oauth.pending(request_id) is None


async def test_a_request_waits_for_its_person_only_so_long(app: AppContext, clock: Clock) -> None:
    token = await app.tokens.issue("w1")
    request_id = await app.oauth.open_request(request())
    clock.now += REQUEST_SECONDS
    who = await app.oauth.sign_in(token)
    assert who is not None
    assert await app.oauth.pending(request_id) is None
    assert await app.oauth.approve(request_id, who, ISSUER) is None


async def test_a_denied_request_goes_back_with_access_denied(app: AppContext) -> None:
    request_id = await app.oauth.open_request(request())
    back = await app.oauth.deny(request_id, ISSUER)
    assert back is not None and "error=access_denied" in back and "state=st%26te%3D1" in back
    assert await app.oauth.pending(request_id) is None


async def test_a_code_works_once_even_when_two_exchanges_race(
    app: AppContext, clock: Clock
) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    results: list[object] = []

    async def exchange() -> None:
        results.append(await app.oauth.exchange_code(code))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(exchange)
        tasks.start_soon(exchange)
    winners = [r for r in results if r is not None]
    assert len(winners) == 1 and results.count(None) == 1


async def test_a_code_used_again_ends_the_grant_it_made(app: AppContext, clock: Clock) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    issued = await app.oauth.exchange_code(code)
    assert issued is not None and await app.oauth.access_token(issued.access_token) is not None
    assert await app.oauth.code(code) is None  # the second use is refused...
    assert await app.oauth.access_token(issued.access_token) is None  # ...and ends the grant
    assert await app.oauth.refresh_token(issued.refresh_token) is None


async def test_a_code_expires(app: AppContext, clock: Clock) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    clock.now += CODE_SECONDS
    assert await app.oauth.exchange_code(code) is None


async def test_a_refresh_rotates_both_tokens_and_works_once(app: AppContext, clock: Clock) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    first = await app.oauth.exchange_code(code)
    assert first is not None
    results: list[IssuedTokens | None] = []

    async def rotate() -> None:
        results.append(await app.oauth.rotate(first.refresh_token))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(rotate)
        tasks.start_soon(rotate)
    second = [r for r in results if r is not None]
    assert len(second) == 1 and results.count(None) == 1
    new = second[0]
    assert new.access_token != first.access_token and new.refresh_token != first.refresh_token
    old_grant = await app.oauth.access_token(first.access_token)
    new_grant = await app.oauth.access_token(new.access_token)
    assert old_grant is not None and new_grant is not None
    assert old_grant.subject == new_grant.subject  # one grant: its MCP sessions carry on


async def test_a_used_refresh_token_presented_again_ends_the_grant(
    app: AppContext, clock: Clock
) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    first = await app.oauth.exchange_code(code)
    assert first is not None
    second = await app.oauth.rotate(first.refresh_token)
    assert second is not None
    assert await app.oauth.refresh_token(first.refresh_token) is None  # a copy is about
    assert await app.oauth.access_token(second.access_token) is None
    assert await app.oauth.rotate(second.refresh_token) is None


async def test_an_access_token_expires(app: AppContext, clock: Clock) -> None:
    code = await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    issued = await app.oauth.exchange_code(code)
    assert issued is not None
    clock.now += app.oauth.access_seconds
    assert await app.oauth.access_token(issued.access_token) is None
    assert await app.oauth.rotate(issued.refresh_token) is not None  # the refresh still works


async def test_revoking_the_agent_ends_its_grants_codes_and_sign_in_codes(
    app: AppContext, clock: Clock
) -> None:
    token = await app.tokens.issue("w1")
    other = await app.tokens.issue("w2")
    issued = await app.oauth.exchange_code(await signed_in_code(app.oauth, token))
    kept = await app.oauth.exchange_code(await signed_in_code(app.oauth, other))
    waiting = await signed_in_code(app.oauth, token)  # a code not exchanged yet
    one_time = await app.oauth.add_login_code("w1")
    assert issued is not None and kept is not None
    assert await app.oauth.revoke_agent("w1") == 3  # a grant, a code, a one-time code
    assert await app.oauth.access_token(issued.access_token) is None
    assert await app.oauth.rotate(issued.refresh_token) is None
    assert await app.oauth.exchange_code(waiting) is None
    assert await app.oauth.sign_in(one_time) is None
    assert await app.oauth.access_token(kept.access_token) is not None  # w2 untouched


async def test_a_grant_lasts_only_while_the_token_it_was_signed_in_with(
    app: AppContext, clock: Clock
) -> None:
    token = await app.tokens.issue("w1")
    issued = await app.oauth.exchange_code(await signed_in_code(app.oauth, token))
    assert issued is not None
    await app.tokens.revoke("w1")  # the bearer tokens only: not the OAuth grants
    assert await app.oauth.access_token(issued.access_token) is None
    assert await app.oauth.rotate(issued.refresh_token) is None


async def test_revoking_one_token_by_id_ends_the_grants_made_with_it_only(
    app: AppContext, clock: Clock
) -> None:
    first, second = await app.tokens.issue("w1"), await app.tokens.issue("w1")
    by_first = await app.oauth.exchange_code(await signed_in_code(app.oauth, first))
    by_second = await app.oauth.exchange_code(await signed_in_code(app.oauth, second))
    assert by_first is not None and by_second is not None
    first_id = min(row.id for row in await app.tokens.listing())  # issued first
    assert await app.tokens.revoke_one(first_id)  # `token revoke --id`
    assert await app.oauth.access_token(by_first.access_token) is None
    assert await app.oauth.access_token(by_second.access_token) is not None


async def test_a_one_time_code_signs_in_once_and_expires(app: AppContext, clock: Clock) -> None:
    code = await app.oauth.add_login_code("w3", "lead")
    who = await app.oauth.sign_in(code)
    assert who is not None and (who.agent_id, who.role, who.agent_token_hash) == (
        "w3",
        Role.LEAD,
        None,
    )
    assert await app.oauth.sign_in(code) is None
    late = await app.oauth.add_login_code("w3")
    clock.now += LOGIN_CODE_SECONDS
    assert await app.oauth.sign_in(late) is None


async def test_an_oauth_token_cannot_sign_in(app: AppContext, clock: Clock) -> None:
    issued = await app.oauth.exchange_code(
        await signed_in_code(app.oauth, await app.tokens.issue("w1"))
    )
    assert issued is not None
    assert await app.oauth.sign_in(issued.access_token) is None
    assert await app.oauth.sign_in(issued.refresh_token) is None


async def test_clients_that_never_get_a_grant_do_not_pile_up(app: AppContext, clock: Clock) -> None:
    await app.oauth.register_client("used", "{}", "used")
    await app.oauth.exchange_code(
        await signed_in_code_for(app.oauth, "used", await app.tokens.issue("w1"))
    )
    await app.oauth.register_client("idle", "{}", None)
    clock.now += CLIENT_UNUSED_SECONDS + 1
    await app.oauth.register_client("new", "{}", None)
    assert await app.oauth.client("idle") is None
    assert await app.oauth.client("used") == "{}"  # it has a grant
    assert await app.oauth.client("new") == "{}"


async def test_a_client_in_the_middle_of_signing_in_is_never_dropped(
    app: AppContext, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registration is open: a flood of registrations must not cost a person who is
    signing in their sign-in (issue 35: `/token` answered `invalid_client`)."""
    monkeypatch.setattr(oauth_grants, "MAX_UNUSED_CLIENTS", 3)
    token = await app.tokens.issue("w1")
    for client_id in ("waiting", "approved", "idle"):
        await app.oauth.register_client(client_id, "{}", None)
    clock.now += 300
    waiting = await app.oauth.open_request(request("waiting"))  # a person on the page
    answered = await app.oauth.open_request(request("approved"))
    clock.now += 350  # all three registered longer ago than a request lives
    who = await app.oauth.sign_in(token)
    assert who is not None
    back = await app.oauth.approve(answered, who, ISSUER)  # the code on its way to the client
    assert back is not None
    for n in range(5):  # the flood, each newer than a request lives: none dropped either
        await app.oauth.register_client(f"flood-{n}", "{}", None)
    assert await app.oauth.client("idle") is None, "a client that never began still goes"
    assert [await app.oauth.client(c) for c in ("waiting", "approved")] == ["{}", "{}"]
    assert all([await app.oauth.client(f"flood-{n}") for n in range(5)])
    code = back.split("code=", 1)[1].split("&", 1)[0]
    assert await app.oauth.exchange_code(code) is not None
    assert await app.oauth.approve(waiting, who, ISSUER) is not None


async def test_an_agents_grants_beyond_its_cap_end_oldest_first(
    app: AppContext, clock: Clock
) -> None:
    """Signing in again and again with its own token makes no more room for an agent."""
    app.oauth.grants_per_agent = 2
    w1, w2 = await app.tokens.issue("w1"), await app.tokens.issue("w2")
    others = await app.oauth.exchange_code(await signed_in_code(app.oauth, w2))
    issued = []
    for _ in range(3):
        clock.now += 1
        tokens = await app.oauth.exchange_code(await signed_in_code(app.oauth, w1))
        assert tokens is not None
        issued.append(tokens)
    alive = [await app.oauth.access_token(tokens.access_token) is not None for tokens in issued]
    assert alive == [False, True, True]
    assert await app.oauth.refresh_token(issued[0].refresh_token) is None
    assert others is not None and await app.oauth.access_token(others.access_token) is not None


async def signed_in_code_for(oauth: OAuthGrants, client_id: str, credential: str) -> str:
    request_id = await oauth.open_request(request(client_id))
    who = await oauth.sign_in(credential)
    assert who is not None
    back = await oauth.approve(request_id, who, ISSUER)
    assert back is not None
    return back.split("code=", 1)[1].split("&", 1)[0]


def test_redirect_uris_are_https_or_loopback_only() -> None:
    allowed = [
        "https://claude.ai/api/mcp/auth_callback",
        "http://127.0.0.1:33418/callback",
        "http://localhost/cb",
        "http://[::1]:8080/cb",
    ]
    refused = [
        "http://claude.ai/api/mcp/auth_callback",
        "http://192.168.1.5/cb",
        "cursor://anysphere.cursor-retrieval/oauth",
        "javascript:alert(1)",
        "https://claude.ai/cb#fragment",
        "https://user@claude.ai/cb",
        "https:///no-host",
    ]
    assert [uri for uri in allowed if redirect_uri_problem(uri)] == []
    assert [uri for uri in refused if redirect_uri_problem(uri) is None] == []


def test_the_redirect_keeps_the_clients_own_query() -> None:
    assert redirect_to("https://a.example/cb?x=1&y=", code="c d", state=None) == (
        "https://a.example/cb?x=1&y=&code=c+d"
    )


@SQLITE_ONLY  # the file's bytes; PostgreSQL's rows: tests/http/test_oauth_flow.py
async def test_only_hashes_are_stored(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    async with opened(make_settings(watch=False)) as app:
        token = await app.tokens.issue("w1")
        request_id = await app.oauth.open_request(request())
        one_time = await app.oauth.add_login_code("w1")
        who = await app.oauth.sign_in(token)
        assert who is not None
        back = await app.oauth.approve(request_id, who, ISSUER)
        assert back is not None
        code = back.split("code=", 1)[1].split("&", 1)[0]
        issued = await app.oauth.exchange_code(code)
        assert issued is not None
        second_request = await app.oauth.open_request(request())
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("memory.db*"))
    secrets = [token, one_time, code, issued.access_token, issued.refresh_token, second_request]
    assert [s for s in secrets if s.encode() in stored] == []
    assert b"mmcp_" not in stored


@SQLITE_ONLY  # the old store is a SQLite file, as the other migration tests'
async def test_an_old_store_gains_the_oauth_tables(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    build_old_store(path)
    settings = Settings(
        db=str(path), data_dir=tmp_path / "data", memory_dir=tmp_path / "m", watch=False
    )
    async with opened(settings) as app:
        issued = await app.oauth.exchange_code(
            await signed_in_code(app.oauth, await app.oauth.add_login_code("w1"))
        )
        assert issued is not None
    db = sqlite3.connect(path)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert {
        "oauth_clients",
        "oauth_requests",
        "oauth_login_codes",
        "oauth_codes",
        "oauth_grants",
        "oauth_tokens",
    } <= tables
