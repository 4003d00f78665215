"""Hooks against a team server. With MEMORY_MCP_URL (…/mcp for streamable HTTP, …/sse for
SSE) and MEMORY_MCP_TOKEN set, a hook talks to that server as the token's agent instead of
opening a database file: the same answers every other agent of the team gets. A server it
cannot reach (down, refused token, too slow) is reported in one line on stderr by the
runner, and the hook still exits 0."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client as Client  # re-exported: the hooks name it in type hints only
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from memory_mcp.errors import MemoryMcpError
from memory_mcp.limits import JOB_BUDGET_SECONDS

T = TypeVar("T")
NO_MEMORIES = "<memories></memories>"
REFUSED = "the token was refused (401): check MEMORY_MCP_TOKEN"


class TeamServerError(MemoryMcpError):
    """The team server could not be reached, refused the token or failed the call."""


class ProjectRefusedError(TeamServerError):
    """The token is not granted the project the hook works in (its work tree's): the team
    server answered 403 at connect. The hook says so where the user sees it."""

    def __init__(self, message: str, project: str) -> None:
        super().__init__(message)
        self.project = project


# The connection's current project on a team server (http/team_server.py).
PROJECT_HEADER = "X-Memory-Project"


@asynccontextmanager
async def connect(url: str, token: str, project: str | None = None) -> AsyncIterator[Client]:
    """`project`: the connection's current project (None: the token's default)."""
    headers = {"Authorization": f"Bearer {token}"}
    if project is not None:
        headers[PROJECT_HEADER] = project
    async with AsyncExitStack() as stack:
        transport: Any
        if url.rstrip("/").endswith("/sse"):
            transport = sse_client(url, headers=headers, timeout=JOB_BUDGET_SECONDS)
        else:
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            transport = streamable_http_client(url, http_client=http)
        yield await stack.enter_async_context(
            Client(transport, mode="legacy", read_timeout_seconds=JOB_BUDGET_SECONDS)
        )


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, httpx2.HTTPStatusError) and exc.response.status_code == 401:
        return REFUSED
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def run_remote(
    endpoint: tuple[str, str], job: Callable[[Client], Awaitable[T]], project: str | None = None
) -> T:
    url, token = endpoint

    async def runner() -> T:
        with anyio.fail_after(JOB_BUDGET_SECONDS):
            async with connect(url, token, project) as client:
                return await job(client)

    try:
        return anyio.run(runner)
    except (OSError, TimeoutError, httpx2.HTTPError, MCPError, BaseExceptionGroup) as exc:
        refused = None if project is None else _project_refused(url, token, project)
        if refused is not None and project is not None:
            raise ProjectRefusedError(
                f"the team server at {url} refused project {project!r}: {refused}", project
            ) from exc
        reason = REFUSED if _token_refused(url, token) else _reason(exc)
        raise TeamServerError(f"cannot use the team server at {url}: {reason}") from exc


def _project_refused(url: str, token: str, project: str) -> str | None:
    """The server's reason when it refuses the project for this token (403 at connect,
    mcp/identity.py's ProjectGrant), else None."""
    headers = {"Authorization": f"Bearer {token}", PROJECT_HEADER: project}
    try:
        response = httpx2.post(url, headers=headers, timeout=2)
    except httpx2.HTTPError:
        return None
    if response.status_code != 403:
        return None
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:200] or "403"


def _token_refused(url: str, token: str) -> bool:
    """The streamable HTTP client reports a 401 as a bare "error response": ask again."""
    try:
        response = httpx2.post(url, headers={"Authorization": f"Bearer {token}"}, timeout=2)
    except httpx2.HTTPError:
        return False
    return response.status_code == 401


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        text = getattr(result.content[0], "text", "") if result.content else ""
        raise TeamServerError(f"{tool} failed on the team server: {text}")
    return result.structured_content or {}


async def context_block(client: Client) -> str:
    """The memory://context block, as the SessionStart hook prints it."""
    result = await client.read_resource("memory://context")
    text = "".join(getattr(part, "text", "") for part in result.contents)
    return "" if text.strip() == NO_MEMORIES else text
