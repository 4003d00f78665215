"""The reference knowledge-graph server's entities and relations
(`@modelcontextprotocol/server-memory`), and how an entity is written as a memory: the
shape the knowledge-graph profile (graph/profile.py), `import --from memory-json` and
`export --to memory-json` share. No store here: this module is read before the handshake.

An entity is one memory keyed `entity:<name>`, tagged `entity` (and its type): its value
is a heading, "<name> (<type>)", then one observation a line, "- <text>" (a line break
inside an observation continues on a line indented by two spaces, so the list reads back
exactly). The name and type are in its metadata too. A relation is a link from one
entity's memory to another's, the relation type its relation (rules/service.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memory_mcp.checks.validation import MAX_TAG_CHARS

ENTITY_PREFIX = "entity:"
ENTITY_TAG = "entity"
RELATION_PREFIX = "relation:"  # a relation kept as a memory (importers/memory_json.py)
_ITEM = "- "
_MORE = "  "


@dataclass
class Entity:
    name: str
    entity_type: str
    observations: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The reference's shape (its tools' results and its file's lines)."""
        return {
            "name": self.name,
            "entityType": self.entity_type,
            "observations": list(self.observations),
        }


@dataclass(frozen=True)
class Relation:
    source: str  # "from" in the reference's shape
    target: str  # "to"
    relation_type: str

    def as_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "relationType": self.relation_type}


@dataclass
class Graph:
    entities: list[Entity] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "entities": [entity.as_json() for entity in self.entities],
            "relations": [relation.as_json() for relation in self.relations],
        }

    def file_lines(self) -> list[str]:
        """The reference server's memory.json(l): one JSON object a line, as it saves."""
        return [
            *(
                json.dumps({"type": "entity", **e.as_json()}, ensure_ascii=False)
                for e in self.entities
            ),
            *(
                json.dumps({"type": "relation", **r.as_json()}, ensure_ascii=False)
                for r in self.relations
            ),
        ]


def entity_key(name: str) -> str:
    return ENTITY_PREFIX + name


def entity_tags(entity_type: str) -> list[str]:
    """`entity` and the type as a tag (tags are at most MAX_TAG_CHARS; no empty one)."""
    tag = " ".join(entity_type.split())[:MAX_TAG_CHARS]
    return [ENTITY_TAG, tag] if tag and tag != ENTITY_TAG else [ENTITY_TAG]


def entity_value(entity: Entity) -> str:
    heading = f"{entity.name} ({entity.entity_type})" if entity.entity_type else entity.name
    items = [_ITEM + text.replace("\n", "\n" + _MORE) for text in entity.observations]
    return "\n".join([heading, *items])


def entity_metadata(entity: Entity) -> dict[str, Any]:
    return {"entity": entity.name, "entity_type": entity.entity_type}


def is_entity_key(key: str) -> bool:
    return key.startswith(ENTITY_PREFIX) and len(key) > len(ENTITY_PREFIX)


def entity_of(key: str, value: str, metadata: dict[str, Any]) -> Entity:
    """The entity a memory holds (entity_value's inverse). A memory changed by hand reads
    as well as it can: a line that is no item is an observation of its own."""
    name = metadata.get("entity")
    kind = metadata.get("entity_type")
    entity = Entity(
        name if isinstance(name, str) else key[len(ENTITY_PREFIX) :],
        kind if isinstance(kind, str) else "",
    )
    for line in value.split("\n")[1:]:
        if line.startswith(_MORE) and entity.observations:
            entity.observations[-1] += "\n" + line[len(_MORE) :]
        else:
            entity.observations.append(line.removeprefix(_ITEM))
    return entity


def relation_key(relation: Relation) -> str:
    return f"{RELATION_PREFIX}{relation.source} -[{relation.relation_type}]-> {relation.target}"


def relation_of(tags: list[str], metadata: dict[str, Any]) -> Relation | None:
    """The relation a relation line (or memory) holds, from its tags and metadata; None
    for anything else."""
    ends = (metadata.get("from"), metadata.get("to"), metadata.get("relation_type"))
    if "relation" not in tags or not all(isinstance(end, str) for end in ends):
        return None
    source, target, kind = ends
    return Relation(str(source), str(target), str(kind))


__all__ = [
    "ENTITY_PREFIX",
    "ENTITY_TAG",
    "Entity",
    "Graph",
    "Relation",
    "entity_key",
    "entity_metadata",
    "entity_of",
    "entity_tags",
    "entity_value",
    "is_entity_key",
    "relation_key",
    "relation_of",
]
