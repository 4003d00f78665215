"""Attacks on the OAuth flow of a real `memory-mcp serve --oauth` on 127.0.0.1, each sent
as raw HTTP (what the SDK's client would never send) and each refused with the error the
specs name: RFC 6749 §5.2 and RFC 7636 §4.6 at the token endpoint (`invalid_grant`,
`invalid_request`), at /authorize a page that names the error and no redirect at all (not
to an unregistered URI, RFC 6749 §4.1.2.1, nor to a registered one that anyone could have
registered: RFC 9700 §4.11.2),
RFC 7591 §3.2.2 at registration (`invalid_redirect_uri`), RFC 8707 (`invalid_target`; a
token for another resource refused), RFC 6750 §3.1 on the MCP route (401
`invalid_token`). The sign-in page refuses a cross-site answer with 403 and sends the
client nothing. Most run on one server (`site`); a second on its store (`short_lived`) is
another resource and issues access tokens that last SHORT_LIFETIME seconds. The store's
rules behind them are unit-tested in tests/store/test_oauth_grants.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest

from tests.http.oauth_client import (
    RawClient,
    client_metadata,
    mcp_status,
    origin_of,
    page_form,
    pkce,
    query_of,
    register,
    sign_in,
    tokens_for,
)
from tests.http.team_server import TeamServer, running, token_add, token_revoke


@dataclass(frozen=True)
class Site:
    server: TeamServer
    token: str  # agent w1's bearer token, what the person pastes


# Long enough that a token is used within its lifetime under load, short enough to wait out.
SHORT_LIFETIME = 8


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("oauth-attacks")
    db = tmp / "memory.db"
    token = token_add(db, "w1")
    with running(tmp, "streamable-http", db, "--oauth") as server:
        yield Site(server, token)


@pytest.fixture(scope="module")
def short_lived(site: Site, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TeamServer]:
    """Another server on `site`'s store (another port: another resource) whose access
    tokens last SHORT_LIFETIME seconds."""
    tmp = tmp_path_factory.mktemp("oauth-short-lived")
    args = ("--oauth", "--oauth-access-token-seconds", str(SHORT_LIFETIME))
    with running(tmp, "streamable-http", site.server.db, *args) as server:
        yield server


def _code(client: RawClient, credential: str) -> tuple[str, str]:
    """(code, verifier): a person signed in, the code came back to the redirect URI."""
    verifier, challenge = pkce()
    back = sign_in(client.authorize_url(challenge, "st"), credential)
    assert back["state"] == "st"
    return back["code"], verifier


def _error(answer: httpx2.Response) -> tuple[int, str]:
    return answer.status_code, answer.json()["error"]


def _refusal_page(answer: httpx2.Response) -> str:
    """/authorize's refusal: a page (400) that names the error and sends the browser
    nowhere. Returns the page."""
    assert answer.status_code == 400, answer.text
    assert "location" not in answer.headers
    assert answer.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    return answer.text


def test_a_wrong_pkce_verifier_is_refused(site: Site) -> None:
    client = register(site.server)
    code, verifier = _code(client, site.token)
    wrong, _ = pkce()
    assert _error(client.exchange(code, wrong)) == (400, "invalid_grant")
    assert _error(client.exchange(code, "")) == (400, "invalid_grant")
    assert client.exchange(code, verifier).status_code == 200  # only the verifier was wrong


@pytest.mark.parametrize(
    "changes",
    [{"code_challenge_method": "plain"}, {"code_challenge": ""}],
    ids=["plain", "no-challenge"],
)
def test_an_authorization_without_an_s256_challenge_is_refused(
    site: Site, changes: dict[str, str]
) -> None:
    client = register(site.server)
    verifier, challenge = pkce()
    url = client.authorize_url(challenge, "st", **changes)
    assert "invalid_request" in _refusal_page(httpx2.get(url, timeout=60))


@pytest.mark.parametrize(
    "changes",
    [
        {"code_challenge": "not-an-s256-challenge"},
        {"code_challenge_method": "plain"},
        {"resource": "https://other.example/mcp"},
        {"response_type": "token"},
        {"client_id": "<b>unknown</b>"},
    ],
    ids=["bad-challenge", "plain", "other-resource", "implicit", "unknown-client"],
)
def test_a_bad_authorization_request_shows_a_page_never_a_redirect_to_the_client(
    site: Site, changes: dict[str, str]
) -> None:
    """With open registration anyone can register https://evil.example/cb; a redirect
    there for a bad request would make this server an open redirector."""
    evil = register(site.server, "https://evil.example/cb")
    _, challenge = pkce()
    answer = httpx2.get(evil.authorize_url(challenge, "st", **changes), timeout=60)
    page = _refusal_page(answer)
    assert "evil.example" not in page
    assert "This sign-in request was refused" in page
    assert "<b>" not in page  # what the request said is shown as text


def test_a_code_used_twice_is_refused_and_ends_the_grant_it_made(site: Site) -> None:
    client = register(site.server)
    code, verifier = _code(client, site.token)
    first = client.exchange(code, verifier).json()
    assert mcp_status(site.server, first["access_token"]).status_code == 200
    assert _error(client.exchange(code, verifier)) == (400, "invalid_grant")
    # RFC 6749 §4.1.2: the code was stolen, so the tokens it gave are revoked too
    assert mcp_status(site.server, first["access_token"]).status_code == 401
    assert _error(client.refresh(first["refresh_token"])) == (400, "invalid_grant")


def test_another_clients_code_is_refused(site: Site) -> None:
    owner, thief = register(site.server), register(site.server)
    code, verifier = _code(owner, site.token)
    assert _error(thief.exchange(code, verifier)) == (400, "invalid_grant")


def test_a_redirect_uri_not_registered_is_refused(site: Site) -> None:
    client = register(site.server)
    _, challenge = pkce()
    for elsewhere in ("http://127.0.0.1:9/elsewhere", "https://attacker.example/cb"):
        answer = httpx2.get(
            client.authorize_url(challenge, "st", redirect_uri=elsewhere), timeout=60
        )
        # shown to the person, never sent to the unregistered URI (RFC 6749 §4.1.2.1)
        assert "invalid_request" in _refusal_page(answer)
    # at the token endpoint, a redirect URI other than the authorization request's
    code, verifier = _code(client, site.token)
    other = RawClient(client.base, client.resource, client.client_id, client.client_secret, "")
    other.redirect_uri = "http://127.0.0.1:33418/other"
    assert _error(other.exchange(code, verifier)) == (400, "invalid_request")


@pytest.mark.parametrize(
    "uri",
    ["http://attacker.example/cb", "https://a.example/cb#frag", "javascript:alert(1)"],
)
def test_registering_a_redirect_uri_that_is_not_https_or_loopback_is_refused(
    site: Site, uri: str
) -> None:
    metadata = client_metadata().model_dump(mode="json", exclude_none=True)
    metadata["redirect_uris"] = [uri]
    answer = httpx2.post(f"{site.server.base}/register", json=metadata, timeout=60)
    assert answer.status_code == 400
    assert answer.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_a_token_for_another_resource_is_refused(site: Site, short_lived: TeamServer) -> None:
    client = register(site.server)
    _, challenge = pkce()
    asked = httpx2.get(
        client.authorize_url(challenge, "st", resource="https://other.example/mcp"), timeout=60
    )
    assert "invalid_target" in _refusal_page(asked)  # RFC 8707 §2's error, on the page

    # A second server on the same store is another resource (another port): a token the
    # first issued is in the store it reads, yet issued for the first, so refused. (It
    # lasts as `site` issues them, not SHORT_LIFETIME: `site` takes it just before.)
    issued = tokens_for(client, site.token)
    server, other = site.server, short_lived
    assert mcp_status(server, issued["access_token"]).status_code == 200
    refused = mcp_status(other, issued["access_token"])
    assert refused.status_code == 401
    challenge_header = refused.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge_header
    assert f'resource_metadata="{other.base}/.well-known/oauth-protected-resource' in (
        challenge_header
    )


def test_a_code_of_an_agent_revoked_before_the_exchange_is_refused(site: Site) -> None:
    token = token_add(site.server.db, "w-revoked")
    client = register(site.server)
    code, verifier = _code(client, token)
    token_revoke(site.server.db, "w-revoked")  # the real CLI, not the server
    assert _error(client.exchange(code, verifier)) == (400, "invalid_grant")


def test_an_expired_access_token_is_refused_and_refreshing_gives_a_new_one(
    site: Site, short_lived: TeamServer
) -> None:
    server = short_lived
    client = register(server)
    issued = tokens_for(client, site.token)
    assert issued["expires_in"] == SHORT_LIFETIME
    # Polled, not slept: the renewed token below is used well within its lifetime even
    # on a loaded machine (with 2 s tokens a slow refresh let it expire first).
    deadline = time.monotonic() + 60
    while (refused := mcp_status(server, issued["access_token"])).status_code == 200:
        assert time.monotonic() < deadline, "the access token never expired"
        time.sleep(0.2)
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    renewed = client.refresh(issued["refresh_token"])
    assert renewed.status_code == 200
    assert mcp_status(server, renewed.json()["access_token"]).status_code == 200


def _sign_in_page(browser: httpx2.Client, client: RawClient) -> tuple[str, str, dict[str, str]]:
    """`browser` on the sign-in page: (page URL, form action, hidden fields)."""
    _, challenge = pkce()
    found = browser.get(client.authorize_url(challenge, "st"))
    assert found.status_code == 302
    page_url = found.headers["location"]
    page = browser.get(page_url)
    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    action, fields = page_form(page.text)
    return page_url, origin_of(page_url) + action, fields


def test_a_cross_site_answer_on_the_sign_in_page_is_refused(site: Site) -> None:
    client = register(site.server)
    with httpx2.Client(timeout=60) as browser:
        page_url, action, fields = _sign_in_page(browser, client)
        answer = {**fields, "credential": site.token, "answer": "allow"}
        own = {"Origin": origin_of(page_url)}
        forged = [
            # another site's page posting the form (the browser names it)
            httpx2.post(action, data=answer, headers={"Origin": "https://attacker.example"}),
            # the same fields without the page's cookie (SameSite=Strict keeps it home)
            httpx2.post(action, data=answer, headers=own),
            # the page's cookie, but a CSRF value the attacker guessed
            browser.post(action, data={**answer, "csrf": "guessed"}, headers=own),
            browser.post(action, data={**answer, "csrf": ""}, headers=own),
        ]
        for refused in forged:
            assert refused.status_code == 403, refused.text
            assert "location" not in refused.headers  # nothing goes to the client
        # the person's own answer still goes through, once
        mine = browser.post(action, data=answer, headers=own)
        assert mine.status_code == 303
        assert query_of(mine.headers["location"])["state"] == "st"
        again = browser.post(action, data=answer, headers=own)  # its cookie went with it
        assert again.status_code == 403 and "location" not in again.headers


def test_a_wrong_credential_on_the_sign_in_page_issues_no_code(site: Site) -> None:
    client = register(site.server)
    with httpx2.Client(timeout=60) as browser:
        page_url, action, fields = _sign_in_page(browser, client)
        own = {"Origin": origin_of(page_url)}
        for credential in ("", "mmcp_not-a-token", "mmcp_otc_" + "x" * 43, site.token + "x"):
            answer = {**fields, "credential": credential, "answer": "allow"}
            refused = browser.post(action, data=answer, headers=own)
            assert refused.status_code == 401
            assert "location" not in refused.headers
        denied = browser.post(action, data={**fields, "answer": "deny"}, headers=own)
        back = query_of(denied.headers["location"])
        assert (back["error"], back["state"]) == ("access_denied", "st")
        assert "code" not in back
