"""Streamable HTTP sessions, bounded per bearer token.

The SDK's session manager keeps up to 10,000 sessions for 30 idle minutes and then answers
every new `initialize` with 503: one token that opens sessions without closing them locks
every other agent out (issue 21). Here each token keeps at most `per_token` sessions; a new
one beyond that closes the token's oldest (its id answers 404 from then on, as an expired
one does, and clients open a new session on 404), so a token can only push out its own
sessions. Idle sessions (no request in flight, no open GET stream) close after
`session_idle_timeout`, as in the SDK.

`TokenSessions` extends the SDK's manager at its two bookkeeping points, `_admit_session`
(a new session, under the manager's creation lock) and `_discard_session` (however a
session ends: DELETE, idle expiry, a failed opening request, shutdown), and hands the
session of a request to `caller_of` on the one path where the SDK has checked it
(`_handle_stateful_request`). The SDK builds its
manager inside `streamable_http_app` with no way to pass a subclass, so `streamable_app`
assembles the same Starlette app (bearer auth, the MCP route, the extra routes) around
ours. tests/http/test_token_sessions.py holds it to the SDK with real sessions."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import (
    AuthorizationContext,
    BearerAuthBackend,
    RequireAuthMiddleware,
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
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from memory_mcp.auth.tokens import token_hash
from memory_mcp.mcp.identity import in_mcp_session

log = logging.getLogger(__name__)


def _request_token() -> str | None:
    """Whose sessions the request's count against: its bearer token's hash, or its OAuth
    grant (StoreTokenVerifier's subject; a refreshed access token is the same grant, so
    refreshing makes no room). None without a token."""
    access = get_access_token()
    return None if access is None else access.subject or token_hash(access.token)


class TokenSessions(StreamableHTTPSessionManager):
    """The SDK's session manager with at most `per_token` sessions per bearer token."""

    def __init__(self, app: Any, *, per_token: int, **options: Any) -> None:
        if per_token < 1:
            raise ValueError("per_token must be at least 1")
        super().__init__(app, **options)
        self.per_token = per_token
        # token hash -> its open sessions, oldest first (a dict keeps insertion order)
        self._opened_by: dict[str, dict[str, None]] = {}
        self._token_of: dict[str, str] = {}

    async def _handle_stateful_request(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The MCP session for `caller_of`: on this path the SDK serves a request that
        names a session only inside that session, once it has checked that the session is
        open and was opened with the same token (StoreTokenVerifier's subject); anything
        else gets 404 and reaches no tool. A request of the stateless protocol takes the
        other path, where a header is not checked, and so has no session."""
        with in_mcp_session(Headers(scope=scope).get(MCP_SESSION_ID_HEADER)):
            await super()._handle_stateful_request(scope, receive, send)

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        token = _request_token()
        if token is None:  # not behind our bearer auth: nothing to count by
            return super()._admit_session(requestor)
        while len(self._opened_by.get(token, ())) >= self.per_token:
            self._close(next(iter(self._opened_by[token])))
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._opened_by.setdefault(token, {})[transport.mcp_session_id] = None
            self._token_of[transport.mcp_session_id] = token
        return transport

    def _close(self, session_id: str) -> None:
        """Close a session to make room: forgotten now (its id answers 404 from this
        moment, as in `_discard_session`), its transport terminated by a task."""
        self._forget(session_id)
        transport = self._server_instances.pop(session_id, None)
        self._session_owners.pop(session_id, None)
        log.info(
            "closed session %s: its token opened more than %d", session_id[:12], self.per_token
        )
        if transport is not None and self._task_group is not None:
            self._task_group.start_soon(self._discard_session, session_id, transport)

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        self._forget(session_id)
        await super()._discard_session(session_id, transport)

    def _forget(self, session_id: str) -> None:
        token = self._token_of.pop(session_id, None)
        if token is None:
            return
        opened = self._opened_by.get(token, {})
        opened.pop(session_id, None)
        if not opened:
            self._opened_by.pop(token, None)


def streamable_app(
    server: MCPServer[Any],
    verifier: TokenVerifier,
    *,
    path: str,
    security: TransportSecuritySettings,
    per_token: int,
    idle_seconds: float,
    routes: Sequence[BaseRoute] = (),
    auth: AuthSettings | None = None,
) -> Starlette:
    """The SDK's streamable HTTP app (as `MCPServer.streamable_http_app` builds it with a
    token verifier) with `TokenSessions` as its session manager. With `auth` naming a
    resource (OAuth on), tokens issued for another resource are refused and a 401 names
    the resource's metadata, as the SDK's own app does."""
    resource = auth.resource_server_url if auth is not None else None
    sessions = TokenSessions(
        server._lowlevel_server,  # the SDK's own manager takes the same object
        per_token=per_token,
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


__all__ = ["TokenSessions", "streamable_app"]
