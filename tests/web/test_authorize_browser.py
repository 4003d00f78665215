"""The OAuth sign-in page in a real headless Chromium (Debian's, driven by Playwright),
with the MCP SDK's `OAuthClientProvider` as the client and a real callback server on
127.0.0.1, as a desktop client has: the browser follows /authorize to the sign-in page,
the person pastes a token and presses Allow, and Chromium itself carries the code to the
callback (so the page's Content-Security-Policy must let its form go there). A page of
another origin that posts the form for the person is refused."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult

from tests.conftest import call
from tests.http.oauth_client import (
    MemoryTokenStorage,
    client_metadata,
    oauth_connection,
    pkce,
    query_of,
    register,
)
from tests.http.team_server import running, token_add
from tests.web.web_browser import chromium

pytestmark = pytest.mark.anyio

SIGNED_IN = "Signed in: you may close this tab."


@dataclass
class Callback:
    """The client's own redirect URI: what Chromium brings back, and an attacker's page."""

    url: str
    queries: list[dict[str, str]] = field(default_factory=list)
    attack: str = ""  # the HTML /attack serves


@pytest.fixture
def callback() -> Iterator[Callback]:
    found = Callback("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            attack = self.path.startswith("/attack")
            if self.path.startswith("/callback"):  # (Chromium asks for /favicon.ico too)
                found.queries.append(query_of(self.path))
            body = (found.attack if attack else f"<p>{SIGNED_IN}</p>").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{http.server_address[1]}/callback"
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        http.shutdown()
        http.server_close()


def allow_in_chromium(url: str, credential: str, callback: Callback, profile: Path) -> str:
    """A person in Chromium: the authorization URL, the token pasted, Allow. The text
    the callback page shows."""
    with chromium(profile) as context:
        page = context.new_page()
        page.goto(url)
        assert page.locator("h1").inner_text() == "Sign in to memory-mcp"
        page.fill("input[name=credential]", credential)
        page.click("button[value=allow]")
        page.wait_for_url(f"{callback.url}?**")
        return page.locator("p").inner_text()


async def test_chromium_signs_in_for_the_sdk_client(tmp_path: Path, callback: Callback) -> None:
    db = tmp_path / "memory.db"
    token = token_add(db, "w1")
    shown: list[str] = []

    async def open_browser(url: str) -> None:
        args = (url, token, callback, tmp_path / "profile")
        shown.append(await anyio.to_thread.run_sync(allow_in_chromium, *args))

    async def came_back() -> AuthorizationCodeResult:
        back = callback.queries[-1]
        return AuthorizationCodeResult(code=back["code"], state=back["state"], iss=back["iss"])

    with running(tmp_path, "streamable-http", db, "--oauth") as server:
        auth = OAuthClientProvider(
            server.url,
            client_metadata(callback.url),
            MemoryTokenStorage(),
            redirect_handler=open_browser,
            callback_handler=came_back,
        )
        async with oauth_connection(server, auth) as client:
            stored = await call(client, "store_memory", key="k", value="from Chromium")
            assert stored["agent_id"] == "w1"
    assert shown == [SIGNED_IN] and len(callback.queries) == 1


def post_from_another_site(attack_url: str, page_url: str, profile: Path) -> tuple[str, str]:
    """The person opens the sign-in page, then another site's page that posts its form
    (with a request id the attacker got by starting the flow itself). (The answer's
    text, the URL Chromium ends on.)"""
    with chromium(profile) as context:
        page = context.new_page()
        page.goto(page_url)  # the sign-in cookie is set in this browser
        page.goto(attack_url)
        page.wait_for_load_state()
        page.wait_for_url(lambda url: "/ui/authorize" in url)
        return page.locator("body").inner_text(), page.url


async def test_another_sites_page_cannot_answer_for_the_person(
    tmp_path: Path, callback: Callback
) -> None:
    db = tmp_path / "memory.db"
    token = token_add(db, "w1")
    with running(tmp_path, "streamable-http", db, "--oauth") as server:
        client = register(server, callback.url)
        _, challenge = pkce()
        found = httpx2.get(client.authorize_url(challenge, "st"), timeout=60)
        page_url = found.headers["location"]
        request_id = query_of(page_url)["request"]
        callback.attack = (
            f'<form id="f" method="post" action="{server.base}/ui/authorize">'
            f'<input name="request" value="{request_id}">'
            f'<input name="credential" value="{token}">'
            '<input name="answer" value="allow"></form>'
            '<script>document.getElementById("f").submit()</script>'
        )
        attack_url = callback.url.replace("/callback", "/attack")
        args = (attack_url, page_url, tmp_path / "profile")
        text, url = await anyio.to_thread.run_sync(post_from_another_site, *args)
    assert "refused" in text and url.startswith(server.base)
    assert callback.queries == []  # no code went to the client
