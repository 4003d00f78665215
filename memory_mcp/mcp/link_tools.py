"""The link tools: memory-link (add or remove a typed link between two memories) and
memory-related (a memory's neighbours, a few links deep). Translation only, as in
memory_tools.py: the rules are the service's (rules/service.py, rules/permissions.py)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_mcp.limits import LINK_DEPTH_MAX, RELATED_LIMIT_MAX
from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.tool_calls import app_of, guard, one_of
from memory_mcp.results.links import LinkChanged, RelatedMemories


async def memory_link(
    ctx: Context,
    id: Annotated[int, Field(strict=True, description="The memory the link starts from.")],
    to: Annotated[int, Field(strict=True)],
    relation: Annotated[
        str, Field(description="Active voice, from id to to: depends_on, supersedes, fixed_by.")
    ],
    remove: Annotated[bool, Field(strict=True)] = False,
) -> LinkChanged:
    """Link two memories when one only makes sense with the other, or remove the link.
    Links are followed by memory-related and by memory-search with expand=true.
    Example: memory-link(id=12, to=7, relation="supersedes")"""
    app = await app_of(ctx)

    async def change() -> LinkChanged:
        outcome = await app.service.links.link(caller_of(app), id, to, relation, remove=remove)
        return LinkChanged.of(id, to, relation, remove, outcome)

    return await guard(app, change())


async def memory_related(
    ctx: Context,
    id: Annotated[int, Field(strict=True)],
    depth: Annotated[int, Field(strict=True, description=f"1-{LINK_DEPTH_MAX} links away.")] = 1,
    direction: Annotated[str, one_of("both", "out", "in")] = "both",
    relation: Annotated[str | None, Field(description="Only this relation.")] = None,
    limit: Annotated[int, Field(strict=True, description=f"1-{RELATED_LIMIT_MAX}.")] = 20,
    include_expired: Annotated[bool, Field(strict=True)] = False,
) -> RelatedMemories:
    """The memories linked to a memory, nearest first, each with the relation that
    reached it.
    Example: memory-related(id=12, depth=2)"""
    app = await app_of(ctx)

    async def related() -> RelatedMemories:
        found = await app.service.links.related(
            caller_of(app),
            id,
            depth=depth,
            direction=direction,
            relation=relation,
            limit=limit,
            include_expired=include_expired,
        )
        return RelatedMemories.of(found, app.settings.search_value_chars)

    return await guard(app, related())


def register_link_tools(server: MCPServer[Any]) -> None:
    server.tool(
        name="memory-link",
        annotations=ToolAnnotations(
            title="Link two memories",
            readOnlyHint=False,
            destructiveHint=False,
            idempotentHint=True,
        ),
    )(memory_link)
    server.tool(
        name="memory-related",
        annotations=ToolAnnotations(title="Memories linked to a memory", readOnlyHint=True),
    )(memory_related)
