"""`serve --profile knowledge-graph`: the nine tools of the reference knowledge-graph
server (`@modelcontextprotocol/server-memory` 2026.8.31) with its names, arguments and
results, on memories and links (memory_mcp/graph/profile.py). Translation only, as in
memory_tools.py; prompts written for the reference work unchanged."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.tool_calls import app_of, guard
from memory_mcp.results.graph import (
    AddedObservations,
    Done,
    Entities,
    EntityShape,
    GraphShape,
    ObservationAddition,
    ObservationDeletion,
    ObservationResults,
    Relations,
    RelationShape,
)

if TYPE_CHECKING:  # graph/profile.py pulls the service in: imported once the app is open
    from memory_mcp.graph.profile import KnowledgeGraph

T = TypeVar("T")


async def _on_graph(ctx: Context, work: Callable[[KnowledgeGraph], Coroutine[Any, Any, T]]) -> T:
    app = await app_of(ctx)
    from memory_mcp.graph.profile import KnowledgeGraph

    graph = KnowledgeGraph(app.service, caller_of(app), app.settings.graph_scope)
    return await guard(app, work(graph))


async def create_entities(ctx: Context, entities: list[EntityShape]) -> Entities:
    """Create multiple new entities in the knowledge graph. An entity whose name is taken
    is left as it is; the result lists the ones created. Each entity is a memory (key
    `entity:<name>`), found by memory-mcp's search. Names are matched exactly; one with
    spaces around it is refused. A refused item refuses the whole call."""

    async def work(graph: KnowledgeGraph) -> Entities:
        made = await graph.create_entities([shape.entity() for shape in entities])
        return Entities(entities=[EntityShape.of(entity) for entity in made])

    return await _on_graph(ctx, work)


async def create_relations(ctx: Context, relations: list[RelationShape]) -> Relations:
    """Create multiple new relations between entities in the knowledge graph. Relations
    should be in active voice (works_at, depends_on, supersedes, part_of). Both entities
    must exist; the result lists the relations that were new."""

    async def work(graph: KnowledgeGraph) -> Relations:
        made = await graph.create_relations([shape.relation() for shape in relations])
        return Relations(relations=[RelationShape.of(relation) for relation in made])

    return await _on_graph(ctx, work)


async def add_observations(
    ctx: Context, observations: list[ObservationAddition]
) -> ObservationResults:
    """Add new observations to existing entities in the knowledge graph (those an entity
    already holds are not added twice)."""

    async def work(graph: KnowledgeGraph) -> ObservationResults:
        pairs = [(item.entityName, list(item.contents)) for item in observations]
        added = await graph.add_observations(pairs)
        return ObservationResults(
            results=[
                AddedObservations(entityName=name, addedObservations=new)
                for (name, _), new in zip(pairs, added, strict=True)
            ]
        )

    return await _on_graph(ctx, work)


async def delete_entities(
    ctx: Context,
    entityNames: Annotated[  # noqa: N803 (the reference's argument name)
        list[str], Field(description="An array of entity names to delete")
    ],
) -> Done:
    """Delete multiple entities and their associated relations from the knowledge graph."""

    async def work(graph: KnowledgeGraph) -> Done:
        await graph.delete_entities(entityNames)
        return Done(success=True, message="Entities deleted successfully")

    return await _on_graph(ctx, work)


async def delete_observations(ctx: Context, deletions: list[ObservationDeletion]) -> Done:
    """Delete specific observations from entities in the knowledge graph."""

    async def work(graph: KnowledgeGraph) -> Done:
        await graph.delete_observations(
            [(item.entityName, list(item.observations)) for item in deletions]
        )
        return Done(success=True, message="Observations deleted successfully")

    return await _on_graph(ctx, work)


async def delete_relations(
    ctx: Context,
    relations: Annotated[list[RelationShape], Field(description="An array of relations to delete")],
) -> Done:
    """Delete multiple relations from the knowledge graph."""

    async def work(graph: KnowledgeGraph) -> Done:
        await graph.delete_relations([shape.relation() for shape in relations])
        return Done(success=True, message="Relations deleted successfully")

    return await _on_graph(ctx, work)


async def read_graph(ctx: Context) -> GraphShape:
    """Read the entire knowledge graph."""

    async def work(graph: KnowledgeGraph) -> GraphShape:
        return GraphShape.of(await graph.read_graph())

    return await _on_graph(ctx, work)


async def search_nodes(
    ctx: Context,
    query: Annotated[
        str,
        Field(
            description="The search query to match against entity names, types, and "
            "observation content"
        ),
    ],
) -> GraphShape:
    """Search for nodes in the knowledge graph based on a query: the entities whose name,
    type or an observation holds it (ignoring case), with every relation touching one.
    When none does, by meaning (memory-mcp's hybrid search), best first: "who handles
    payments" finds the entity whose observations say so in other words."""

    async def work(graph: KnowledgeGraph) -> GraphShape:
        return GraphShape.of(await graph.search_nodes(query))

    return await _on_graph(ctx, work)


async def open_nodes(
    ctx: Context,
    names: Annotated[list[str], Field(description="An array of entity names to retrieve")],
) -> GraphShape:
    """Open specific nodes in the knowledge graph by their names, with every relation
    touching one of them."""

    async def work(graph: KnowledgeGraph) -> GraphShape:
        return GraphShape.of(await graph.open_nodes(names))

    return await _on_graph(ctx, work)


# name: (function, title, read only, destructive, idempotent), as the reference annotates them
_TOOLS: dict[str, tuple[Callable[..., Any], str, bool, bool, bool]] = {
    "create_entities": (create_entities, "Create Entities", False, False, False),
    "create_relations": (create_relations, "Create Relations", False, False, False),
    "add_observations": (add_observations, "Add Observations", False, False, False),
    "delete_entities": (delete_entities, "Delete Entities", False, True, True),
    "delete_observations": (delete_observations, "Delete Observations", False, True, True),
    "delete_relations": (delete_relations, "Delete Relations", False, True, True),
    "read_graph": (read_graph, "Read Graph", True, False, True),
    "search_nodes": (search_nodes, "Search Nodes", True, False, True),
    "open_nodes": (open_nodes, "Open Nodes", True, False, True),
}
GRAPH_TOOLS = tuple(_TOOLS)


def register_graph_tools(server: MCPServer[Any]) -> None:
    for name, (function, title, read_only, destructive, idempotent) in _TOOLS.items():
        hints = ToolAnnotations(
            title=title,
            readOnlyHint=read_only,
            destructiveHint=destructive,
            idempotentHint=idempotent,
            openWorldHint=False,
        )
        server.tool(name=name, annotations=hints)(function)
