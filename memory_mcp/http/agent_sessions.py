"""MCP sessions bounded per agent, on both HTTP transports.

The SDK keeps up to 10,000 streamable HTTP sessions for 30 idle minutes and then answers
every new `initialize` with 503, and its SSE transport keeps any number of connections: one
agent that opens sessions without closing them locks every other agent out, whether it uses
one token, several, or OAuth grants it signed in to with its own token (each way was tried,
and each locked the others out). Here an agent, however it comes in, holds at most
`per_agent` sessions in this process (a session's agent is its token's:
`AccessToken.client_id`, the same for a bearer token and for an OAuth grant of that agent):

- Streamable HTTP: a new session beyond that closes the agent's oldest idle one (no
  request in flight, no GET stream open: what a client leaves behind when it goes away
  without DELETE; its id answers 404 from then on, as an expired one does). With none
  idle, the new one is refused: 429 and a JSON-RPC error that names the limit, to that
  agent only. Idle sessions close after `session_idle_timeout`, as in the SDK.
- SSE: a connection is its session, a held stream, never idle; one beyond the cap is
  refused the same way, and a connection counts until its stream ends.

`AgentSessions` extends the SDK's manager where a request meets a session
(`_handle_stateful_request`: it opens sessions itself, so the limit is decided under the
manager's creation lock, and it hands the session to `caller_of` on the one path where the
SDK has checked it) and where a session ends (`_discard_session`: DELETE, idle expiry, a
failed opening request, shutdown). The SDK builds its manager inside
`streamable_http_app` with no way to pass a subclass, so `streamable_app` assembles the
same Starlette app (bearer auth, the MCP route, the extra routes) around ours.
`limit_sse_streams` wraps the SDK's SSE route. tests/http/test_agent_sessions.py holds both
to the SDK with real sessions."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import (
    AuthenticatedUser,
    BearerAuthBackend,
    RequireAuthMiddleware,
    authorization_context,
)
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_mcp.mcp.identity import in_mcp_session

log = logging.getLogger(__name__)

REFUSED_STATUS = 429  # Too Many Requests: this agent's, not the server's (503)
SERVER_ERROR = -32000  # JSON-RPC's range for an implementation's own errors


def rpc_error(message: str, status: int) -> JSONResponse:
    """A JSON-RPC error without a request id (the SDK's client hands it to its caller)."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": SERVER_ERROR, "message": message}}
    return JSONResponse(body, status)


def refused(agent: str, per_agent: int, idle_seconds: float) -> JSONResponse:
    """The answer to a session over the agent's limit, naming it."""
    log.warning("refused a new session of agent %r: %d open, its limit", agent[:128], per_agent)
    return rpc_error(
        f"agent {agent[:128]!r} has {per_agent} MCP sessions open, the most one agent may "
        f"have on this server (--max-sessions-per-agent): close one, or wait for one to "
        f"close (a session with no request in flight closes after {idle_seconds:g} s)",
        REFUSED_STATUS,
    )


def _agent_of(scope: Scope) -> str | None:
    """The agent the request's token stands for (None: no valid token; the route's
    RequireAuthMiddleware answers 401)."""
    user = scope.get("user")
    return user.access_token.client_id if isinstance(user, AuthenticatedUser) else None


class AgentSessions(StreamableHTTPSessionManager):
    """The SDK's session manager with at most `per_agent` sessions per agent."""

    def __init__(self, app: Any, *, per_agent: int, **options: Any) -> None:
        if per_agent < 1:
            raise ValueError("per_agent must be at least 1")
        super().__init__(app, **options)
        self.per_agent = per_agent
        # agent -> its open sessions, oldest first (a dict keeps insertion order)
        self._opened_by: dict[str, dict[str, None]] = {}
        self._agent_of: dict[str, str] = {}
        # session -> requests of it being served (a GET stream is one until it closes)
        self._in_flight: Counter[str] = Counter()

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session opens one (`_open`); one that names a session is
        the SDK's to serve, counted as in flight, in the MCP session for `caller_of`: on
        this path the SDK serves a request that names a session only inside that session,
        once it has checked that the session is open and was opened with the same token
        (StoreTokenVerifier's subject); anything else gets 404 and reaches no tool. A
        request of the stateless protocol takes the other path, where a header is not
        checked, and so has no session."""
        session = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        agent = _agent_of(scope)
        if session is None and agent is not None:
            await self._open(agent, scope, receive, send)
            return
        with in_mcp_session(session), self._serving(session):
            await super()._handle_stateful_request(scope, receive, send)

    async def _open(self, agent: str, scope: Scope, receive: Receive, send: Send) -> None:
        """The SDK's new-session case with the agent's limit decided under its lock."""
        user = scope["user"]
        async with self._session_creation_lock:
            room = self._make_room(agent)
            transport = self._admit_session(authorization_context(user)) if room else None
            session = transport.mcp_session_id if transport is not None else None
            if session is not None:
                self._opened_by.setdefault(agent, {})[session] = None
                self._agent_of[session] = agent
        if not room:
            idle = self.session_idle_timeout or 0.0
            await refused(agent, self.per_agent, idle)(scope, receive, send)
            return
        if transport is None or session is None:  # the SDK's own limit on all sessions
            log.warning("refused a new session: %s sessions are open", self.max_sessions)
            await rpc_error("Too many open sessions", 503)(scope, receive, send)
            return
        with self._serving(session):
            await self._serve_opening_request(transport, scope, receive, send)

    def _make_room(self, agent: str) -> bool:
        """Whether the agent may open one more session, once its oldest idle ones are
        closed to make room."""
        opened = self._opened_by.get(agent, {})
        while len(opened) >= self.per_agent:
            idle = next((s for s in opened if not self._in_flight[s]), None)
            if idle is None:
                return False
            self._close(idle)
        return True

    @contextmanager
    def _serving(self, session: str | None) -> Iterator[None]:
        if session is None:
            yield
            return
        self._in_flight[session] += 1
        try:
            yield
        finally:
            self._in_flight[session] -= 1
            if not self._in_flight[session]:
                del self._in_flight[session]

    def _close(self, session_id: str) -> None:
        """Close an idle session to make room: forgotten now (its id answers 404 from this
        moment, as in `_discard_session`), its transport terminated by a task."""
        self._forget(session_id)
        transport = self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        log.info("closed idle session %s: its agent opened one more", session_id[:12])
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session_id, transport)

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _forget(self, session_id: str) -> None:
        agent = self._agent_of.pop(session_id, None)
        if agent is None:
            return
        opened = self._opened_by.get(agent, {})
        opened.pop(session_id, None)
        if not opened:
            self._opened_by.pop(agent, None)


class SseStreams:
    """ASGI middleware for the SDK's SSE route (GET /sse, behind its bearer check): at
    most `per_agent` connections per agent, each counted until its stream ends."""

    def __init__(self, app: ASGIApp, per_agent: int, idle_seconds: float) -> None:
        if per_agent < 1:
            raise ValueError("per_agent must be at least 1")
        self.app = app
        self.per_agent = per_agent
        self.idle_seconds = idle_seconds
        self._open: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        agent = _agent_of(scope)
        if agent is None:  # the SDK's bearer check answers it
            await self.app(scope, receive, send)
            return
        if self._open[agent] >= self.per_agent:
            await refused(agent, self.per_agent, self.idle_seconds)(scope, receive, send)
            return
        self._open[agent] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._open[agent] -= 1
            if not self._open[agent]:
                del self._open[agent]


def limit_sse_streams(app: Starlette, path: str, per_agent: int, idle_seconds: float) -> None:
    """Put `SseStreams` on the SDK's SSE route at `path` (`MCPServer.sse_app` builds the
    route, its transport and its bearer check together; the check runs first, in the
    app's middleware, so the route knows the agent)."""
    for route in app.router.routes:
        if isinstance(route, Route) and route.path == path:
            route.app = SseStreams(route.app, per_agent, idle_seconds)
            return
    raise RuntimeError(f"the SDK's SSE app has no route {path}")


def streamable_app(
    server: MCPServer[Any],
    verifier: TokenVerifier,
    *,
    path: str,
    security: TransportSecuritySettings,
    per_agent: int,
    idle_seconds: float,
    routes: Sequence[BaseRoute] = (),
    auth: AuthSettings | None = None,
) -> Starlette:
    """The SDK's streamable HTTP app (as `MCPServer.streamable_http_app` builds it with a
    token verifier) with `AgentSessions` as its session manager. With `auth` naming a
    resource (OAuth on), tokens issued for another resource are refused and a 401 names
    the resource's metadata, as the SDK's own app does."""
    resource = auth.resource_server_url if auth is not None else None
    sessions = AgentSessions(
        server._lowlevel_server,  # the SDK's own manager takes the same object
        per_agent=per_agent,
        security_settings=security,
        session_idle_timeout=idle_seconds,
    )
    endpoint = RequireAuthMiddleware(
        StreamableHTTPASGIApp(sessions),
        required_scopes=[],
        resource_metadata_url=build_resource_metadata_url(resource) if resource else None,
    )
    checked = resource if auth is not None and auth.validate_token_resource else None
    return Starlette(
        routes=[Route(path, endpoint=endpoint), *routes],
        middleware=[
            Middleware(
                AuthenticationMiddleware,
                backend=BearerAuthBackend(verifier, resource_server_url=checked),
            ),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lambda _app: sessions.run(),
    )


__all__ = ["AgentSessions", "SseStreams", "limit_sse_streams", "refused", "streamable_app"]
