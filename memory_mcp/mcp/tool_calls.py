"""What every tool, resource and prompt call goes through: the open app (`app_of`), one
call at a time per turn with project errors turned into tool errors (`guard`), and the
choices published in a tool's schema (`one_of`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR
from pydantic import Field, WithJsonSchema

from memory_mcp.app.background import OpeningApp
from memory_mcp.errors import MemoryMcpError

if TYPE_CHECKING:  # the store, numpy and SQLAlchemy are imported after the handshake
    from memory_mcp.app.context import AppContext

T = TypeVar("T")
log = logging.getLogger(__name__)

# The arguments of the reads that cover projects and tasks (search, list, delete-many),
# and of the writes that choose a project: what `project` means is said once, in the
# server's instructions (mcp/server.py), which the tool list's budget does not count.
PROJECT_FILTER = Field()
TASK_FILTER = Field(description="Plus its working memories.")
ARCHIVED_FILTER = Field(strict=True)
# A filter by source names the values store_memory lists, not its enum again: nine sources
# in three more schemas cost every session ~350 characters (tests/mcp/test_tool_list_cost.py);
# a wrong one is answered with the list.
SOURCE_FILTER = Field(description="As store_memory's source.")
# Facts that changed (rules/validity.py).
SUPERSEDED_FILTER = Field(strict=True)
AS_OF = Field(description="What held then (as since).")
PROJECT_ARGUMENT = Field()

INTERNAL_ERROR_MESSAGE = (
    "internal error in the memory server (the details are in its log); "
    "retrying the same call may not help"
)


async def guard(
    app: AppContext,
    call: Coroutine[Any, Any, T],
    error: Callable[[str], Exception] = ToolError,
) -> T:
    """Run one call in its turn and say what went wrong if it fails.

    Turns: at most `max_concurrent_calls` calls are worked on at once, the others wait in
    arrival order (anyio's semaphore is first-in, first-out), so in a burst the early calls
    finish early instead of all finishing together at the end.

    Failures: project errors keep their text, which names the problem and says whether a
    retry helps (StoreBusyError: retry in a moment). Anything else is logged with its
    traceback and answered with a fixed message: exception text (SQL, paths, a stack)
    never reaches the client."""
    started = False
    try:
        async with app.turns:
            started = True
            return await call
    except MemoryMcpError as exc:
        raise error(str(exc)) from exc
    except Exception:
        log.exception("unexpected failure in a tool call")
        raise error(INTERNAL_ERROR_MESSAGE) from None
    finally:
        if not started:  # cancelled while waiting for its turn
            call.close()


def prompt_error(message: str) -> Exception:
    return MCPError(code=INTERNAL_ERROR, message=message)


def one_of(*choices: str, optional: bool = False) -> WithJsonSchema:
    """The choices, published in the tool's schema; the service checks them and says what
    is allowed, so a wrong one gets the same message here as from the CLI or an import."""
    schema: dict[str, Any] = {"type": "string", "enum": [str(choice) for choice in choices]}
    if optional:
        schema = {"anyOf": [schema, {"type": "null"}]}
    return WithJsonSchema(schema)


async def app_of(ctx: Context, error: Callable[[str], Exception] = ToolError) -> AppContext:
    """The open app; a call that arrives while it is still opening waits for it."""
    opening = cast("OpeningApp[AppContext]", ctx.request_context.lifespan_context)
    try:
        return await opening.ready()
    except MemoryMcpError as exc:
        raise error(str(exc)) from exc
