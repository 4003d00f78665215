"""What the link tools return (memory-link, memory-related) and the links memory-get and
memory-history show: pydantic models, published as the tools' outputSchema. Only links
whose both ends the reader may see ever get here (rules/service.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from memory_mcp.checks.validation import iso
from memory_mcp.models import LinkOutcome, Scope, Source
from memory_mcp.results.base import ToolResult

if TYPE_CHECKING:  # annotations only: nothing more to import before the handshake
    from memory_mcp.rules.links import LinkedMemory, LinkEvent, Related

Direction = Literal["out", "in"]


class MemoryLink(ToolResult):
    """One link of a memory, seen from it: `out` = this memory -[relation]-> `id`;
    `in` = `id` -[relation]-> this memory. `project`: the far memory's (a name, or `*`)."""

    relation: str
    direction: Direction
    id: int
    key: str
    project: str
    created_by: str
    created_at: str | None

    @classmethod
    def of(cls, shown: LinkedMemory) -> MemoryLink:
        return cls(
            relation=shown.link.relation,
            direction=shown.direction,
            id=shown.far.id,
            key=shown.far.key,
            project=shown.far.project,
            created_by=shown.link.created_by,
            created_at=iso(shown.link.created_at),
        )


class LinkChanged(ToolResult):
    """memory-link's answer: the link as it is now (`linked`), and whether this call
    changed anything (`changed: false`: it was already so)."""

    id: int
    to: int
    relation: str
    linked: bool
    changed: bool

    @classmethod
    def of(
        cls, memory_id: int, to: int, relation: str, remove: bool, outcome: LinkOutcome
    ) -> LinkChanged:
        changed = bool(outcome.removed if remove else outcome.added)
        return cls(id=memory_id, to=to, relation=relation, linked=not remove, changed=changed)


class RelatedMemory(ToolResult):
    """A memory memory-related reached: `depth` links from the start, the last one
    `relation` in `direction` from `via` (the memory it was reached from)."""

    omitted_when_empty = frozenset({"truncated", "full_length"})

    id: int
    key: str
    value: str
    scope: Scope
    project: str  # a name, or `*`
    agent_id: str
    source: Source
    tags: list[str]
    depth: int
    via: int
    relation: str
    direction: Direction
    truncated: bool | None = None
    full_length: int | None = None


class RelatedMemories(ToolResult):
    """memory-related's answer: the start, then its neighbours nearest first.
    `truncated: true`: a bound (limit, or links followed per memory) left some out."""

    id: int
    key: str
    project: str
    neighbours: list[RelatedMemory]
    truncated: bool

    @classmethod
    def of(cls, related: Related, max_chars: int) -> RelatedMemories:
        neighbours = []
        for step in related.neighbours:
            record, cut = step.memory, len(step.memory.value) > max_chars
            neighbours.append(
                RelatedMemory(
                    id=record.id,
                    key=record.key,
                    value=record.value[:max_chars],
                    scope=record.scope,
                    project=record.project,
                    agent_id=record.agent_id,
                    source=record.source,
                    tags=record.tags,
                    depth=step.depth,
                    via=step.via.near,
                    relation=step.via.link.relation,
                    direction=step.via.direction,
                    truncated=True if cut else None,
                    full_length=len(record.value) if cut else None,
                )
            )
        return cls(
            id=related.start.id,
            key=related.start.key,
            project=related.start.project,
            neighbours=neighbours,
            truncated=related.truncated,
        )


class LinkRecord(ToolResult):
    """One entry of a memory's link history: made by `created_by` at `created_at`;
    `removed_at` set: removed then, by `removed_by` (null: its far end was deleted)."""

    omitted_when_empty = frozenset({"removed_at", "removed_by"})

    relation: str
    direction: Direction
    id: int
    created_by: str
    created_at: str | None
    current: bool
    removed_at: str | None = None
    removed_by: str | None = None

    @classmethod
    def of(cls, event: LinkEvent) -> LinkRecord:
        link = event.link
        return cls(
            relation=link.relation,
            direction=event.direction,
            id=link.target_id if event.direction == "out" else link.source_id,
            created_by=link.created_by,
            created_at=iso(link.created_at),
            current=link.removed_at is None,
            removed_at=iso(link.removed_at),
            removed_by=link.removed_by,
        )


__all__ = ["LinkChanged", "LinkRecord", "MemoryLink", "RelatedMemories", "RelatedMemory"]
