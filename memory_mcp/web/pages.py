"""The pages of the web view, as Starlette endpoints over MemoryService.

Every page is a GET that only reads, answered for the caller the token stands for
(access.py) through the service, whose rules decide what that agent may see: the same
answers as its MCP tools. Templates are Jinja2 with autoescape on for every template.
One change: a lead approves a memory held for approval (rules/quarantine.py), a POST
from this site's own page (its Origin checked, as the login's), decided by the service."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from memory_mcp import __version__
from memory_mcp.app.context import AppContext
from memory_mcp.auth.tokens import token_hash
from memory_mcp.checks import validation as v
from memory_mcp.errors import (
    InvalidInputError,
    MemoryMcpError,
    NotFoundError,
    PermissionDeniedError,
)
from memory_mcp.models import Caller, SearchRequest
from memory_mcp.rules.browsing import ListFilters
from memory_mcp.web.access import (
    COOKIE,
    PREFIX,
    caller_of,
    clear_login_cookie,
    host_allowed,
    same_origin,
    set_login_cookie,
    small_form,
    with_security_headers,
)
from memory_mcp.web.logins import WebLogins
from memory_mcp.web.views import memory_page, memory_row, quarantined_row, version_row, when

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 20
MAX_FIELD_CHARS = 2_000  # a query's limit; the service names the field that is too long
Endpoint = Callable[[Request], Awaitable[Response]]
Page = Callable[[Request, Caller], Awaitable[Response]]


def whole_number_or_none(name: str, text: str) -> int | None:
    """A query parameter that must be a whole number, or None when it is empty."""
    if not text:
        return None
    if len(text) > 18 or not v.is_digits(text):
        raise InvalidInputError(name, f"{text[:40]!r} is not a whole number")
    return int(text)


@dataclass(frozen=True)
class WebRoute:
    path: str
    methods: list[str]
    endpoint: Endpoint


@dataclass(frozen=True)
class Filters:
    """The search form's fields as given (strings), for the form and the links; checked
    by the service's own rules when used (`listing`), so a bad one is named the same way
    as in a tool's arguments."""

    query: str = ""
    # A project (with `*`'s memories); `*`: the shared memories alone; empty: every
    # project the caller reads.
    project: str = ""
    scope: str = "all"
    tag: str = ""  # comma-separated
    source: str = ""
    agent: str = ""
    since: str = ""
    until: str = ""
    expired: bool = False
    cursor: str = ""
    limit: int = DEFAULT_LIMIT

    @classmethod
    def from_query(cls, params: QueryParams) -> Filters:
        def text(name: str) -> str:
            return params.get(name, "").strip()[:MAX_FIELD_CHARS]

        limit = whole_number_or_none("limit", text("limit"))
        return cls(
            query=text("q"),
            project=text("project"),
            scope=text("scope") or "all",
            tag=text("tag"),
            source=text("source"),
            agent=text("agent"),
            since=text("since"),
            until=text("until"),
            expired=text("expired") == "1",
            cursor=text("cursor"),
            limit=v.clean_limit(DEFAULT_LIMIT if limit is None else limit),
        )

    def listing(self, now: float) -> ListFilters:
        return ListFilters.parse(
            now=now,
            scope=self.scope,
            tags=[tag for tag in self.tag.split(",") if tag.strip()],
            source=self.source or None,
            agent_id=self.agent or None,
            since=self.since or None,
            until=self.until or None,
            include_expired=self.expired,
            project=self.project or "*",
            project_alone=self.project == "*",
        )

    def link(self, **changes: Any) -> str:
        """This page's URL with `changes` (the next page: cursor=...)."""
        fields = {
            "q": self.query,
            "project": self.project,
            "scope": "" if self.scope == "all" else self.scope,
            "tag": self.tag,
            "source": self.source,
            "agent": self.agent,
            "since": self.since,
            "until": self.until,
            "expired": "1" if self.expired else "",
            "limit": "" if self.limit == DEFAULT_LIMIT else str(self.limit),
            "cursor": self.cursor,
        }
        fields.update(changes)
        return f"{PREFIX}/?" + urlencode({name: value for name, value in fields.items() if value})


class WebPages:
    def __init__(self, app: AppContext, host_names: frozenset[str] | None) -> None:
        self.app = app
        self.host_names = host_names
        self.logins = WebLogins()  # this process's browser logins
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
            WebRoute(f"{PREFIX}/quarantine", ["GET"], self._guarded(self.quarantine)),
            WebRoute(
                f"{PREFIX}/quarantine/{{memory_id:int}}/approve",
                ["POST"],
                self._guarded(self.approve),
            ),
            WebRoute(f"{PREFIX}/login", ["GET"], self._open(self.login_form)),
            WebRoute(f"{PREFIX}/login", ["POST"], self._open(self.login)),
            WebRoute(f"{PREFIX}/logout", ["POST"], self._open(self.logout)),
            WebRoute(f"{PREFIX}/style.css", ["GET"], self._open(self.style)),
        ]

    # -- the pages ---------------------------------------------------------------------------

    async def index(self, request: Request, caller: Caller) -> Response:
        """Search with a query; without one, every memory the caller may see, newest
        first, a page at a time."""
        filters = Filters()
        # The project filter's choices: the projects the caller may read.
        projects = sorted(await self.app.service.tasks.project_counts(caller))
        try:
            filters = Filters.from_query(request.query_params)
            listing = filters.listing(self.app.service.clock())
        except InvalidInputError as exc:
            return self._render(
                "index.html", caller, 400, filters=filters, projects=projects, error=str(exc)
            )
        if filters.query:
            return await self._search(caller, filters, listing, projects)
        page = await self.app.service.list_memories(
            caller, listing, cursor=filters.cursor or None, limit=filters.limit
        )
        now = self.app.service.clock()
        return self._render(
            "index.html",
            caller,
            filters=filters,
            projects=projects,
            rows=[
                memory_row(record, now, marks=self.app.service.trust_marks(record))
                for record in page.records
            ],
            next_page=filters.link(cursor=page.next_cursor) if page.next_cursor else None,
        )

    async def _search(
        self, caller: Caller, filters: Filters, listing: ListFilters, projects: list[str]
    ) -> Response:
        service = self.app.service
        # The search filters by time itself (before its cut) but has no owner filter: the
        # owner picks from its best MAX_SEARCH_LIMIT results, and the page says so.
        by_owner = listing.agent_id is not None
        request = SearchRequest(
            filters.query,
            limit=v.MAX_SEARCH_LIMIT if by_owner else filters.limit,
            scope=listing.scope,
            tags=list(listing.tags),
            source=listing.source,
            include_expired=listing.include_expired,
            since=filters.since or None,
            until=filters.until or None,
            project=listing.project,
            project_alone=listing.project_alone,
        )
        result = await service.search(caller, request)
        hits = result.hits
        notices = list(result.notices)
        if by_owner:
            hits = [hit for hit in hits if hit.record.agent_id == listing.agent_id]
            hits = hits[: filters.limit]
            notices.append(
                f"the agent filter picked these from the best {v.MAX_SEARCH_LIMIT} results; "
                "leave the query empty to list every memory of that agent"
            )
        now = service.clock()
        rows = [memory_row(hit.record, now, hit, service.trust_marks(hit.record)) for hit in hits]
        return self._render(
            "index.html", caller, filters=filters, projects=projects, rows=rows, notices=notices
        )

    async def memory(self, request: Request, caller: Caller) -> Response:
        memory_id = request.path_params["memory_id"]
        before = whole_number_or_none("before", request.query_params.get("before", "").strip())
        record = await self.app.service.get(caller, memory_id, count=False)  # only a look
        history = await self.app.service.history(caller, memory_id, before=before)
        now = self.app.service.clock()
        return self._render(
            "memory.html",
            caller,
            memory=memory_page(record, now, self.app.service.trust_marks(record)),
            versions=[version_row(version) for version in reversed(history.versions)],
            earlier=history.earlier,
            paged_back=before is not None,
        )

    async def quarantine(self, request: Request, caller: Caller) -> Response:
        """The memories held for approval, every agent's (the lead only: the service)."""
        records = await self.app.service.quarantine.held(caller)
        return self._render("quarantine.html", caller, rows=[quarantined_row(r) for r in records])

    async def approve(self, request: Request, caller: Caller) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site approval refused", 403)
        await self.app.service.quarantine.approve(caller, request.path_params["memory_id"])
        return RedirectResponse(f"{PREFIX}/quarantine", 303)

    async def login_form(self, request: Request) -> Response:
        return self._login_page(200)

    async def login(self, request: Request) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site login refused", 403)
        form = await small_form(request)
        token = form.get("token", "").strip()
        if not token or await self.app.tokens.verify(token) is None:
            return self._login_page(401, "That token is not valid (unknown, or revoked).")
        response = RedirectResponse(f"{PREFIX}/", 303)
        set_login_cookie(response, request, self.logins.start(token_hash(token)))
        return response

    async def logout(self, request: Request) -> Response:
        if not same_origin(request):
            return PlainTextResponse("cross-site logout refused", 403)
        self.logins.end(request.cookies.get(COOKIE, ""))
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
                caller = await caller_of(request, self.app.tokens, self.logins)
                if caller is None:
                    response = self._login_page(401, _refusal(request))
                    if COOKIE in request.cookies:  # ended, expired or revoked: forget it
                        self.logins.end(request.cookies[COOKIE])
                        clear_login_cookie(response)
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
    """Why a page is refused, when a token or a login was given (none: just the form)."""
    if "authorization" in request.headers:
        return "That token is not valid (unknown, or revoked)."
    if COOKIE in request.cookies:
        return "Your login has ended (logged out, expired, or its token revoked)."
    return None


def _status_of(exc: MemoryMcpError) -> int:
    if isinstance(exc, InvalidInputError):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, PermissionDeniedError):
        return 403
    return 503  # the store is busy or down: worth a retry


__all__ = ["Filters", "WebPages", "WebRoute"]
