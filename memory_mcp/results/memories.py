"""What the MCP tools return: one pydantic model per concept (a memory, a search hit, a
stored memory, a deleted one, a learning). The SDK publishes each model's JSON schema as
the tool's `outputSchema` and validates every result against it before sending it as
`structuredContent`.

Optional extras (flags, about_agent, file_path, truncated...) are left out of a result
when they are empty, as clients have always seen them; the schema lists them as optional.

Over 500 lines: every tool that shows a memory returns a model of this module, and they
share ShownMemory's fields; split, a reader would chase one memory's shape over files."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import SerializerFunctionWrapHandler, model_serializer

from memory_mcp.checks.json_values import shown_value
from memory_mcp.checks.validation import iso
from memory_mcp.models import (
    JsonValue,
    LearningCategory,
    MemoryRecord,
    Redaction,
    Scope,
    Source,
    UpsertOutcome,
)
from memory_mcp.results.base import ToolResult
from memory_mcp.results.explanations import ScoreExplanation
from memory_mcp.results.links import LinkRecord, MemoryLink
from memory_mcp.rules.browsing import DeleteManyResult, MemoryVersion
from memory_mcp.semantic.similar_check import SimilarCheck

if TYPE_CHECKING:
    from memory_mcp.rules.trust import TrustMarks

# The trust marks (rules/trust.py), left out when there is nothing to say.
TRUST_MARKS = frozenset({"stale", "stale_reason", "needs_verification"})


def trust_fields(marks: TrustMarks | None) -> dict[str, Any]:
    """A result's trust marks: `stale` with its reason, `needs_verification`."""
    if marks is None:
        return {}
    return {
        "stale": True if marks.stale else None,
        "stale_reason": marks.stale_reason,
        "needs_verification": True if marks.needs_verification else None,
    }


if TYPE_CHECKING:  # annotations only: nothing more to import before the handshake
    from memory_mcp.search.hits import SearchResult

WINDOW = frozenset({"valid_from", "valid_to", "superseded_by"})  # rules/validity.py


def window_of(record: MemoryRecord) -> dict[str, Any]:
    """`record`'s window as shown: `valid_from` unless it is its creation, and once closed
    `valid_to` and `superseded_by` (None: left out)."""
    stated = record.valid_from != record.created_at
    return {
        "valid_from": iso(record.valid_from) if stated else None,
        "valid_to": iso(record.valid_to),
        "superseded_by": record.superseded_by,
    }


class SimilarMemory(ToolResult):
    """A memory the one just stored closely resembles (memory_mcp/semantic/similar.py)."""

    id: int
    key: str
    score: float  # cosine similarity of the two memories, >= similar.SIMILAR_MIN_COSINE


class RedactedSecret(ToolResult):
    """A secret that was not stored: its characters [start, end) of `field` as sent
    (0-based) now read `[REDACTED:<kind>]`. The secret itself is never echoed."""

    field: str  # "value", "learning", or where in the metadata: "metadata.db.url"
    kind: str  # the detection rule, e.g. "github-pat", "generic-api-key"
    start: int
    end: int

    @classmethod
    def all_of(cls, redactions: list[Redaction]) -> list[RedactedSecret] | None:
        found = [cls(field=r.field, kind=r.kind, start=r.start, end=r.end) for r in redactions]
        return found or None


class Conflict(ToolResult):
    """A current memory of yours the one just stored may contradict (rules/conflicts.py):
    `why` (another number, date, value, or a negation), and `supersede`, the call that
    closes its window if the new one is the correction (nothing is changed unasked)."""

    id: int
    key: str
    why: str
    supersede: str


class StoredMemory(ToolResult):
    """store_memory's answer: which memory was written, at which version, and the visible
    memories it closely resembles (`similar`, most similar first; nothing is merged).
    `similar_checked: false`: not compared yet (the model is still loading).
    `redacted`: the secrets replaced before storing (checks/safety.py). `evicted`: the
    memories archived because this write took a cap past its limit (store/eviction.py)."""

    omitted_when_empty = frozenset(
        {"flags", "redacted", "task", "quarantined", "conflicts", "evicted"}
    )

    id: int
    key: str
    scope: Scope
    project: str
    version: int
    created: bool
    agent_id: str
    updated_by: str
    expires_at: str | None
    task: str | None = None
    flags: list[str] | None = None
    redacted: list[RedactedSecret] | None = None
    quarantined: bool | None = None  # held for the lead's approval (rules/quarantine.py)
    similar: list[SimilarMemory] = []
    similar_checked: bool = True
    conflicts: list[Conflict] | None = None
    evicted: list[int] | None = None

    @classmethod
    def of(cls, outcome: UpsertOutcome, similar: SimilarCheck | None = None) -> StoredMemory:
        record = outcome.record
        check = similar or SimilarCheck(checked=False)
        return cls(
            id=record.id,
            key=record.key,
            scope=record.scope,
            project=record.project,
            version=record.version,
            created=outcome.created,
            agent_id=record.agent_id,
            updated_by=record.updated_by,
            expires_at=iso(record.expires_at),
            task=record.task,
            flags=record.flags or None,
            redacted=RedactedSecret.all_of(outcome.redactions),
            quarantined=True if record.quarantined else None,
            similar=[SimilarMemory(id=m.id, key=m.key, score=m.score) for m in check.memories],
            similar_checked=check.checked,
            conflicts=[
                Conflict(id=c.id, key=c.key, why=c.why, supersede=c.supersede)
                for c in check.conflicts
            ]
            or None,
            evicted=outcome.evicted_ids or None,
        )


class StoreAnswer(ToolResult):
    """store_memory's answer: for one memory, StoredMemory's fields (the same answer as
    always); for `memories`, `stored`: each memory's StoredMemory, in the order given.
    One model for both, as a tool publishes one outputSchema: every field is optional in
    it, and an answer holds one set or the other."""

    id: int | None = None
    key: str | None = None
    scope: Scope | None = None
    project: str | None = None
    version: int | None = None
    created: bool | None = None
    agent_id: str | None = None
    updated_by: str | None = None
    expires_at: str | None = None
    task: str | None = None
    flags: list[str] | None = None
    redacted: list[RedactedSecret] | None = None
    quarantined: bool | None = None
    similar: list[SimilarMemory] | None = None
    similar_checked: bool | None = None
    conflicts: list[Conflict] | None = None
    evicted: list[int] | None = None
    stored: list[StoredMemory] | None = None

    @classmethod
    def one(cls, stored: StoredMemory) -> StoreAnswer:
        return cls(**dict(stored))

    @model_serializer(mode="wrap")
    def _leave_out_empty_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.stored is not None:  # several: only their answers
            return {"stored": data["stored"]}
        data.pop("stored", None)
        for name in StoredMemory.omitted_when_empty:
            if data.get(name) in (None, [], False):
                data.pop(name, None)
        return data


class ShownMemory(ToolResult):
    """The fields of a memory that every result showing one has (memory-get's `Memory`, a
    search's `SearchHit`, memory-list's `ListedMemory`), declared once: each of those adds
    its own, and `fields_of` fills these from a record."""

    omitted_when_empty = (
        frozenset({"task", "archived_at", "kind", "about_agent", "flags"}) | WINDOW | TRUST_MARKS
    )

    id: int
    key: str
    value: JsonValue  # as given: text, or a JSON object or array
    scope: Scope
    project: str
    agent_id: str
    updated_by: str
    source: Source
    tags: list[str]
    created_at: str | None
    updated_at: str | None
    expires_at: str | None
    task: str | None = None
    archived_at: str | None = None
    kind: str | None = None
    about_agent: str | None = None
    flags: list[str] | None = None
    valid_from: str | None = None  # the window, when it says something (window_of)
    valid_to: str | None = None
    superseded_by: int | None = None
    # How far to trust it now (rules/trust.py); left out when false.
    stale: bool | None = None
    stale_reason: str | None = None
    needs_verification: bool | None = None

    @staticmethod
    def fields_of(record: MemoryRecord) -> dict[str, Any]:
        """The shown fields of `record`, empty extras as None (left out)."""
        return {
            "id": record.id,
            "key": record.key,
            "value": shown_value(record.value, record.value_json),
            "scope": record.scope,
            "project": record.project,
            "agent_id": record.agent_id,
            "updated_by": record.updated_by,
            "source": record.source,
            "tags": record.tags,
            "created_at": iso(record.created_at),
            "updated_at": iso(record.updated_at),
            "expires_at": iso(record.expires_at),
            "task": record.task,
            "archived_at": iso(record.archived_at),
            "kind": record.kind,
            "about_agent": record.about_agent or None,
            "flags": record.flags or None,
            **window_of(record),
        }


class Memory(ShownMemory):
    """A whole memory, as memory-get returns it (expired ones too, with `expired: true`),
    with its links to and from memories the reader may see (`more_links`: more than shown)."""

    omitted_when_empty = ShownMemory.omitted_when_empty | {"file_path", "links", "more_links"}

    metadata: dict[str, Any]
    confidence: float | None
    pinned: bool
    version: int
    access_count: int
    last_accessed_at: str | None
    expired: bool
    file_path: str | None = None
    links: list[MemoryLink] | None = None
    more_links: bool | None = None

    @classmethod
    def of(
        cls,
        record: MemoryRecord,
        expired: bool,
        links: list[MemoryLink] | None = None,
        marks: TrustMarks | None = None,
    ) -> Memory:
        return cls(
            **cls.fields_of(record),
            **trust_fields(marks),
            metadata=record.metadata,
            confidence=record.confidence,
            pinned=record.pinned,
            version=record.version,
            access_count=record.access_count,
            last_accessed_at=iso(record.last_accessed_at),
            expired=expired,
            file_path=record.file_path or None,
            links=links or None,
        )


class CutMemory(ShownMemory):
    """A memory with its value cut to the configured length (`truncated`, `full_length`
    when it was): a search hit's and a listed memory's."""

    omitted_when_empty = ShownMemory.omitted_when_empty | {
        "truncated",
        "full_length",
        "confidence",
    }

    truncated: bool | None = None
    full_length: int | None = None
    confidence: float | None = None  # as read now, where it is under 1 (rules/trust.py)

    @classmethod
    def cut_fields_of(
        cls, record: MemoryRecord, max_chars: int, marks: TrustMarks | None = None
    ) -> dict[str, Any]:
        cut = len(record.value) > max_chars
        below_full = marks is not None and marks.confidence < 1.0
        return (
            cls.fields_of(record)
            | trust_fields(marks)
            | {
                "confidence": marks.confidence if marks is not None and below_full else None,
                # A JSON value cut short is no longer JSON: its text, `truncated` says so.
                "value": record.value[:max_chars]
                if cut
                else shown_value(record.value, record.value_json),
                "truncated": True if cut else None,
                "full_length": len(record.value) if cut else None,
            }
        )


class SearchHit(CutMemory):
    """One memory-search result: the memory with its value cut to the configured length,
    its score and how it was found (the search's own hit: search/hits.RankedHit)."""

    omitted_when_empty = CutMemory.omitted_when_empty | {"explain", "version"}

    score: float
    matched_by: str
    explain: ScoreExplanation | None = None
    version: int | None = None  # a replaced version's number (matched_by "history")

    @classmethod
    def of(
        cls,
        record: MemoryRecord,
        score: float,
        matched_by: str,
        max_chars: int,
        explain: ScoreExplanation | None = None,
        marks: TrustMarks | None = None,
    ) -> SearchHit:
        return cls(
            **cls.cut_fields_of(record, max_chars, marks),
            score=round(score, 4),
            matched_by=matched_by,
            explain=explain,
            version=record.version if matched_by == "history" or record.valid_to else None,
        )


class TimeCueShown(ToolResult):
    """The time expression memory-search read in the query (search/time_cues.py) and its
    range (`since` included, `until` excluded; null: open). `applied`: some memory was
    stated in it, and those outside it scored lower; false: the range held none."""

    omitted_when_empty = frozenset({"anchor"})

    expression: str
    since: str | None
    until: str | None
    applied: bool
    anchor: str | None = None  # "since the release": the words of the dated memory

    @classmethod
    def of(cls, result: SearchResult) -> TimeCueShown | None:
        cue = result.time_cue
        if cue is None:
            return None
        return cls(
            expression=cue.expression,
            since=iso(cue.start),
            until=iso(cue.end),
            applied=result.time_applied,
            anchor=cue.anchor,
        )


class SearchResults(ToolResult):
    """memory-search's answer. `semantic: false`: keyword search only (see notices).
    `time_cue` (with explain): the time expression read in the query."""

    omitted_when_empty = frozenset({"notices", "time_cue"})

    results: list[SearchHit]
    semantic: bool
    notices: list[str] | None = None
    time_cue: TimeCueShown | None = None


class DeleteResult(ToolResult):
    deleted: bool
    id: int


class Learning(ToolResult):
    """inject-learning's answer: the swarm memory holding the learning, and the secrets
    redacted from it. `taken_over_from`: the memory at the learning's key was another
    agent's (a worker's, stored before `learning:` keys were the lead's) and is now this
    lead's learning."""

    omitted_when_empty = frozenset({"about_agent", "taken_over_from", "redacted"})

    id: int
    key: str
    scope: Scope
    project: str
    version: int
    created: bool
    category: LearningCategory
    agent_id: str
    about_agent: str | None = None
    taken_over_from: str | None = None
    redacted: list[RedactedSecret] | None = None

    @classmethod
    def of(cls, outcome: UpsertOutcome, category: LearningCategory) -> Learning:
        record = outcome.record
        return cls(
            id=record.id,
            key=record.key,
            scope=record.scope,
            project=record.project,
            version=record.version,
            created=outcome.created,
            category=category,
            agent_id=record.agent_id,
            about_agent=record.about_agent or None,
            taken_over_from=outcome.taken_over_from,
            redacted=RedactedSecret.all_of(outcome.redactions),
        )


# -- browsing, history and bulk deletes (memory-list, memory-history, memory-revert,
# memory-delete-many) --------------------------------------------------------------------


class ListedMemory(CutMemory):
    """One memory-list item: the memory with its value cut like a search result's."""

    version: int
    pinned: bool

    @classmethod
    def of(
        cls, record: MemoryRecord, max_chars: int, marks: TrustMarks | None = None
    ) -> ListedMemory:
        return cls(
            **cls.cut_fields_of(record, max_chars, marks),
            version=record.version,
            pinned=record.pinned,
        )


class MemoryList(ToolResult):
    """memory-list's answer: one page, newest first. Pass `next_cursor` back as `cursor`
    for the next page; null means this was the last one."""

    omitted_when_empty = frozenset({"notices"})

    memories: list[ListedMemory]
    next_cursor: str | None
    notices: list[str] | None = None


class Version(ToolResult):
    """One version of a memory: what it held, who wrote it (`written_by`) and when."""

    omitted_when_empty = frozenset({"truncated", "full_length"})

    version: int
    value: JsonValue  # as given: text, or a JSON object or array
    tags: list[str]
    metadata: dict[str, Any]
    source: Source
    written_by: str
    written_at: str | None
    current: bool
    # Until when it held (rules/validity.py): when the next version replaced it, or a
    # correction closed the memory; null while it holds.
    valid_to: str | None = None
    truncated: bool | None = None
    full_length: int | None = None

    @classmethod
    def of(cls, entry: MemoryVersion, max_chars: int | None) -> Version:
        cut = max_chars is not None and len(entry.value) > max_chars
        return cls(
            version=entry.version,
            value=entry.value[:max_chars] if cut else shown_value(entry.value, entry.value_json),
            tags=entry.tags,
            metadata=entry.metadata,
            source=entry.source,
            written_by=entry.written_by,
            written_at=iso(entry.written_at),
            current=entry.current,
            valid_to=iso(entry.valid_to),
            truncated=True if cut else None,
            full_length=len(entry.value) if cut else None,
        )


class MemoryHistory(ToolResult):
    """memory-history's answer: versions of one memory, oldest first. `earlier`: there are
    older versions; pass it as `before` to see them (left out when there are none).
    `links`: its links over time, current and removed, newest first (those whose other
    end the reader may see)."""

    omitted_when_empty = frozenset({"earlier", "links"}) | TRUST_MARKS

    id: int
    versions: list[Version]
    earlier: int | None = None
    links: list[LinkRecord] | None = None
    stale: bool | None = None  # the memory as it is now (see memory-get)
    stale_reason: str | None = None
    needs_verification: bool | None = None


class Reverted(StoredMemory):
    """memory-revert's answer: the memory as stored now. `changed: false` when it already
    held that version's content (nothing was written)."""

    reverted_to: int
    changed: bool

    @classmethod
    def of_revert(cls, outcome: UpsertOutcome, reverted_to: int) -> Reverted:
        stored = StoredMemory.of(outcome)
        return cls(**stored.__dict__, reverted_to=reverted_to, changed=outcome.changed)


class DeletedMemory(ToolResult):
    omitted_when_empty = frozenset({"task"})

    id: int
    key: str
    scope: Scope
    project: str
    agent_id: str
    source: Source
    tags: list[str]
    updated_at: str | None
    task: str | None = None

    @classmethod
    def of(cls, record: MemoryRecord) -> DeletedMemory:
        return cls(
            id=record.id,
            key=record.key,
            scope=record.scope,
            project=record.project,
            task=record.task,
            agent_id=record.agent_id,
            source=record.source,
            tags=record.tags,
            updated_at=iso(record.updated_at),
        )


class BulkDeleted(ToolResult):
    """memory-delete-many's answer. `memories` are the ones deleted (or, with dry_run,
    that would be), oldest first; `remaining` more matched beyond the limit;
    `not_allowed` matched but are not yours to delete (other agents' memories: only their
    owner or the lead may; notes: they follow their files)."""

    dry_run: bool
    deleted: int
    matched: int
    remaining: int
    not_allowed: int
    memories: list[DeletedMemory]


class CompletedTask(ToolResult):
    """memory-complete-task's answer: how many working memories were archived, or handed
    to `handoff_to`."""

    omitted_when_empty = frozenset({"handoff_to"})

    task: str
    project: str
    archived: int
    handed_off: int
    handoff_to: str | None = None


def bulk_deleted(result: DeleteManyResult) -> BulkDeleted:
    return BulkDeleted(
        dry_run=result.dry_run,
        deleted=result.deleted,
        matched=result.matched,
        remaining=result.remaining,
        not_allowed=result.not_allowed,
        memories=[DeletedMemory.of(record) for record in result.records],
    )
