"""The commands that hand the process over to another way in: `serve` (the MCP server over
stdio, or the team server over HTTP), `ui` (the web view) and `hook` (a Claude Code hook).
These are the CLI's only imports of another edge, each inside its handler, so loading the
CLI loads none of them. This is also where the parts meet: each server gets the app's
opener, and the team server the MCP server and the web view it hosts, from here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp import __version__
from memory_mcp.app.opener import open_app_when_called
from memory_mcp.cli.common import settings_from

if TYPE_CHECKING:
    import argparse


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    import anyio

    settings = settings_from(args)
    if settings.transport != "stdio":
        from memory_mcp.http.team_server import HostedParts, serve_http
        from memory_mcp.mcp.server import build_server
        from memory_mcp.web.ui_server import view_routes

        parts = HostedParts(mcp_server=build_server, web_routes=view_routes)
        try:
            anyio.run(serve_http, settings, open_app_when_called, parts)
        except KeyboardInterrupt:
            return 130
        return 0
    from memory_mcp.app.background import HandshakeGate
    from memory_mcp.app.startup import check_store_opens
    from memory_mcp.mcp.server import build_server, serve_stdio

    logging.getLogger("memory_mcp").info(
        "memory-mcp %s serving agent %r (%s), session %s, store %s",
        __version__,
        settings.agent_id,
        settings.role.value,
        settings.session_id,
        settings.database_url,
    )
    check_store_opens(settings)  # a bad --db is one line on stderr, not a crash
    handshake = HandshakeGate()  # the store opens once the client has its answer
    server = build_server(settings, handshake=handshake, open_app=open_app_when_called)
    try:
        anyio.run(serve_stdio, server, handshake)
    except KeyboardInterrupt:  # Ctrl-C: everything has been closed by now
        logging.getLogger("memory_mcp").info("stopped (Ctrl-C)")
        return 130
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    from memory_mcp.hooks.runner import main

    return main([args.event], open_app=open_app_when_called)


def cmd_ui(args: argparse.Namespace) -> int:
    import anyio

    from memory_mcp.web.ui_server import serve_ui

    try:
        anyio.run(serve_ui, settings_from(args), args.port, open_app_when_called)
    except KeyboardInterrupt:
        return 130
    return 0
