"""The OAuth sign-in page (`--oauth`): where the SDK's /authorize sends a person's browser
(http/oauth_provider.py), in the web view's style: server-rendered, no script, every value
escaped (the client's name is whatever it registered).

The person pastes an agent's bearer token or a one-time code (`memory-mcp token add AGENT
--oauth-code`) and allows or denies; the browser then goes back to the client's registered
redirect URI with an authorization code (or `access_denied`), the client's `state` and
this server's `iss` (RFC 9207).

Cross-site requests: the answer is a POST whose Origin must be this server, carrying a
random value that must equal the one in a cookie set with the form (HttpOnly,
SameSite=Strict, only for this path): another site can neither read nor set that cookie,
so it cannot answer for a person. A forged answer gets 403 and sends nothing to the client:
it is not the person's answer, and the person may still give theirs."""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from memory_mcp import __version__
from memory_mcp.app.context import AppContext
from memory_mcp.auth.oauth import REQUEST_SECONDS, SIGN_IN_PATH, AuthorizationRequest
from memory_mcp.errors import MemoryMcpError
from memory_mcp.web.access import (
    PREFIX,
    host_allowed,
    same_origin,
    small_form,
    with_security_headers,
)

CSRF_COOKIE = "memory_mcp_oauth_csrf"
EXPIRED = "This sign-in request is unknown or has expired: start again from your client."
Handler = Callable[[Request], Awaitable[Response]]


def _form_action(redirect_uri: str) -> str:
    """The page's CSP form-action: this server and the client's redirect origin (only a
    plain scheme://host[:port], which nothing in a header can be smuggled through)."""
    parts = urlsplit(redirect_uri)
    origin = f"{parts.scheme}://{parts.netloc}"
    plain = re.fullmatch(
        r"https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?|http://\[::1\](:[0-9]{1,5})?", origin
    )
    return f"form-action 'self' {origin}" if plain else "form-action 'self'"


class SignInPage:
    def __init__(
        self,
        app: AppContext,
        templates: Environment,
        host_names: frozenset[str] | None,
        issuer: str,
    ) -> None:
        self.app = app
        self.templates = templates
        self.host_names = host_names
        self.issuer = issuer

    def endpoints(self) -> dict[str, Handler]:
        """By method, for SIGN_IN_PATH."""
        return {"GET": self._checked(self.form), "POST": self._checked(self.answer)}

    async def form(self, request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        pending = await self.app.oauth.pending(request_id)
        if pending is None:
            return self._render(400, error=EXPIRED)
        csrf = secrets.token_urlsafe(32)
        response = await self._form(200, request_id, pending, csrf)
        response.set_cookie(
            CSRF_COOKIE,
            csrf,
            max_age=REQUEST_SECONDS,
            path=SIGN_IN_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def answer(self, request: Request) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site sign-in refused", 403)
        form = await small_form(request)
        csrf = request.cookies.get(CSRF_COOKIE, "")
        if not csrf or not hmac.compare_digest(csrf.encode(), form.get("csrf", "").encode()):
            return PlainTextResponse(
                "sign-in refused: this form was not sent from this server's page", 403
            )
        request_id = form.get("request", "")
        pending = await self.app.oauth.pending(request_id)
        if pending is None:
            return self._render(400, error=EXPIRED)
        oauth = self.app.oauth
        if form.get("answer") == "deny":
            back = await oauth.deny(request_id, self.issuer)
        else:
            who = await oauth.sign_in(form.get("credential", ""))
            if who is None:
                error = "That token or code is not valid (unknown, used, expired or revoked)."
                return await self._form(401, request_id, pending, csrf, error)
            back = await oauth.approve(request_id, who, self.issuer)
        if back is None:
            return self._render(400, error=EXPIRED)
        response = RedirectResponse(back, 303)
        response.delete_cookie(CSRF_COOKIE, path=SIGN_IN_PATH, httponly=True, samesite="strict")
        return response

    async def _form(
        self,
        status: int,
        request_id: str,
        pending: AuthorizationRequest,
        csrf: str,
        error: str | None = None,
    ) -> Response:
        client = await self.app.oauth.client_name(pending.client_id)
        response = self._render(
            status,
            error=error,
            client=client or f"An unnamed client ({pending.client_id[:8]}…)",
            redirect_host=urlsplit(pending.redirect_uri).netloc,
            request_id=request_id,
            csrf=csrf,
            action=SIGN_IN_PATH,
        )
        # The answer redirects the form's submission to the client: the browser follows
        # that redirect only to a target the page's form-action names.
        with_security_headers(response)
        csp = response.headers["Content-Security-Policy"]
        response.headers["Content-Security-Policy"] = csp.replace(
            "form-action 'self'", _form_action(pending.redirect_uri)
        )
        return response

    def _render(self, status: int, **context: object) -> HTMLResponse:
        values: dict[str, object] = {"client": None, "error": None, "request_id": None}
        values.update(context)
        html = self.templates.get_template("authorize.html").render(
            prefix=PREFIX, version=__version__, agent=None, role=None, **values
        )
        return HTMLResponse(html, status)

    def _checked(self, handler: Handler) -> Handler:
        """The Host check and the security headers of every web page; a store failure
        becomes a plain answer that names it."""

        async def endpoint(request: Request) -> Response:
            if not host_allowed(request, self.host_names):
                return with_security_headers(PlainTextResponse("unknown Host", 421))
            try:
                response = await handler(request)
            except MemoryMcpError as exc:
                response = PlainTextResponse(str(exc), 503)
            if "Content-Security-Policy" in response.headers:  # the form's own (_form)
                return response
            return with_security_headers(response)

        return endpoint


__all__ = ["CSRF_COOKIE", "SignInPage"]
