"""The knowledge-graph profile's operations (`serve --profile knowledge-graph`), with the
reference server's behaviour (`@modelcontextprotocol/server-memory` 2026.8.31,
KnowledgeGraphManager) on memories and links: an entity is a memory keyed `entity:<name>`
in one scope (graph_entities.py), a relation a link between two of them. Every change
goes through MemoryService (store_memory, delete, change_links), so the one decision
(permissions.py) is asked as for any tool, and every read sees only what its caller may.

Where it differs from the reference, on purpose: `search_nodes` is memory-mcp's hybrid
search (meaning and words) instead of a substring match; a relation needs both entities
to exist (it is a link between two memories), and an empty relation type is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, NotFoundError
from memory_mcp.graph_entities import (
    ENTITY_TAG,
    Entity,
    Graph,
    Relation,
    entity_key,
    entity_metadata,
    entity_of,
    entity_tags,
    entity_value,
    is_entity_key,
)
from memory_mcp.models import Caller, MemoryRecord, NewMemory, Scope, Source, StoreRequest
from memory_mcp.reading import can_see
from memory_mcp.service import MemoryService

SEARCH_LIMIT = 10  # search_nodes: entities found by meaning, best first
SEARCH_MIN_SCORE = 0.3  # ... scoring at least this (the same score memory-search shows)


@dataclass
class KnowledgeGraph:
    """The graph one caller sees in one scope."""

    service: MemoryService
    caller: Caller
    scope: Scope = Scope.AGENT

    # -- reading ------------------------------------------------------------------------

    async def records(self) -> list[MemoryRecord]:
        """The entity memories of the graph, oldest first (the reference's file order)."""
        found = []
        async for record in self.service.visible_records(self.caller):
            if self._is_entity(record) and not self.service.is_expired(record):
                found.append(record)
        return found

    async def entity_record(self, name: str) -> MemoryRecord | None:
        session = self.caller.session_id if self.scope is Scope.SESSION else ""
        new = NewMemory(
            entity_key(name), "", self.scope, self.caller.agent_id, session, Source.MANUAL
        )
        record = await self.service.store.get_by_identity(new.identity)
        if record is None or not self._is_entity(record) or self.service.is_expired(record):
            return None
        return record

    def _is_entity(self, record: MemoryRecord) -> bool:
        return (
            record.scope is self.scope
            and is_entity_key(record.key)
            and ENTITY_TAG in record.tags
            and can_see(self.caller, record)
        )

    async def relations_among(
        self, records: Sequence[MemoryRecord], touching: set[int] | None = None
    ) -> list[Relation]:
        """The links between entity memories of `records`, oldest first; `touching`: only
        those with an end among these ids (the reference: "at least one endpoint")."""
        names = {
            record.id: entity_of(record.key, record.value, record.metadata).name
            for record in records
        }
        links = await self.service.links_among(self.caller, list(names))
        return [
            Relation(names[link.source_id], names[link.target_id], link.relation)
            for link in links
            if touching is None or link.source_id in touching or link.target_id in touching
        ]

    async def read_graph(self) -> Graph:
        records = await self.records()
        entities = [entity_of(r.key, r.value, r.metadata) for r in records]
        return Graph(entities, await self.relations_among(records))

    async def open_nodes(self, names: Sequence[str]) -> Graph:
        wanted = set(names)
        records = await self.records()
        chosen = [r for r in records if entity_of(r.key, r.value, r.metadata).name in wanted]
        return await self._subgraph(records, chosen)

    async def search_nodes(self, query: str) -> Graph:
        """The entities whose memories the hybrid search ranks for `query` (at most
        SEARCH_LIMIT, scoring at least SEARCH_MIN_SCORE), best first, and every relation
        touching one of them."""
        result = await self.service.search(
            self.caller,
            query,
            limit=SEARCH_LIMIT,
            scope=self.scope,
            tags=[ENTITY_TAG],
            min_score=SEARCH_MIN_SCORE,
        )
        chosen = [hit.record for hit in result.hits if self._is_entity(hit.record)]
        return await self._subgraph(await self.records(), chosen)

    async def _subgraph(self, records: list[MemoryRecord], chosen: list[MemoryRecord]) -> Graph:
        entities = [entity_of(r.key, r.value, r.metadata) for r in chosen]
        relations = await self.relations_among(records, {r.id for r in chosen})
        return Graph(entities, relations)

    # -- changing (each a write through MemoryService: permissions.decide) ---------------

    async def create_entities(self, entities: Sequence[Entity]) -> list[Entity]:
        """The entities not in the graph yet, stored; those whose name is taken are left
        as they are (the reference's rule). Returns the ones stored."""
        for entity in entities:
            if not entity.name:
                raise InvalidInputError("name", "an entity's name must not be empty")
        made = []
        for entity in entities:
            if await self.entity_record(entity.name) is None:
                await self.put(entity)
                made.append(entity)
        return made

    async def put(self, entity: Entity) -> MemoryRecord:
        """Store `entity` whole (an update in place, a new version, if it exists)."""
        if not entity.name:
            raise InvalidInputError("name", "must not be empty")
        request = StoreRequest(
            key=entity_key(entity.name),
            value=entity_value(entity),
            scope=self.scope,
            tags=entity_tags(entity.entity_type),
            metadata=entity_metadata(entity),
        )
        return (await self.service.store_memory(self.caller, request)).record

    async def add_observations(self, additions: Sequence[tuple[str, list[str]]]) -> list[list[str]]:
        """Per (entity name, contents): the contents it did not hold yet, added. An unknown
        entity fails the call before anything is written (the reference's message)."""
        entities = {name: await self._existing(name) for name, _ in additions}
        added, changed = [], set()
        for name, contents in additions:
            entity = entities[name]
            new = [text for text in contents if text not in entity.observations]
            entity.observations.extend(new)
            added.append(new)
            if new:
                changed.add(name)
        for name in changed:
            await self.put(entities[name])
        return added

    async def delete_observations(self, deletions: Sequence[tuple[str, list[str]]]) -> None:
        for name, observations in deletions:
            record = await self.entity_record(name)
            if record is None:
                continue  # the reference ignores unknown entities here
            entity = entity_of(record.key, record.value, record.metadata)
            kept = [text for text in entity.observations if text not in observations]
            if kept != entity.observations:
                entity.observations = kept
                await self.put(entity)

    async def delete_entities(self, names: Sequence[str]) -> None:
        """Delete the named entities (their links go with them: linking.py)."""
        for name in names:
            record = await self.entity_record(name)
            if record is not None:
                await self.service.delete(self.caller, record.id)

    async def create_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        """The relations not in the graph yet, made as links; returns those made."""
        ends = [await self._ends(relation) for relation in relations]  # all, before writing
        made = []
        for relation, (source, target) in zip(relations, ends, strict=True):
            outcome = await self.service.change_links(
                self.caller, source.id, [(target.id, relation.relation_type)]
            )
            if outcome.added:
                made.append(relation)
        return made

    async def delete_relations(self, relations: Sequence[Relation]) -> None:
        for relation in relations:
            source = await self.entity_record(relation.source)
            target = await self.entity_record(relation.target)
            if source is None or target is None:
                continue  # no such relation: nothing to delete, as in the reference
            v.clean_relation(relation.relation_type, "relationType")
            await self.service.change_links(
                self.caller, source.id, [], [(target.id, relation.relation_type)]
            )

    async def _existing(self, name: str) -> Entity:
        record = await self.entity_record(name)
        if record is None:
            raise NotFoundError(f"Entity with name {name} not found")
        return entity_of(record.key, record.value, record.metadata)

    async def _ends(self, relation: Relation) -> tuple[MemoryRecord, MemoryRecord]:
        v.clean_relation(relation.relation_type, "relationType")
        ends = []
        for name in (relation.source, relation.target):
            record = await self.entity_record(name)
            if record is None:
                raise NotFoundError(
                    f"Entity with name {name} not found (a relation links two entities: "
                    "create both first)"
                )
            ends.append(record)
        return ends[0], ends[1]


__all__ = ["KnowledgeGraph", "SEARCH_LIMIT"]
