"""Who is asking, per request. Over stdio: the agent the server was started as (settings).
Over HTTP: the agent and role of the request's bearer token, never a flag or a header the
caller could set, and the MCP session of its connection as the memory `session` scope.

The SDK's bearer middleware puts the verified token in a context variable
(`get_access_token`); the SDK hands each message's context variables on to the task that
handles it, so tools, prompts and the memory://context resource all see the token of the
request they answer. The MCP session id travels the same way: set by `SseSession` on the
SSE transport and by `AgentSessions` (http/agent_sessions.py) on streamable HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import Caller, Role
from memory_mcp.rules.permissions import current_project_of
from memory_mcp.rules.projects import ProjectNameError, check_project

if TYPE_CHECKING:  # the stdio server imports this module before it opens the store
    from memory_mcp.app.context import AppContext
    from memory_mcp.auth.oauth import OAuthGrants
    from memory_mcp.auth.tokens import AgentTokens

ROLE_CLAIM = "memory_mcp_role"
PROJECTS_CLAIM = "memory_mcp_projects"  # the projects a token is granted; absent: every one
SESSION_QUERY = "session_id"  # SSE: POST /messages/?session_id=...
# A connection's current project: a header (Claude Code's --header, .mcp.json `headers`),
# or the URL's query for connectors that cannot set headers (streamable HTTP: each request
# carries the URL; SSE posts to a URL the server hands out, so there the header only).
PROJECT_HEADER = "x-memory-project"
PROJECT_QUERY = "project"

_mcp_session: ContextVar[str | None] = ContextVar("memory_mcp_session", default=None)
_asked_project: ContextVar[str | None] = ContextVar("memory_mcp_project", default=None)


class StoreTokenVerifier:
    """The SDK's `TokenVerifier`: a bearer token is valid while its hash is in the store;
    with `oauth`, so is an OAuth access token while its grant lives (auth/oauth.py). Both
    give the same `AccessToken` shape: the agent as `client_id`, the role as a claim."""

    def __init__(
        self, tokens: AgentTokens, oauth: OAuthGrants | None = None, resource: str | None = None
    ) -> None:
        self._tokens = tokens
        self._oauth = oauth
        # With OAuth on, the SDK refuses a token issued for another resource (RFC 8707); a
        # bearer token is made for this server, so it carries this server's resource.
        self._resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        from memory_mcp.auth.tokens import token_hash  # HTTP only: stdio never loads the store

        if self._oauth is not None:
            grant = await self._oauth.access_token(token)
            if grant is not None:
                return AccessToken(
                    token=token,
                    client_id=grant.agent_id,
                    subject=grant.subject,  # the grant: its sessions outlive a refresh
                    scopes=list(grant.scopes),
                    expires_at=int(grant.expires_at),
                    resource=grant.resource,
                    claims=_claims(grant.role, grant.projects),
                )
        holder = await self._tokens.verify(token)
        if holder is None:
            return None
        return AccessToken(
            token=token,
            client_id=holder.agent_id,
            # The SDK binds each MCP session to (client_id, issuer, subject): with the
            # token's hash as the subject, a session belongs to the token that opened it.
            subject=token_hash(token),
            scopes=[],
            resource=self._resource,
            claims=_claims(holder.role, holder.projects),
        )


def _claims(role: Role, projects: frozenset[str] | None) -> dict[str, Any]:
    claims: dict[str, Any] = {ROLE_CLAIM: role.value}
    if projects is not None:
        claims[PROJECTS_CLAIM] = sorted(projects)
    return claims


@contextmanager
def in_mcp_session(session: str | None) -> Iterator[None]:
    """The MCP session `caller_of` reports while the block runs (None: none)."""
    reset = _mcp_session.set(session)
    try:
        yield
    finally:
        _mcp_session.reset(reset)


class ConnectionProject:
    """ASGI middleware of the team server: the project a request asks to work in (the
    `X-Memory-Project` header, else `?project=`), for `caller_of`, which checks it against
    the token's grants. A name that is not one is answered 400 here."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asked = _project_asked(scope) if scope["type"] == "http" else None
        if asked is not None:
            try:
                check_project(asked)
            except ProjectNameError as exc:
                await PlainTextResponse(f"invalid project: {exc}", 400)(scope, receive, send)
                return
        reset = _asked_project.set(asked)
        try:
            await self.app(scope, receive, send)
        finally:
            _asked_project.reset(reset)


class ProjectGrant:
    """ASGI middleware on the team server's MCP routes, after the bearer check: a
    connection that asks for a project its token is not granted is answered 403 there, at
    connect, rather than at each call (`caller_of` refuses those too)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        asked = _asked_project.get()
        if isinstance(user, AuthenticatedUser) and asked is not None:
            try:
                current_project_of(_grants(user.access_token.claims), asked)
            except PermissionDeniedError as exc:
                body = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32000, "message": str(exc)},
                }
                await JSONResponse(body, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _grants(claims: dict[str, Any] | None) -> frozenset[str] | None:
    projects = (claims or {}).get(PROJECTS_CLAIM)
    return None if projects is None else frozenset(projects)


def _project_asked(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.decode("latin-1").lower() == PROJECT_HEADER:
            return str(value.decode("utf-8", errors="replace").strip())
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get(PROJECT_QUERY)
    return values[0].strip() if values else None


class SseSession:
    """ASGI middleware for the SSE transport: the MCP session of a message is the
    connection the SDK routes it to, named by the `session_id` query of POST /messages/
    (the SDK checks that the connection belongs to the same token holder). Never a
    header: an `Mcp-Session-Id` header would let a message routed to one connection act in
    another session of the same agent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _sse_session_of(scope) if scope["type"] == "http" else None
        with in_mcp_session(session):
            await self.app(scope, receive, send)


def _sse_session_of(scope: Scope) -> str | None:
    """The connection's id as the SDK reads it (`UUID(hex=...)`), so two spellings of
    one id are one session; None when the SDK would refuse it (400)."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get(SESSION_QUERY)
    if not values:
        return None
    try:
        return uuid.UUID(hex=values[0]).hex
    except ValueError:
        return None


def caller_of(app: AppContext) -> Caller:
    """The caller of the request being handled."""
    access = get_access_token()
    if access is None:
        if app.settings.transport == "stdio":
            return app.caller
        # Unreachable behind the SDK's RequireAuthMiddleware; never fall back to the
        # server's own identity over the network.
        raise PermissionDeniedError("this request carries no valid bearer token")
    claims = access.claims or {}
    role = Role(claims.get(ROLE_CLAIM, Role.WORKER.value))
    grants = _grants(claims)
    # A client of the stateless 2026-07-28 protocol has no MCP session: its session
    # scope lasts one request.
    session = _mcp_session.get() or f"request-{uuid.uuid4().hex[:12]}"
    project = current_project_of(grants, _asked_project.get())
    return Caller(access.client_id, role, session[:128], project, grants)


__all__ = [
    "ConnectionProject",
    "ProjectGrant",
    "SseSession",
    "StoreTokenVerifier",
    "caller_of",
    "in_mcp_session",
]
