"""An OAuth client nobody here wrote, the MCP SDK's `OAuthClientProvider`, against a real
team server with --oauth; the person's browser is played over HTTP (`HttpBrowser`: the
redirect to the sign-in page, its form read and posted back with the cookie and Origin a
browser sends) or by a real Chromium (tests/web/test_authorize_browser.py).

Also the raw steps a client takes (register, authorize, exchange, refresh, revoke) for the
attack tests, which need to send what the SDK's client never would."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from tests.http.team_server import TeamServer

REDIRECT_URI = "http://127.0.0.1:33418/callback"  # never listened on: the test reads it


class MemoryTokenStorage:
    """The SDK's `TokenStorage`, in memory: what a client keeps between requests."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class _Form(HTMLParser):
    """The fields of the page's form, as a browser would submit them."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form" and values.get("method") == "post":
            self.action = values.get("action")
        if tag == "input" and values.get("type") == "hidden" and values.get("name"):
            self.fields[values["name"] or ""] = values.get("value") or ""


def page_form(html: str) -> tuple[str, dict[str, str]]:
    form = _Form()
    form.feed(html)
    assert form.action, "the page has no form"
    return form.action, form.fields


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


@dataclass
class HttpBrowser:
    """A person's browser over HTTP: opens the authorization URL the client hands it,
    follows it to the sign-in page, pastes `credential` and answers (`sign_in`, below);
    what comes back to the client's redirect URI is `returned`."""

    credential: str
    answer: str = "allow"
    returned: list[dict[str, str]] = field(default_factory=list)

    async def open(self, authorization_url: str) -> None:
        args = (authorization_url, self.credential, self.answer)
        self.returned.append(await anyio.to_thread.run_sync(sign_in, *args))

    async def callback(self) -> AuthorizationCodeResult:
        back = self.returned[-1]
        return AuthorizationCodeResult(
            code=back["code"], state=back.get("state"), iss=back.get("iss")
        )


def client_metadata(redirect_uri: str = REDIRECT_URI, **changes: Any) -> OAuthClientMetadata:
    values: dict[str, Any] = {
        "client_name": "the SDK's client",
        "redirect_uris": [AnyUrl(redirect_uri)],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post",
    }
    values.update(changes)
    return OAuthClientMetadata(**values)


def sdk_client_auth(
    server: TeamServer,
    browser: HttpBrowser,
    storage: MemoryTokenStorage,
    redirect_handler: Callable[[str], Awaitable[None]] | None = None,
) -> OAuthClientProvider:
    return OAuthClientProvider(
        server.url,
        client_metadata(),
        storage,
        redirect_handler=redirect_handler or browser.open,
        callback_handler=browser.callback,
    )


@asynccontextmanager
async def oauth_connection(server: TeamServer, auth: OAuthClientProvider) -> AsyncIterator[Client]:
    """One MCP connection whose requests the SDK's OAuth client authorizes."""
    if server.transport == "sse":
        transport = sse_client(server.url, timeout=60, auth=auth)
        async with Client(transport, mode="legacy", read_timeout_seconds=120) as client:
            yield client
        return
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(
            streamable_http_client(server.url, http_client=http),
            mode="legacy",
            read_timeout_seconds=120,
        ) as client:
            yield client


# -- the raw steps, for the attack tests -----------------------------------------------------------


def pkce() -> tuple[str, str]:
    """(verifier, S256 challenge)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass
class RawClient:
    """A registered client that speaks the endpoints directly."""

    base: str
    resource: str
    client_id: str
    client_secret: str
    redirect_uri: str

    def authorize_url(self, challenge: str, state: str, **changes: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": self.resource,
        }
        params.update(changes)
        return f"{self.base}/authorize?{urlencode(params)}"

    def token(self, **form: str) -> httpx2.Response:
        data = {"client_id": self.client_id, "client_secret": self.client_secret, **form}
        return httpx2.post(f"{self.base}/token", data=data, timeout=60)

    def exchange(self, code: str, verifier: str) -> httpx2.Response:
        return self.token(
            grant_type="authorization_code",
            code=code,
            redirect_uri=self.redirect_uri,
            code_verifier=verifier,
            resource=self.resource,
        )

    def refresh(self, refresh_token: str) -> httpx2.Response:
        return self.token(grant_type="refresh_token", refresh_token=refresh_token)

    def revoke(self, token: str) -> httpx2.Response:
        data = {"client_id": self.client_id, "client_secret": self.client_secret, "token": token}
        return httpx2.post(f"{self.base}/revoke", data=data, timeout=60)


def register(server: TeamServer, redirect_uri: str = REDIRECT_URI) -> RawClient:
    answer = httpx2.post(
        f"{server.base}/register",
        json=client_metadata(redirect_uri).model_dump(mode="json", exclude_none=True),
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return RawClient(
        server.base, server.url, body["client_id"], body["client_secret"], redirect_uri
    )


def sign_in(authorization_url: str, credential: str, answer: str = "allow") -> dict[str, str]:
    """The person's part, over HTTP, with the cookie and Origin a browser sends: what
    comes back to the redirect URI."""
    with httpx2.Client(timeout=60) as browser:  # its own cookie jar
        found = browser.get(authorization_url)
        assert found.status_code == 302, found.text
        page_url = found.headers["location"]
        page = browser.get(page_url)
        assert page.status_code == 200, page.text
        action, fields = page_form(page.text)
        answered = browser.post(
            origin_of(page_url) + action,
            data={**fields, "credential": credential, "answer": answer},
            headers={"Origin": origin_of(page_url)},
        )
        assert answered.status_code == 303, answered.text
        return query_of(answered.headers["location"])


def tokens_for(client: RawClient, credential: str) -> dict[str, Any]:
    """The whole flow, raw: a code for `credential`, exchanged for tokens."""
    verifier, challenge = pkce()
    back = sign_in(client.authorize_url(challenge, "s"), credential)
    answer = client.exchange(back["code"], verifier)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def mcp_status(server: TeamServer, token: str) -> httpx2.Response:
    """One MCP request (initialize) with `token`: 200, or the bearer check's refusal."""
    return httpx2.post(
        server.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
        timeout=60,
    )
