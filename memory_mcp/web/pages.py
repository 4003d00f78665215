"""The pages of the web view, as Starlette endpoints over MemoryService.

Every page is a GET that only reads, answered for the caller the token stands for
(access.py) through the service, whose rules decide what that agent may see: the same
answers as its MCP tools. Templates are Jinja2 with autoescape on for every template."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from memory_mcp import __version__
from memory_mcp import validation as v
from memory_mcp.app import AppContext
from memory_mcp.errors import InvalidInputError, MemoryMcpError, NotFoundError
from memory_mcp.models import Caller, Scope, Source
from memory_mcp.web.access import (
    COOKIE,
    PREFIX,
    caller_of,
    clear_login_cookie,
    host_allowed,
    same_origin,
    set_login_cookie,
    with_security_headers,
)
from memory_mcp.web.views import memory_page, memory_row, when

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 20
MAX_FORM_BYTES = 4096  # the login form holds one token
Endpoint = Callable[[Request], Awaitable[Response]]
Page = Callable[[Request, Caller], Awaitable[Response]]


@dataclass(frozen=True)
class WebRoute:
    path: str
    methods: list[str]
    endpoint: Endpoint


@dataclass(frozen=True)
class Filters:
    """The search form's fields, checked by the same rules as the tools' arguments."""

    query: str = ""
    scope: Scope | None = None
    tags: list[str] = field(default_factory=list)
    source: Source | None = None
    limit: int = DEFAULT_LIMIT

    @classmethod
    def from_query(cls, params: QueryParams) -> Filters:
        def text(name: str) -> str:
            return params.get(name, "").strip()

        tags = [tag for tag in text("tag").split(",") if tag.strip()]
        limit = text("limit")
        if limit and not limit.isdigit():
            raise InvalidInputError("limit", f"{limit!r} is not a whole number")
        return cls(
            query=text("q"),
            scope=v.parse_scope(text("scope") or "all", allow_all=True),
            tags=v.clean_tags(tags),
            source=v.parse_source(text("source"), tuple(Source)) if text("source") else None,
            limit=v.clean_limit(int(limit) if limit else DEFAULT_LIMIT),
        )

    def form(self) -> dict[str, str]:
        """The values to show in the form again."""
        return {
            "q": self.query,
            "scope": self.scope.value if self.scope else "all",
            "tag": ", ".join(self.tags),
            "source": self.source.value if self.source else "",
            "limit": str(self.limit),
        }


class WebPages:
    def __init__(self, app: AppContext, host_names: frozenset[str] | None) -> None:
        self.app = app
        self.host_names = host_names
        self.templates = Environment(
            loader=PackageLoader("memory_mcp.web", "templates"),
            autoescape=True,  # every template, whatever its name: values are untrusted
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters["when"] = when
        self.stylesheet = files("memory_mcp.web").joinpath("static/style.css").read_text()

    def routes(self) -> list[WebRoute]:
        return [
            WebRoute(PREFIX, ["GET"], self._guarded(self.index)),
            WebRoute(f"{PREFIX}/", ["GET"], self._guarded(self.index)),
            WebRoute(f"{PREFIX}/memory/{{memory_id:int}}", ["GET"], self._guarded(self.memory)),
            WebRoute(f"{PREFIX}/login", ["GET"], self._open(self.login_form)),
            WebRoute(f"{PREFIX}/login", ["POST"], self._open(self.login)),
            WebRoute(f"{PREFIX}/logout", ["POST"], self._open(self.logout)),
            WebRoute(f"{PREFIX}/style.css", ["GET"], self._open(self.style)),
        ]

    # -- the pages ---------------------------------------------------------------------------

    async def index(self, request: Request, caller: Caller) -> Response:
        """Search with a query; without one, the latest memories."""
        try:
            filters = Filters.from_query(request.query_params)
        except InvalidInputError as exc:
            return self._render("index.html", caller, 400, filters=Filters(), error=str(exc))
        service = self.app.service
        now = service.clock()
        notices: list[str] = []
        if filters.query:
            result = await service.search(
                caller, filters.query, filters.limit, filters.scope, filters.tags, filters.source
            )
            rows = [memory_row(hit.record, now, hit) for hit in result.hits]
            notices = result.notices
        else:
            records = await service.recent_visible(caller, filters.limit)
            rows = [memory_row(record, now) for record in records]
        return self._render("index.html", caller, filters=filters, rows=rows, notices=notices)

    async def memory(self, request: Request, caller: Caller) -> Response:
        record = await self.app.service.get(caller, request.path_params["memory_id"])
        page = memory_page(record, self.app.service.clock())
        return self._render("memory.html", caller, memory=page)

    async def login_form(self, request: Request) -> Response:
        return self._login_page(200)

    async def login(self, request: Request) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site login refused", 403)
        form = await _small_form(request)
        token = form.get("token", "").strip()
        if not token or await self.app.tokens.verify(token) is None:
            return self._login_page(401, "That token is not valid (unknown, or revoked).")
        response = RedirectResponse(f"{PREFIX}/", 303)
        set_login_cookie(response, request, token)
        return response

    async def logout(self, request: Request) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site logout refused", 403)
        response = RedirectResponse(f"{PREFIX}/login", 303)
        clear_login_cookie(response)
        return response

    async def style(self, request: Request) -> Response:
        return Response(self.stylesheet, media_type="text/css")

    # -- around every page -------------------------------------------------------------------

    def _open(self, handler: Endpoint) -> Endpoint:
        """A route anyone may reach (the login form, the stylesheet)."""

        async def endpoint(request: Request) -> Response:
            if not host_allowed(request, self.host_names):
                return with_security_headers(PlainTextResponse("unknown Host", 421))
            try:
                return with_security_headers(await handler(request))
            except MemoryMcpError as exc:
                return with_security_headers(PlainTextResponse(str(exc), _status_of(exc)))

        return endpoint

    def _guarded(self, page: Page) -> Endpoint:
        """A route for the holder of a valid token only; the service's errors become a
        page that names the problem."""

        async def endpoint(request: Request) -> Response:
            if not host_allowed(request, self.host_names):
                return with_security_headers(PlainTextResponse("unknown Host", 421))
            caller: Caller | None = None
            try:
                caller = await caller_of(request, self.app.tokens)
                if caller is None:
                    response = self._login_page(401, _refusal(request))
                    if COOKIE in request.cookies:
                        clear_login_cookie(response)  # revoked: forget it
                    return with_security_headers(response)
                async with self.app.turns:
                    return with_security_headers(await page(request, caller))
            except MemoryMcpError as exc:
                return with_security_headers(self._error_page(exc, caller))
            except Exception:  # the edge: log it, show nothing of it
                log.exception("unexpected failure in a web page")
                return with_security_headers(PlainTextResponse("internal error", 500))

        return endpoint

    def _render(
        self, name: str, caller: Caller | None, status: int = 200, **context: Any
    ) -> HTMLResponse:
        html = self.templates.get_template(name).render(
            prefix=PREFIX,
            version=__version__,
            agent=caller.agent_id if caller else None,
            role=caller.role.value if caller else None,
            **context,
        )
        return HTMLResponse(html, status)

    def _login_page(self, status: int, error: str | None = None) -> HTMLResponse:
        return self._render("login.html", None, status, error=error)

    def _error_page(self, exc: MemoryMcpError, caller: Caller | None) -> HTMLResponse:
        return self._render("error.html", caller, _status_of(exc), message=str(exc))


def _refusal(request: Request) -> str | None:
    """Why a page is refused, when a token was given (none given: just the form)."""
    if "authorization" in request.headers or COOKIE in request.cookies:
        return "That token is not valid (unknown, or revoked)."
    return None


def _status_of(exc: MemoryMcpError) -> int:
    if isinstance(exc, InvalidInputError):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    return 503  # the store is busy or down: worth a retry


async def _small_form(request: Request) -> dict[str, str]:
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


__all__ = ["Filters", "WebPages", "WebRoute"]
