"""The knowledge-graph profile's tool arguments and results, in the reference server's
shapes (`@modelcontextprotocol/server-memory` 2026.8.31: its zod schemas), published as
the tools' inputSchema and outputSchema."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from memory_mcp.graph.entities import Entity, Graph, Relation
from memory_mcp.results.base import ToolResult


class EntityShape(ToolResult):
    model_config = ConfigDict(extra="ignore")  # as zod's objects: unknown fields dropped

    name: str = Field(description="The name of the entity")
    entityType: str = Field(description="The type of the entity")  # noqa: N815
    observations: list[str] = Field(
        description="An array of observation contents associated with the entity"
    )

    @classmethod
    def of(cls, entity: Entity) -> EntityShape:
        return cls(
            name=entity.name, entityType=entity.entity_type, observations=entity.observations
        )

    def entity(self) -> Entity:
        return Entity(self.name, self.entityType, list(self.observations))


class RelationShape(ToolResult):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, serialize_by_alias=True)

    from_: str = Field(alias="from", description="The name of the entity where the relation starts")
    to: str = Field(description="The name of the entity where the relation ends")
    relationType: str = Field(description="The type of the relation")  # noqa: N815

    @classmethod
    def of(cls, relation: Relation) -> RelationShape:
        return cls(from_=relation.source, to=relation.target, relationType=relation.relation_type)

    def relation(self) -> Relation:
        return Relation(self.from_, self.to, self.relationType)


class ObservationAddition(BaseModel):
    model_config = ConfigDict(extra="ignore")

    entityName: str = Field(description="The name of the entity to add the observations to")  # noqa: N815
    contents: list[str] = Field(description="An array of observation contents to add")


class ObservationDeletion(BaseModel):
    model_config = ConfigDict(extra="ignore")

    entityName: str = Field(description="The name of the entity containing the observations")  # noqa: N815
    observations: list[str] = Field(description="An array of observations to delete")


class Entities(ToolResult):
    entities: list[EntityShape]


class Relations(ToolResult):
    relations: list[RelationShape]


class AddedObservations(ToolResult):
    entityName: str  # noqa: N815
    addedObservations: list[str]  # noqa: N815


class ObservationResults(ToolResult):
    results: list[AddedObservations]


class Done(ToolResult):
    success: bool
    message: str


class GraphShape(ToolResult):
    entities: list[EntityShape]
    relations: list[RelationShape]

    @classmethod
    def of(cls, graph: Graph) -> GraphShape:
        return cls(
            entities=[EntityShape.of(entity) for entity in graph.entities],
            relations=[RelationShape.of(relation) for relation in graph.relations],
        )


__all__ = [
    "AddedObservations",
    "Done",
    "Entities",
    "EntityShape",
    "GraphShape",
    "ObservationAddition",
    "ObservationDeletion",
    "ObservationResults",
    "RelationShape",
    "Relations",
]
