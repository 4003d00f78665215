"""Who is asking, per request. Over stdio: the agent the server was started as (settings).
Over HTTP: the agent and role of the request's bearer token, never a flag or a header the
caller could set, and the MCP session of its connection as the memory `session` scope.

The SDK's bearer middleware puts the verified token in a context variable
(`get_access_token`); the SDK hands each message's context variables on to the task that
handles it, so tools, prompts and the memory://context resource all see the token of the
request they answer. `ConnectionSession` does the same for the MCP session id."""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from starlette.types import ASGIApp, Receive, Scope, Send

from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import Caller, Role

if TYPE_CHECKING:  # the stdio server imports this module before it opens the store
    from memory_mcp.app import AppContext
    from memory_mcp.tokens import AgentTokens

ROLE_CLAIM = "memory_mcp_role"
SESSION_HEADER = b"mcp-session-id"  # streamable HTTP
SESSION_QUERY = "session_id"  # SSE: POST /messages/?session_id=...

_mcp_session: ContextVar[str | None] = ContextVar("memory_mcp_session", default=None)


class StoreTokenVerifier:
    """The SDK's `TokenVerifier`: a token is valid while its hash is in the store."""

    def __init__(self, tokens: AgentTokens) -> None:
        self._tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        holder = await self._tokens.verify(token)
        if holder is None:
            return None
        return AccessToken(
            token=token,
            client_id=holder.agent_id,  # the SDK binds each MCP session to this principal
            scopes=[],
            claims={ROLE_CLAIM: holder.role.value},
        )


class ConnectionSession:
    """ASGI middleware: the MCP session id of the request, for `caller_of`. The SDK
    routes a request by this id to its own connection only after checking that the
    session belongs to the same token holder, so it cannot name someone else's."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session = _session_of(scope) if scope["type"] == "http" else None
        reset = _mcp_session.set(session)
        try:
            await self.app(scope, receive, send)
        finally:
            _mcp_session.reset(reset)


def _session_of(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == SESSION_HEADER:
            return str(value.decode("latin-1"))
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    values = query.get(SESSION_QUERY)
    return values[0] if values else None


def caller_of(app: AppContext) -> Caller:
    """The caller of the request being handled."""
    access = get_access_token()
    if access is None:
        if app.settings.transport == "stdio":
            return app.caller
        # Unreachable behind the SDK's RequireAuthMiddleware; never fall back to the
        # server's own identity over the network.
        raise PermissionDeniedError("this request carries no valid bearer token")
    role = Role((access.claims or {}).get(ROLE_CLAIM, Role.WORKER.value))
    # A client of the stateless 2026-07-28 protocol has no MCP session: its session
    # scope lasts one request.
    session = _mcp_session.get() or f"request-{uuid.uuid4().hex[:12]}"
    return Caller(access.client_id, role, session[:128])


__all__ = ["ConnectionSession", "StoreTokenVerifier", "caller_of"]
