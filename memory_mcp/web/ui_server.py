"""`memory-mcp ui`: the web view in its own process (uvicorn), on 127.0.0.1 by default.

It opens the store like `serve` does (the model loads in the background for search by
meaning; no note folders are watched: the view only reads) and listens beyond loopback
only once the store has a token, the same refusal as the HTTP team server's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from memory_mcp import __version__
from memory_mcp.app.binding import SHUTDOWN_GRACE_SECONDS, refuse_open_network
from memory_mcp.app.context import AppContext
from memory_mcp.auth.oauth import SIGN_IN_PATH
from memory_mcp.settings import Settings
from memory_mcp.web.access import PREFIX, allowed_host_names
from memory_mcp.web.authorize_page import SignInPage
from memory_mcp.web.pages import WebPages, WebRoute

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener

log = logging.getLogger(__name__)

DEFAULT_PORT = 8766  # next to the team server's 8765


def web_routes(settings: Settings, app: AppContext, sign_in: bool = False) -> list[WebRoute]:
    """The pages, for this process's store and Host names (also mounted by the team
    server, http/team_server.http_app, which adds the OAuth sign-in page with `sign_in`)."""
    pages = WebPages(app, allowed_host_names(settings))
    if not sign_in:
        return pages.routes()
    page = SignInPage(app, pages.templates, pages.host_names, settings.public_base_url)
    signing_in = page.endpoints().items()
    return pages.routes() + [WebRoute(SIGN_IN_PATH, [m], e) for m, e in signing_in]


def view_routes(settings: Settings, app: AppContext, sign_in: bool) -> list[BaseRoute]:
    """web_routes as Starlette routes, for the team server to mount beside its own."""
    return [
        Route(r.path, r.endpoint, methods=r.methods) for r in web_routes(settings, app, sign_in)
    ]


async def _to_the_view(_request: Request) -> Response:
    return RedirectResponse(f"{PREFIX}/", 303)


def web_app(settings: Settings, app: AppContext) -> Starlette:
    routes = [Route(r.path, r.endpoint, methods=r.methods) for r in web_routes(settings, app)]
    return Starlette(routes=[*routes, Route("/", _to_the_view, methods=["GET"])])


async def serve_ui(settings: Settings, port: int, open_app: AppOpener) -> None:
    settings = settings.model_copy(update={"watch": False})
    await refuse_open_network(settings, open_app)
    async with open_app(settings) as app:
        config = uvicorn.Config(
            web_app(settings, app),
            host=settings.host,
            port=port,
            log_level="info",
            access_log=False,  # URLs carry search words
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        log.info(
            "memory-mcp %s web view on http://%s:%d%s/, store %s",
            __version__,
            settings.host,
            port,
            PREFIX,
            settings.database_url,
        )
        await uvicorn.Server(config).serve()


__all__ = ["DEFAULT_PORT", "serve_ui", "view_routes", "web_app", "web_routes"]
