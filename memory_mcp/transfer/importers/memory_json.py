"""The reference MCP memory server's file (`@modelcontextprotocol/server-memory`,
memory.json / memory.jsonl): a knowledge graph, one JSON object a line:

    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish"]}
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

An entity becomes one memory keyed `entity:<name>` (graph/entities.py): its name and type,
then its observations one a line, tagged `entity` and its type. A relation between two
entities becomes a link between their memories (cli/imports.py, graph/profile.py); one whose ends
are not both entities (the reference server allows that) stays a memory keyed
`relation:<from> -[<type>]-> <to>`, its value the sentence "<from> <type> <to>", tagged
`relation` and its type, its ends in metadata, so nothing of the file is lost.
An entity whose observations changed since the last import is updated in place (a new
version, the old one kept in its history)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_mcp.checks.validation import MAX_KEY_CHARS, MAX_TAG_CHARS
from memory_mcp.graph.entities import RELATION_PREFIX as RELATION_PREFIX
from memory_mcp.graph.entities import Entity as GraphEntity
from memory_mcp.graph.entities import Relation as GraphRelation
from memory_mcp.graph.entities import (
    entity_key,
    entity_metadata,
    entity_tags,
    entity_value,
    relation_key,
)
from memory_mcp.transfer.jsonl import MemoryLine

FORMAT = "memory-json"


class Entity(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    type: Literal["entity"]
    name: str = Field(min_length=1)
    entityType: str  # noqa: N815 (the file's own field name)
    observations: list[str]


class Relation(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    type: Literal["relation"]
    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)
    relationType: str  # noqa: N815


def entity_memory(entity: Entity, scope: str) -> MemoryLine:
    shape = GraphEntity(entity.name, entity.entityType, list(entity.observations))
    return MemoryLine(
        key=entity_key(entity.name),
        value=entity_value(shape),
        scope=scope,
        tags=entity_tags(entity.entityType),
        metadata={"imported_from": FORMAT, **entity_metadata(shape)},
    )


def _tag(text: str) -> list[str]:
    """A graph type as a tag (tags are at most MAX_TAG_CHARS; an empty type adds none)."""
    tag = " ".join(text.split())[:MAX_TAG_CHARS]
    return [tag] if tag else []


def relation_memory(relation: Relation, scope: str) -> MemoryLine:
    kind = relation.relationType
    return MemoryLine(
        key=relation_key(GraphRelation(relation.from_, relation.to, kind)),
        value=f"{relation.from_} {kind} {relation.to}",
        scope=scope,
        tags=["relation", *_tag(kind)],
        metadata={
            "imported_from": FORMAT,
            "from": relation.from_,
            "to": relation.to,
            "relation_type": kind,
        },
    )


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())


def read(path: Path, scope: str) -> tuple[list[tuple[int, MemoryLine]], list[str]]:
    """Every line of the file as a memory, or a message naming the line and the field."""
    memories: list[tuple[int, MemoryLine]] = []
    errors: list[str] = []
    with path.open(encoding="utf-8", errors="strict") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                errors.append(f"line {number}: not JSON ({exc.msg}, column {exc.colno})")
                continue
            kind = data.get("type") if isinstance(data, dict) else None
            try:
                if kind == "entity":
                    memory = entity_memory(Entity.model_validate(data), scope)
                elif kind == "relation":
                    memory = relation_memory(Relation.model_validate(data), scope)
                else:
                    errors.append(
                        f'line {number}: type: expected "entity" or "relation", got {kind!r} '
                        "(is this the reference memory server's memory.json?)"
                    )
                    continue
            except ValidationError as exc:
                errors.append(f"line {number}: {_problems(exc)}")
                continue
            if len(memory.key) > MAX_KEY_CHARS:
                what = "name" if kind == "entity" else "from, to and relationType"
                errors.append(
                    f"line {number}: {what}: too long for a memory key "
                    f"({len(memory.key):,} characters with its prefix; the limit is "
                    f"{MAX_KEY_CHARS})"
                )
                continue
            memories.append((number, memory))
    return memories, errors
