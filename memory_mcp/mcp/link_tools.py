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
    to: Annotated[int, Field(strict=True, description="The memory it points to.")],
    relation: Annotated[
        str,
        Field(description="How the first relates to the second, e.g. 'depends_on'."),
    ],
    remove: Annotated[
        bool, Field(strict=True, description="Remove this link instead of adding it.")
    ] = False,
) -> LinkChanged:
    """Link one memory to another with a typed, directed relation (or remove the link).

    Link when one memory only makes sense with another: a fix and the bug it fixes, a
    decision and the one it replaces, a person and their team. Later, memory-related
    follows links from a memory, memory-get lists them, and memory-search with
    expand=true brings linked memories in beside strong hits.

    Relations are short labels in active voice, read from this memory to the other:
    works_at (a person -> an organisation), depends_on (a service -> the one it needs),
    supersedes (a newer decision -> the one it replaces), part_of, caused_by, fixed_by,
    mentions (names the other's subject). Use the same label for the same kind of tie,
    so it can be followed later (memory-related's `relation`).
    You may link from your own memories (a lead also from swarm memories) to any memory
    you can see; the link is part of the memory it starts from. Others see a link only if
    they can see both memories. Linking twice changes nothing (`changed: false`).
    Example: memory-link(id=12, to=7, relation="supersedes")."""
    app = await app_of(ctx)

    async def change() -> LinkChanged:
        outcome = await app.service.link(caller_of(app), id, to, relation, remove=remove)
        return LinkChanged.of(id, to, relation, remove, outcome)

    return await guard(app, change())


async def memory_related(
    ctx: Context,
    id: Annotated[int, Field(strict=True, description="The memory to start from.")],
    depth: Annotated[
        int,
        Field(strict=True, description=f"How many links away, 1-{LINK_DEPTH_MAX}."),
    ] = 1,
    direction: Annotated[
        str,
        one_of("both", "out", "in"),
        Field(description="out: links it makes; in: links made to it; both."),
    ] = "both",
    relation: Annotated[
        str | None, Field(description="Only links with this relation, e.g. 'depends_on'.")
    ] = None,
    limit: Annotated[
        int,
        Field(strict=True, description=f"How many memories at most, 1-{RELATED_LIMIT_MAX}."),
    ] = 20,
    include_expired: Annotated[
        bool, Field(strict=True, description="Also expired memories.")
    ] = False,
) -> RelatedMemories:
    """The memories linked to a memory, and (depth 2-3) those linked to them, nearest
    first: each with the relation and direction of the link that reached it and the
    memory it came `via`. Values are cut like search results (memory-get reads one whole).

    Only memories you can see are shown, and only links between them. A memory with many
    links gives its newest 20 each way; `truncated: true` says something was left out.
    Example: memory-related(id=12), memory-related(id=12, depth=2, relation="depends_on")."""
    app = await app_of(ctx)

    async def related() -> RelatedMemories:
        found = await app.service.related(
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
