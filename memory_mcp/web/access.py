"""Who may look, and what every answer carries.

A page is for the agent of a bearer token: from the `Authorization: Bearer` header (curl,
scripts) or from a login (a browser): the login form's cookie holds a login id that the
server maps to the token's hash (logins.py), never the token. The token is checked against
the store on every request, as the MCP routes do, so a revoked token is refused at once.
The caller's session is a new one per request: the web view shows what the agent sees in
a fresh session (its own agent and every swarm memory), never an MCP session's memories.

Cross-site requests: every page only reads (GET); the one form that changes anything is
the login (and logout), a POST whose Origin must be this server. The cookie is HttpOnly
and SameSite=Strict, so another site's links and forms arrive without it. The Host header
is checked as the MCP routes check it (DNS rebinding), and every answer forbids framing,
scripts and caching (Content-Security-Policy, Cache-Control: no-store)."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from memory_mcp.app.binding import is_loopback, is_wildcard
from memory_mcp.auth.tokens import AgentTokens, TokenHolder
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller
from memory_mcp.settings import Settings
from memory_mcp.web.logins import LOGIN_SECONDS, WebLogins

COOKIE = "memory_mcp_ui"
PREFIX = "/ui"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
MAX_TOKEN_CHARS = 200  # AgentTokens.verify refuses longer ones too
MAX_LOGIN_ID_CHARS = 100  # ours are 43
MAX_FORM_BYTES = 4096  # the login form holds one token; the sign-in page's four fields

# No script may run at all (the pages have none), styles only from this server, nothing
# may frame the page, forms post only here.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" would make the login's Origin "null"
    "Cache-Control": "no-store",  # private memories stay out of caches and history
}


def allowed_host_names(settings: Settings) -> frozenset[str] | None:
    """The Host names a request may carry (without port); None: no check. The same rule
    as the MCP routes' (http/team_server.transport_security): loopback names on loopback; else
    the --host name, --allowed-hosts and loopback; --public-url's host in both cases; all
    interfaces without --allowed-hosts leave nothing to check against (the token is the
    gate)."""
    public = {settings.public_host} if settings.public_host else set()
    if is_loopback(settings.host):
        return LOOPBACK_NAMES | public  # behind a reverse proxy that keeps the Host
    names = {name.lower() for name in settings.allowed_hosts} | public
    if not is_wildcard(settings.host):
        names.add(f"[{settings.host}]" if ":" in settings.host else settings.host.lower())
    return frozenset(names | LOOPBACK_NAMES) if names else None


def host_name(header: str) -> str:
    """`example.org:8766` -> `example.org`; `[::1]:8766` -> `[::1]`."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.split("]", 1)[0] + "]"
    return header.split(":", 1)[0]


def host_allowed(request: Request, names: frozenset[str] | None) -> bool:
    return names is None or host_name(request.headers.get("host", "")) in names


def same_origin(request: Request) -> bool:
    """A browser names the page a POST comes from; it must be one of ours. No Origin at
    all is a client that is not a browser (curl), which no other site can drive. The
    scheme is not compared: behind a TLS proxy the browser says https, we see http."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


async def holder_of(request: Request, tokens: AgentTokens, logins: WebLogins) -> TokenHolder | None:
    """Who the Authorization header's bearer token, or else the login cookie, stands for;
    None when neither names a valid token."""
    header = request.headers.get("authorization")
    if header is not None:
        kind, _, token = header.partition(" ")
        token = token.strip()
        if kind.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
            return None
        return await tokens.verify(token)
    login_id = request.cookies.get(COOKIE)
    if not login_id or len(login_id) > MAX_LOGIN_ID_CHARS:
        return None
    hashed = logins.token_hash_of(login_id)
    return None if hashed is None else await tokens.verify_hash(hashed)


async def caller_of(request: Request, tokens: AgentTokens, logins: WebLogins) -> Caller | None:
    """The agent of the request's token or login, or None."""
    holder = await holder_of(request, tokens, logins)
    if holder is None:
        return None
    return Caller(
        holder.agent_id, holder.role, f"web-{uuid.uuid4().hex[:12]}", None, holder.projects
    )


def set_login_cookie(response: Response, request: Request, login_id: str) -> None:
    response.set_cookie(
        COOKIE,
        login_id,
        max_age=LOGIN_SECONDS,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def clear_login_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path=PREFIX, httponly=True, samesite="strict")


def with_security_headers(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


async def small_form(request: Request) -> dict[str, str]:
    """A form of a few fields (the login's token, the sign-in page's answer), read
    whole but never beyond MAX_FORM_BYTES."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise InvalidInputError("form", f"larger than {MAX_FORM_BYTES} bytes")
    try:
        fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
    except ValueError:
        raise InvalidInputError("form", "too many fields") from None
    return {name: values[0] for name, values in fields.items()}


__all__ = [
    "COOKIE",
    "PREFIX",
    "allowed_host_names",
    "caller_of",
    "clear_login_cookie",
    "holder_of",
    "host_allowed",
    "same_origin",
    "set_login_cookie",
    "small_form",
    "with_security_headers",
]
