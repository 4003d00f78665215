"""`memory-mcp serve --transport streamable-http|sse`: one process serving many agents over
HTTP with one store, one embedding model and one vector index.

The protocol is the SDK's own (its streamable HTTP app at /mcp, its SSE app at /sse and
/messages/), run by uvicorn. What this module adds: bearer tokens checked against the store
on every request (401 without a valid one; the SDK's `RequireAuthMiddleware`), the MCP
session id handed to `caller_of`, MCP sessions (streamable HTTP sessions, SSE
connections) bounded per agent (agent_sessions.py), a log that a flood cannot grow
without bound (rates.py), each connection's current project (`X-Memory-Project`, or
`?project=`: mcp/identity.py, checked against the token's grants), `/healthz`, a refusal
to listen beyond loopback while no token exists, and with --oauth the SDK's OAuth
authorization server for itself (oauth_provider.py) beside the bearer tokens."""

from __future__ import annotations

import logging
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from memory_mcp import __version__
from memory_mcp.app.binding import (
    SHUTDOWN_GRACE_SECONDS,
    is_loopback,
    is_wildcard,
    refuse_open_network,
)
from memory_mcp.app.context import AppContext
from memory_mcp.errors import MemoryMcpError
from memory_mcp.http.agent_sessions import limit_sse_streams, streamable_app
from memory_mcp.http.index_note import add_note_tool
from memory_mcp.http.oauth_provider import issuer_of, oauth_routes
from memory_mcp.http.rates import budget_logs
from memory_mcp.mcp.identity import (
    ConnectionProject,
    ProjectGrant,
    SseSession,
    StoreTokenVerifier,
)
from memory_mcp.notes.folders import say_why_no_personal_folder
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener

log = logging.getLogger(__name__)

# Descriptors kept for the store (each SQLite connection holds three files), the model,
# the notes watcher and the log, whatever the connections take.
RESERVED_DESCRIPTORS = 128
MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
HEALTH_PATH = "/healthz"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding check (Host and Origin headers): on a loopback host the
    loopback names (what the SDK sets by itself for 127.0.0.1, localhost and ::1; here for
    every loopback address). For another host it accepts that host and loopback, plus
    --allowed-hosts; bound to all interfaces with no --allowed-hosts there is no name
    to check against, and the bearer token is the only gate (logged). --public-url's host
    is accepted too."""
    names = list(settings.allowed_hosts)
    if is_loopback(settings.host):
        names = []
    elif not names and is_wildcard(settings.host):
        log.warning(
            "listening on %s without --allowed-hosts: the Host/Origin check is off",
            settings.host,
        )
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    if settings.public_host:  # behind a reverse proxy that keeps the Host header
        names.append(settings.public_host)
    if not is_wildcard(settings.host):
        names.append(f"[{settings.host}]" if ":" in settings.host else settings.host)
    names += [name for name in LOOPBACK_NAMES if name not in names]
    return TransportSecuritySettings(
        allowed_hosts=[f"{name}:*" for name in names] + names,
        allowed_origins=[f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")]
        + [f"{scheme}://{name}" for name in names for scheme in ("http", "https")],
    )


class McpServerFor(Protocol):
    """mcp/server.py's build_server, for an app opened by this server and its auth."""

    def __call__(
        self,
        settings: Settings,
        *,
        opened: AppContext,
        auth: AuthSettings,
        token_verifier: StoreTokenVerifier,
    ) -> MCPServer[Any]: ...


# The web view's routes for the open app (web/ui_server.py's `view_routes`); `sign_in`: with
# the OAuth sign-in page.
WebRoutesFor = Callable[[Settings, AppContext, bool], list[BaseRoute]]


@dataclass(frozen=True)
class HostedParts:
    """What the team server hosts beside its own routes, handed over by its caller
    (cli/launch.py): the MCP server and the web view are other ways in, so this module
    does not import them."""

    mcp_server: McpServerFor
    web_routes: WebRoutesFor


def http_app(settings: Settings, app: AppContext, parts: HostedParts) -> ASGIApp:
    """The SDK's app for the transport, every MCP route behind a bearer token (with
    --oauth, an OAuth access token of this server too: http/oauth_provider.py)."""
    path = SSE_PATH if settings.transport == "sse" else MCP_PATH
    oauth = oauth_routes(settings, app.oauth, path) if settings.oauth else None
    if oauth is None:
        auth = AuthSettings(
            issuer_url=f"http://{settings.host}:{settings.port}",  # required; no OAuth routes
            resource_server_url=None,
        )
        verifier = StoreTokenVerifier(app.tokens)
    else:
        auth = oauth.auth
        verifier = StoreTokenVerifier(app.tokens, app.oauth, oauth.resource)
    server = parts.mcp_server(settings, opened=app, auth=auth, token_verifier=verifier)
    add_note_tool(server)  # the PostToolUse hook of agents on other machines

    async def healthz(_request: Request) -> Response:
        """Up or not, nothing more: no counts, paths or agent names."""
        try:
            await app.tokens.exist()
            store = "up"
        except MemoryMcpError:
            store = "down"
        model = "up" if app.service.embedder.is_ready() else "loading"
        status = 200 if store == "up" and model == "up" else 503
        return JSONResponse({"store": store, "model": model, "version": __version__}, status)

    # Beside the MCP routes, outside their bearer check: /healthz, and the read-only web
    # view at /ui with its own check of the same tokens.
    routes: list[BaseRoute] = [Route(HEALTH_PATH, healthz, methods=["GET"])]
    routes += parts.web_routes(settings, app, oauth is not None)
    if oauth is not None:  # the SDK's authorization server routes, outside the bearer check
        routes += oauth.server_routes
    security = transport_security(settings)
    if settings.transport == "sse":
        starlette = server.sse_app(
            sse_path=SSE_PATH,
            message_path=MESSAGES_PATH,
            transport_security=security,
            host=settings.host,
        )
        starlette.router.routes.extend(routes)  # (the SDK adds the resource metadata)
        per_agent, idle = settings.max_sessions_per_agent, settings.session_idle_seconds
        limit_sse_streams(starlette, SSE_PATH, per_agent, idle)
        _granted_projects_only(starlette, (SSE_PATH, MESSAGES_PATH.rstrip("/")))
        return ConnectionProject(SseSession(starlette))
    streamable = streamable_app(
        server,
        verifier,
        path=MCP_PATH,
        security=security,
        per_agent=settings.max_sessions_per_agent,
        idle_seconds=settings.session_idle_seconds,
        routes=[*routes, *(oauth.resource_routes if oauth is not None else [])],
        auth=auth,
    )
    _granted_projects_only(streamable, (MCP_PATH,))
    return ConnectionProject(streamable)


def _granted_projects_only(app: Starlette, paths: tuple[str, ...]) -> None:
    """Put `ProjectGrant` on the MCP routes at `paths` (behind the app's bearer check:
    the route knows the token)."""
    for route in app.router.routes:
        if isinstance(route, Route | Mount) and route.path in paths:
            route.app = ProjectGrant(route.app)


def connection_limit() -> int:
    """Open connections uvicorn keeps before it answers 503: the process's descriptor
    limit less RESERVED_DESCRIPTORS. A burst of connections beyond that is refused at the
    door, instead of taking the descriptors the store needs ("unable to open database
    file", for every agent) while the per-agent caps (agent_sessions.py) bound what any
    one agent holds."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 65_536
    return max(16, soft - RESERVED_DESCRIPTORS)


async def serve_http(settings: Settings, open_app: AppOpener, parts: HostedParts) -> None:
    if settings.oauth:
        issuer_of(settings)  # a bad --public-url fails before anything opens
    await refuse_open_network(settings, open_app)
    async with open_app(settings) as app:  # one store, model and index for every agent
        config = uvicorn.Config(
            http_app(settings, app, parts),
            host=settings.host,
            port=settings.port,
            log_level="info",
            access_log=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
            limit_concurrency=connection_limit(),
        )
        budget_logs()  # uvicorn's handlers exist once its Config is made
        path = SSE_PATH if settings.transport == "sse" else MCP_PATH
        log.info(
            "memory-mcp %s on http://%s:%d%s (%s), store %s",
            __version__,
            settings.host,
            settings.port,
            path,
            settings.transport,
            settings.database_url,
        )
        if settings.oauth:
            log.info("OAuth on: connectors add %s%s", settings.public_base_url, path)
        say_why_no_personal_folder(settings)
        await uvicorn.Server(config).serve()


__all__ = [
    "HEALTH_PATH",
    "MCP_PATH",
    "SSE_PATH",
    "HostedParts",
    "http_app",
    "is_loopback",
    "serve_http",
]
