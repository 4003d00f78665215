"""`memory-mcp serve --transport streamable-http|sse`: one process serving many agents over
HTTP with one store, one embedding model and one vector index.

The protocol is the SDK's own (its streamable HTTP app at /mcp, its SSE app at /sse and
/messages/), run by uvicorn. What this module adds: bearer tokens checked against the store
on every request (401 without a valid one; the SDK's `RequireAuthMiddleware`), the MCP
session id handed to `caller_of`, `/healthz`, and a refusal to listen beyond loopback
while no token exists."""

from __future__ import annotations

import logging

import uvicorn
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp

from memory_mcp import __version__
from memory_mcp.app import AppContext, open_app
from memory_mcp.binding import (
    SHUTDOWN_GRACE_SECONDS,
    is_loopback,
    is_wildcard,
    refuse_open_network,
)
from memory_mcp.errors import MemoryMcpError
from memory_mcp.http.index_note import add_note_tool
from memory_mcp.mcp.identity import ConnectionSession, StoreTokenVerifier
from memory_mcp.mcp.server import build_server
from memory_mcp.settings import Settings

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
HEALTH_PATH = "/healthz"


def transport_security(settings: Settings) -> TransportSecuritySettings | None:
    """The SDK turns its DNS-rebinding check (Host and Origin headers) on by itself for a
    loopback host (None here). For another host it accepts that host and loopback, plus
    --allowed-hosts; bound to all interfaces with no --allowed-hosts there is no name
    to check against, and the bearer token is the only gate (logged)."""
    if is_loopback(settings.host):
        return None
    names = list(settings.allowed_hosts)
    if not is_wildcard(settings.host):
        names.append(f"[{settings.host}]" if ":" in settings.host else settings.host)
    if not names:
        log.warning(
            "listening on %s without --allowed-hosts: the Host/Origin check is off",
            settings.host,
        )
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names += ["127.0.0.1", "localhost", "[::1]"]
    return TransportSecuritySettings(
        allowed_hosts=[f"{name}:*" for name in names] + names,
        allowed_origins=[f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")]
        + [f"{scheme}://{name}" for name in names for scheme in ("http", "https")],
    )


def http_app(settings: Settings, app: AppContext) -> ASGIApp:
    """The SDK's app for the transport, every MCP route behind a bearer token."""
    auth = AuthSettings(
        issuer_url=f"http://{settings.host}:{settings.port}",  # required; no OAuth routes
        resource_server_url=None,
    )
    server = build_server(
        settings, opened=app, auth=auth, token_verifier=StoreTokenVerifier(app.tokens)
    )
    add_note_tool(server)  # the PostToolUse hook of agents on other machines
    from memory_mcp.web.ui_server import web_routes  # here: the web view imports this module

    for route in web_routes(settings, app):  # the read-only web view at /ui, same tokens
        server.custom_route(route.path, route.methods)(route.endpoint)

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

    # Registered by a call, not as a decorator: the SDK's custom_route has no return
    # annotation, which would make `healthz` untyped for mypy.
    server.custom_route(HEALTH_PATH, methods=["GET"])(healthz)

    security = transport_security(settings)
    if settings.transport == "sse":
        starlette = server.sse_app(
            sse_path=SSE_PATH,
            message_path=MESSAGES_PATH,
            transport_security=security,
            host=settings.host,
        )
    else:
        starlette = server.streamable_http_app(
            streamable_http_path=MCP_PATH, transport_security=security, host=settings.host
        )
    return ConnectionSession(starlette)


async def serve_http(settings: Settings) -> None:
    await refuse_open_network(settings)
    async with open_app(settings) as app:  # one store, model and index for every agent
        config = uvicorn.Config(
            http_app(settings, app),
            host=settings.host,
            port=settings.port,
            log_level="info",
            access_log=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
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
        await uvicorn.Server(config).serve()


__all__ = ["HEALTH_PATH", "MCP_PATH", "SSE_PATH", "http_app", "is_loopback", "serve_http"]
