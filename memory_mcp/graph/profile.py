"""The knowledge-graph profile's operations (`serve --profile knowledge-graph`), with the
reference server's behaviour (`@modelcontextprotocol/server-memory` 2026.8.31,
KnowledgeGraphManager) on memories and links: an entity is a memory keyed `entity:<name>`
in one scope (graph/entities.py), a relation a link between two of them. Every change
goes through MemoryService (store_memory, delete, change_links), so the one decision
(rules/permissions.py) is asked as for any tool, and every read sees only what its caller may.

Where it differs from the reference, on purpose: `search_nodes` answers by meaning
(memory-mcp's hybrid search) where the reference's substring match finds nothing; a
relation needs both entities to exist (it is a link between two memories); an empty
relation type, and an empty name or one with surrounding spaces, are refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import (
    InvalidInputError,
    MemoryMcpError,
    NotFoundError,
    PermissionDeniedError,
)
from memory_mcp.graph.entities import (
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
    relation_key,
    relation_of,
)
from memory_mcp.models import Caller, MemoryRecord, Scope, SearchRequest, StoreRequest
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target, can_see

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService
    from memory_mcp.transfer.jsonl import MemoryLine

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
        return (await self._nodes())[0]

    async def _nodes(self) -> tuple[list[MemoryRecord], list[tuple[MemoryRecord, Relation]]]:
        """The entity memories, and the relation memories an import kept (a relation whose
        ends were not both entities: memory_json.py), oldest first."""
        entities, relations = [], []
        async for record in self.service.visible_records(self.caller):
            if record.scope is not self.scope or self.service.is_expired(record):
                continue
            if self._is_entity(record):
                entities.append(record)
            elif (relation := relation_of(record.tags, record.metadata)) is not None:
                relations.append((record, relation))
        return entities, relations

    async def entity_record(self, name: str) -> MemoryRecord | None:
        record = await self.service.by_key(self.caller, entity_key(name), self.scope)
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
        self,
        records: Sequence[MemoryRecord],
        kept: Sequence[tuple[MemoryRecord, Relation]] = (),
        touching: set[str] | None = None,
    ) -> list[Relation]:
        """The links between entity memories of `records`, oldest first, then the relation
        memories `kept`; `touching`: only those with an end named so (the reference: "at
        least one endpoint")."""
        names = {r.id: entity_of(r.key, r.value, r.metadata).name for r in records}
        links = await self.service.links.links_among(self.caller, list(names))
        relations = [
            Relation(names[link.source_id], names[link.target_id], link.relation) for link in links
        ]
        relations += [relation for _, relation in kept]
        if touching is None:
            return relations
        return [r for r in relations if r.source in touching or r.target in touching]

    async def read_graph(self) -> Graph:
        records, kept = await self._nodes()
        entities = [entity_of(r.key, r.value, r.metadata) for r in records]
        return Graph(entities, await self.relations_among(records, kept))

    async def open_nodes(self, names: Sequence[str]) -> Graph:
        wanted = set(names)
        records, kept = await self._nodes()
        chosen = [r for r in records if entity_of(r.key, r.value, r.metadata).name in wanted]
        return await self._subgraph(records, kept, chosen)

    async def search_nodes(self, query: str) -> Graph:
        """The reference's answer when it has one: every entity whose name, type or an
        observation holds `query` (ignoring case), in graph order, so a name lookup finds
        that name and nothing else. When none does, the entities memory-mcp's hybrid search
        ranks for it by meaning (at most SEARCH_LIMIT, scoring at least SEARCH_MIN_SCORE),
        best first, where the reference finds nothing. With every relation touching one."""
        records, kept = await self._nodes()
        chosen = [record for record in records if _holds(record, query)]
        if not chosen:
            request = SearchRequest(
                query,
                limit=SEARCH_LIMIT,
                scope=self.scope,
                tags=[ENTITY_TAG],
                min_score=SEARCH_MIN_SCORE,
            )
            result = await self.service.search(self.caller, request)
            chosen = [hit.record for hit in result.hits if self._is_entity(hit.record)]
        return await self._subgraph(records, kept, chosen)

    async def _subgraph(
        self,
        records: list[MemoryRecord],
        kept: list[tuple[MemoryRecord, Relation]],
        chosen: list[MemoryRecord],
    ) -> Graph:
        entities = [entity_of(r.key, r.value, r.metadata) for r in chosen]
        names = {entity.name for entity in entities}
        return Graph(entities, await self.relations_among(records, kept, names))

    # -- changing (each a write through MemoryService: permissions.decide) ---------------
    # A call is checked whole before anything is written: every item's arguments, and
    # the one decision (permissions.py) for every memory and link it changes. So a call
    # that mixes allowed and refused items writes nothing (the reference's file is
    # rewritten whole or not at all). Only another agent's change in between the check
    # and the write can still refuse an item then, and that refusal names it.

    async def create_entities(self, entities: Sequence[Entity]) -> list[Entity]:
        """The entities not in the graph yet, stored; those whose name is taken are left
        as they are (the reference's rule). Returns the ones stored."""
        for entity in entities:
            _check_new_name(entity.name)
        made: list[Entity] = []
        requests: list[StoreRequest] = []
        for entity in entities:
            taken = {e.name for e in made}
            if entity.name in taken or await self.entity_record(entity.name) is not None:
                continue
            requests.append(await self._checked(entity))
            made.append(entity)
        for request in requests:
            await self.service.store_memory(self.caller, request)
        return made

    async def _checked(self, entity: Entity, record: MemoryRecord | None = None) -> StoreRequest:
        """The write of `entity` (over `record`, its memory, if it has one), checked as
        store_memory will check it, nothing written. Over a memory it keeps what the
        graph does not hold: tags and metadata others gave it are merged, not replaced
        (pinned, confidence, source and expiry are kept by store_memory itself)."""
        if not entity.name:
            raise InvalidInputError("name", "an entity's name must not be empty")
        tags = entity_tags(entity.entity_type)
        metadata = entity_metadata(entity)
        if record is not None:
            old_type = entity_tags(str(record.metadata.get("entity_type", "")))
            tags += [tag for tag in record.tags if tag not in tags and tag not in old_type]
            metadata = {**record.metadata, **metadata}
        request = StoreRequest(
            key=entity_key(entity.name),
            value=entity_value(entity),
            scope=self.scope,
            tags=tags,
            metadata=metadata,
            # A new entity goes to the current project; one found in `*` stays there.
            project=None if record is None else record.project,
        )
        new = self.service.prepare_memory(self.caller, request)
        refused = await self.service.ownership_refusals([(self.caller, new)])
        if refused:
            raise PermissionDeniedError(refused[0])
        return request

    async def add_observations(self, additions: Sequence[tuple[str, list[str]]]) -> list[list[str]]:
        """Per (entity name, contents): the contents it did not hold yet, added. An unknown
        entity fails the call before anything is written (the reference's message)."""
        found = {name: await self._existing(name) for name, _ in additions}
        added, changed = [], set()
        for name, contents in additions:
            entity = found[name][1]
            new = [text for text in contents if text not in entity.observations]
            entity.observations.extend(new)
            added.append(new)
            if new:
                changed.add(name)
        await self._put_all([found[name] for name in changed])
        return added

    async def delete_observations(self, deletions: Sequence[tuple[str, list[str]]]) -> None:
        changed: dict[str, tuple[MemoryRecord, Entity]] = {}
        for name, observations in deletions:
            record = await self.entity_record(name)
            if record is None:
                continue  # the reference ignores unknown entities here
            _, entity = changed.get(name) or (
                record,
                entity_of(record.key, record.value, record.metadata),
            )
            kept = [text for text in entity.observations if text not in observations]
            if kept != entity.observations:
                entity.observations = kept
                changed[name] = (record, entity)
        await self._put_all(list(changed.values()))

    async def _put_all(self, changes: Sequence[tuple[MemoryRecord, Entity]]) -> None:
        requests = [await self._checked(entity, record) for record, entity in changes]
        for request in requests:
            await self.service.store_memory(self.caller, request)

    async def delete_entities(self, names: Sequence[str]) -> None:
        """Delete the named entities (their links go with them: rules/service.py), and the
        relation memories an import kept that name one of them."""
        doomed = set(names)
        records = [r for r in [await self.entity_record(name) for name in names] if r]
        records += [
            record
            for record, relation in (await self._nodes())[1]
            if relation.source in doomed or relation.target in doomed
        ]
        for record in records:
            permissions.check(self.caller, Target.of(record), Change.DELETE)
        for record_id in dict.fromkeys(record.id for record in records):
            await self.service.deletes.delete(self.caller, record_id)

    async def create_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        """The relations not in the graph yet, made as links; returns those made."""
        ends = [await self._ends(relation) for relation in relations]  # all, before writing
        for source, _ in ends:
            permissions.check(self.caller, Target.of(source), Change.LINK)
        made = []
        for relation, (source, target) in zip(relations, ends, strict=True):
            outcome = await self.service.links.change_links(
                self.caller, source.id, [(target.id, relation.relation_type)]
            )
            if outcome.added:
                made.append(relation)
        return made

    async def delete_relations(self, relations: Sequence[Relation]) -> None:
        doomed = set(relations)
        kept = [record for record, relation in (await self._nodes())[1] if relation in doomed]
        unlinks: list[tuple[MemoryRecord, MemoryRecord, str]] = []
        for relation in relations:
            v.clean_relation(relation.relation_type, "relationType")
            source = await self.entity_record(relation.source)
            target = await self.entity_record(relation.target)
            if source is not None and target is not None:  # else: nothing to delete
                unlinks.append((source, target, relation.relation_type))
        for record in kept:
            permissions.check(self.caller, Target.of(record), Change.DELETE)
        for source, _, _ in unlinks:
            permissions.check(self.caller, Target.of(source), Change.LINK)
        for record in kept:
            await self.service.deletes.delete(self.caller, record.id)
        for source, target, relation_type in unlinks:
            await self.service.links.change_links(
                self.caller, source.id, [], [(target.id, relation_type)]
            )

    # -- `import --from memory-json` (cli/imports.py) ----------------------------------------

    async def split_relations(
        self, lines: list[tuple[int, MemoryLine]]
    ) -> tuple[list[tuple[int, MemoryLine]], list[Relation]]:
        """An imported file's lines without the relations that become links: those between
        two entities of the file or of the graph. The others stay memories."""
        names = {line.metadata.get("entity") for _, line in lines if is_entity_key(line.key)}
        kept, links = [], []
        for number, line in lines:
            relation = relation_of(line.tags, line.metadata)
            if relation is not None and await self._ends_known(relation, names):
                links.append(relation)
            else:
                kept.append((number, line))
        return kept, links

    async def _ends_known(self, relation: Relation, names: set[Any]) -> bool:
        for name in (relation.source, relation.target):
            if name not in names and await self.entity_record(name) is None:
                return False
        return True

    async def link_imported(self, relations: Sequence[Relation]) -> tuple[int, list[str]]:
        """Link each relation (after its entities were stored); a relation memory of an
        earlier import goes, now that the link holds it. Returns how many links were new,
        and a message per relation that could not be linked (an entity refused)."""
        made, problems = 0, []
        for relation in relations:
            try:
                made += len(await self.create_relations([relation]))
                old = await self.service.by_key(self.caller, relation_key(relation), self.scope)
                if old is not None:
                    await self.service.deletes.delete(self.caller, old.id)
            except MemoryMcpError as exc:
                problems.append(f"{relation_key(relation)}: {exc}")
        return made, problems

    async def _existing(self, name: str) -> tuple[MemoryRecord, Entity]:
        record = await self.entity_record(name)
        if record is None:
            raise NotFoundError(f"Entity with name {name} not found")
        return record, entity_of(record.key, record.value, record.metadata)

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


def _holds(record: MemoryRecord, query: str) -> bool:
    """The reference's match: the name, type or an observation contains the query, both
    lower-cased."""
    entity = entity_of(record.key, record.value, record.metadata)
    wanted = query.lower()
    texts = [entity.name, entity.entity_type, *entity.observations]
    return any(wanted in text.lower() for text in texts)


def _check_new_name(name: str) -> None:
    """A new entity's name. The reference tells names apart exactly ("Frank " and "Frank"
    are two entities); a memory key has no surrounding spaces, so such a name would be
    stored as, and overwrite, the other one: it is refused instead. Empty is refused too."""
    if not name:
        raise InvalidInputError("name", "an entity's name must not be empty")
    if name != name.strip():
        raise InvalidInputError(
            "name",
            f"{v.shown(name, 80)} starts or ends with spaces; entity names are told apart "
            "exactly, and a memory key has none: give the name without them",
        )


__all__ = ["KnowledgeGraph", "SEARCH_LIMIT"]
