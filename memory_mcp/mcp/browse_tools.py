"""The MCP tools for browsing and cleaning up: memory-list, memory-history, memory-revert
and memory-delete-many. Translation only, like memory_tools.py (mcp/server.py registers
these through `register_browse_tools`): the rules are MemoryService's."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_mcp.checks import validation as v
from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.tool_calls import (
    ARCHIVED_FILTER,
    AS_OF,
    PROJECT_FILTER,
    SOURCE_FILTER,
    SUPERSEDED_FILTER,
    TASK_FILTER,
    app_of,
    guard,
    one_of,
)
from memory_mcp.models import Scope, Source, UpsertOutcome
from memory_mcp.results.links import LinkRecord
from memory_mcp.results.memories import (
    BulkDeleted,
    ListedMemory,
    MemoryHistory,
    MemoryList,
    Reverted,
    Version,
    bulk_deleted,
    trust_fields,
)
from memory_mcp.rules.browsing import (
    DEFAULT_DELETE_MANY_LIMIT,
    DEFAULT_HISTORY_LIMIT,
    DEFAULT_LIST_LIMIT,
    MAX_DELETE_MANY_LIMIT,
    MAX_HISTORY_LIMIT,
    MAX_LIST_LIMIT,
    ORDERS,
    DeleteManyResult,
    ListFilters,
    MemoryPage,
    parse_older_than,
)

SCOPES = ("all", *Scope)
TIME_HELP = "ISO time or age (7d, 12h)"


async def memory_list(
    ctx: Context,
    scope: Annotated[str, one_of(*SCOPES)] = "all",
    tags: Annotated[list[str], Field(description="All of these tags.")] = [],  # noqa: B006
    source: Annotated[str | None, SOURCE_FILTER] = None,
    agent_id: Annotated[str | None, Field(description="Owned by this agent.")] = None,
    since: Annotated[str | None, Field(description=f"Changed since: {TIME_HELP}.")] = None,
    until: Annotated[str | None, Field(description="Changed until (as since).")] = None,
    order: Annotated[str, one_of(*ORDERS)] = "updated",
    cursor: Annotated[str | None, Field(description="next_cursor of the last page.")] = None,
    limit: Annotated[
        int, Field(strict=True, description=f"1-{MAX_LIST_LIMIT}.")
    ] = DEFAULT_LIST_LIMIT,
    include_expired: Annotated[bool, Field(strict=True)] = False,
    project: Annotated[str | None, PROJECT_FILTER] = None,
    task: Annotated[str | None, TASK_FILTER] = None,
    include_archived: Annotated[bool, ARCHIVED_FILTER] = False,
    include_superseded: Annotated[bool, SUPERSEDED_FILTER] = False,
    as_of: Annotated[str | None, AS_OF] = None,
) -> MemoryList:
    """Browse memories newest first, a page at a time.
    Example: memory-list(tags=["build"], since="7d")"""
    app = await app_of(ctx)

    async def listing() -> MemoryPage:
        filters = ListFilters.parse(
            now=app.service.clock(),
            scope=scope,
            tags=tags,
            source=source,
            agent_id=agent_id,
            since=since,
            until=until,
            include_expired=include_expired,
            project=project,
            task=task,
            include_archived=include_archived,
            include_superseded=include_superseded,
            as_of=as_of,
        )
        return await app.service.list_memories(caller_of(app), filters, order, cursor, limit)

    page = await guard(app, listing())
    max_chars = app.settings.search_value_chars
    return MemoryList(
        memories=[
            ListedMemory.of(record, max_chars, app.service.trust_marks(record))
            for record in page.records
        ],
        next_cursor=page.next_cursor,
        notices=page.notices or None,
    )


async def memory_history(
    ctx: Context,
    id: Annotated[int, Field(strict=True)],
    version: Annotated[int | None, Field(strict=True, description="Only this one, whole.")] = None,
    limit: Annotated[
        int, Field(strict=True, description=f"1-{MAX_HISTORY_LIMIT}.")
    ] = DEFAULT_HISTORY_LIMIT,
    before: Annotated[
        int | None, Field(strict=True, description="The last answer's `earlier`.")
    ] = None,
) -> MemoryHistory:
    """A memory's versions (value, author, time) and its links over time; memory-revert
    undoes a change.
    Example: memory-history(id=42)"""
    app = await app_of(ctx)
    caller = caller_of(app)
    if version is None:
        page = await guard(app, app.service.history(caller, id, limit, before))
        links = (
            []
            if before is not None
            else await guard(app, app.service.links.link_history(caller, id))
        )
        return MemoryHistory(
            id=id,
            versions=[Version.of(e, app.settings.search_value_chars) for e in page.versions],
            earlier=page.earlier,
            links=[LinkRecord.of(event) for event in links] or None,
            **trust_fields(page.marks),
        )
    entry = await guard(app, app.service.version_of(caller, id, version))
    return MemoryHistory(id=id, versions=[Version.of(entry, None)])


async def memory_revert(
    ctx: Context,
    id: Annotated[int, Field(strict=True)],
    version: Annotated[int, Field(strict=True, description="The version to restore.")],
    expected_version: Annotated[
        int | None, Field(strict=True, description="Only if still at this version.")
    ] = None,
) -> Reverted:
    """Restore an earlier version of a memory as a new version.
    Example: memory-revert(id=42, version=2)"""
    app = await app_of(ctx)
    outcome: UpsertOutcome = await guard(
        app, app.service.revert(caller_of(app), id, version, expected_version)
    )
    return Reverted.of_revert(outcome, version)


async def memory_delete_many(
    ctx: Context,
    tags: Annotated[list[str], Field(description="All of these tags.")] = [],  # noqa: B006
    source: Annotated[str | None, SOURCE_FILTER] = None,
    older_than: Annotated[str | None, Field(description=f"Not changed since: {TIME_HELP}.")] = None,
    scope: Annotated[str, one_of(*SCOPES)] = "all",
    dry_run: Annotated[bool, Field(strict=True, description="Only report.")] = False,
    limit: Annotated[
        int, Field(strict=True, description=f"1-{MAX_DELETE_MANY_LIMIT}, oldest first.")
    ] = DEFAULT_DELETE_MANY_LIMIT,
    project: Annotated[str | None, PROJECT_FILTER] = None,
) -> BulkDeleted:
    """Delete the memories you may delete that match tags, source and/or older_than.
    Try dry_run=true first.
    Example: memory-delete-many(tags=["scratch"], older_than="30d", dry_run=true)"""
    app = await app_of(ctx)

    async def delete_many() -> DeleteManyResult:
        service = app.service
        return await service.deletes.delete_many(
            caller_of(app),
            tags=tags,
            source=None if source is None else v.parse_source(source, tuple(Source)),
            older_than=parse_older_than(older_than, service.clock()),
            scope=v.parse_scope(scope, allow_all=True),
            dry_run=dry_run,
            limit=limit,
            project=project,
        )

    return bulk_deleted(await guard(app, delete_many()))


def register_browse_tools(server: MCPServer[Any]) -> None:
    server.tool(
        name="memory-list",
        annotations=ToolAnnotations(title="List memories", readOnlyHint=True),
    )(memory_list)
    server.tool(
        name="memory-history",
        annotations=ToolAnnotations(title="A memory's versions", readOnlyHint=True),
    )(memory_history)
    server.tool(
        name="memory-revert",
        annotations=ToolAnnotations(
            title="Restore an earlier version",
            readOnlyHint=False,
            destructiveHint=False,
            idempotentHint=False,
        ),
    )(memory_revert)
    server.tool(
        name="memory-delete-many",
        annotations=ToolAnnotations(
            title="Delete memories by tag, source or age",
            readOnlyHint=False,
            destructiveHint=True,
            idempotentHint=True,
        ),
    )(memory_delete_many)
