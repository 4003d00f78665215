"""MemoryService: the memory rules — scopes, permissions, TTL, versions, the cap, ranking.

The MCP tools, the CLI and the hooks all call this; it calls the store and the embedder."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from memory_mcp import permissions
from memory_mcp import validation as v
from memory_mcp.browsing import (
    DEFAULT_DELETE_MANY_LIMIT,
    DEFAULT_HISTORY_LIMIT,
    DEFAULT_LIST_LIMIT,
    MAX_DELETE_MANY_LIMIT,
    MAX_HISTORY_LIMIT,
    MAX_LIST_LIMIT,
    DeleteManyResult,
    HistoryPage,
    ListFilters,
    MemoryPage,
    MemoryVersion,
    check_before,
    check_limit,
    decode_cursor,
    encode_cursor,
    parse_order,
)
from memory_mcp.embeddings import Embedder
from memory_mcp.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    NotFoundError,
    PermissionDeniedError,
)
from memory_mcp.exact_match import (
    ExactMatches,
    exact_first,
    exact_lookup,
    exact_matches,
    with_candidates,
)
from memory_mcp.injection import content_flags
from memory_mcp.models import (
    BatchItem,
    BatchOutcome,
    Caller,
    KeywordQuery,
    LearningCategory,
    MemoryRecord,
    NewMemory,
    NoteChunk,
    Ranked,
    Redaction,
    Scope,
    Source,
    StoreRequest,
    UpsertOutcome,
    Visibility,
)
from memory_mcp.permissions import Change, Origin, Target
from memory_mcp.ranking import PriorParts, RankingConfig, Relevance, fuse, is_unrelated, prior_parts
from memory_mcp.safety import redact_field, redact_json, refuse_secret_names
from memory_mcp.similar import SimilarCheck, find_similar
from memory_mcp.store import MemoryStore
from memory_mcp.store.browse import Selection
from memory_mcp.store.keyword import query_terms
from memory_mcp.time_filters import parse_time_range
from memory_mcp.vectors import Scan, Vectors

log = logging.getLogger(__name__)

# BM25 column weights for (key, value, tags): a hit in the key or a tag says more than one
# word somewhere in a long value.
KEYWORD_COLUMN_WEIGHTS = (2.0, 1.0, 1.5)
# Whole records read with the ranking facts, past `limit`: a prior can lift a candidate
# over more relevant ones, and one result not read whole costs another read (~1 ms).
LIKELY_SLACK = 5
# Keys of memories that mirror a note (notes/indexer.py); reserved so that no other memory
# can take a note's identity or be taken over by the indexer.
NOTE_KEY_PREFIX = "file:"


@dataclass(frozen=True)
class Policy:
    """The knobs of the rules. Their defaults live in one place, Settings: the composition
    root builds this from it (app.policy_from)."""

    max_memories_per_agent: int
    max_value_chars: int
    search_value_chars: int
    ttl_days: dict[Source, float]
    ranking: RankingConfig
    # A search while the model is still loading waits this long before going keyword-only.
    search_model_wait_seconds: float

    def default_ttl_seconds(self, source: Source) -> float | None:
        days = self.ttl_days.get(source, 0.0)
        return days * 86_400 if days else None


@dataclass
class SearchHit:
    """One result and the parts of its score (memory-search's `explain`):
    score = relevance * prior, then, when the search matched a key or an identifier
    exactly, (exact_level + that) / (highest level among the results + 1)."""

    record: MemoryRecord
    score: float
    relevance: float
    matched_by: str
    parts: Relevance | None = None
    prior: PriorParts | None = None
    exact_level: int = 0  # 2: the key is the query; 1: holds a rare identifier of it


@dataclass
class _Candidate:
    """A search's candidate while it is ranked, before its whole record is read."""

    record: Ranked
    score: float
    relevance: Relevance
    prior: PriorParts
    level: int


@dataclass
class SearchResult:
    hits: list[SearchHit]
    notices: list[str] = field(default_factory=list)
    semantic: bool = True  # False: keyword search only (the model was not ready)


def can_see(caller: Caller, record: MemoryRecord) -> bool:
    if record.scope is Scope.SWARM:
        return True
    if record.agent_id != caller.agent_id:
        return False
    return record.scope is Scope.AGENT or record.session_id == caller.session_id


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        policy: Policy,
        clock: Callable[[], float] = time.time,
        vectors: Vectors | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.policy = policy
        self.clock = clock
        # Embedding, storing and searching vectors (memory_mcp/vectors.py tells the story).
        self.vectors = vectors or Vectors.in_process(store.vectors, embedder, clock)

    # -- writing ----------------------------------------------------------------------------

    async def store_memory(
        self, caller: Caller, request: StoreRequest, *, embed_now: bool = True
    ) -> UpsertOutcome:
        """Store `request` for `caller` (an upsert on its identity).
        `embed_now=False` leaves the vector to the background worker.

        A swarm memory with this key owned by another agent is updated only by the lead
        (PermissionDeniedError names the owner; memory_mcp/permissions.py)."""
        now = request.written_at if request.written_at is not None else self.clock()
        new = self.prepare_memory(caller, request)
        version = self.check_expected_version(request.expected_version)
        return await self.write_memory(caller, new, version, now, embed_now=embed_now)

    def prepare_memory(self, caller: Caller, request: StoreRequest) -> NewMemory:
        """Every check of store_memory, without writing: the memory that would be stored.
        `import` checks a whole file with this before it writes anything."""
        now = request.written_at if request.written_at is not None else self.clock()
        _refuse_note_key(request.key, request.source)
        new = self._new_memory(
            caller,
            key=request.key,
            value=request.value,
            scope=request.scope,
            source=request.source,
            tags=request.tags,
            metadata=request.metadata,
            confidence=v.clean_confidence(request.confidence),
            pinned=request.pinned,
            expires_at=v.resolve_expiry(
                request.ttl_seconds,
                request.expires_at,
                self.policy.default_ttl_seconds(request.source),
                now,
            ),
            about_agent=request.about_agent,
        )
        permissions.check(caller, Target.written(caller, new), Change.UPDATE)
        return new

    def _new_memory(
        self,
        caller: Caller,
        *,
        key: str,
        value: str,
        scope: Scope,
        source: Source,
        tags: list[str],
        metadata: dict[str, Any],
        confidence: float | None = None,
        pinned: bool = False,
        expires_at: float | None,
        file_path: str | None = None,
        about_agent: str | None = None,
    ) -> NewMemory:
        """The rules every stored memory passes: sizes, plain JSON, no secrets (refused in
        the key, tags and metadata keys; redacted in the value and metadata values, see
        safety.py); flagged if it reads like instructions."""
        clean_key = v.clean_key(key)
        clean_value = v.clean_value(value, self.policy.max_value_chars)
        clean_tags = v.clean_tags(tags)
        clean_metadata = v.clean_metadata(metadata)
        # After every size check, so scanning looks at bounded text only; on the tags as
        # given, before clean_tags lower-cased them.
        refuse_secret_names(clean_key, [tag.strip() for tag in tags])
        redactions: list[Redaction] = []
        safe_metadata = redact_json(clean_metadata, "metadata", redactions)
        safe_value, value_redactions = redact_field(clean_value, "value")
        new = NewMemory(
            key=clean_key,
            value=safe_value,
            scope=scope,
            agent_id=caller.agent_id,
            session_id=caller.session_id if scope is Scope.SESSION else "",
            source=source,
            tags=clean_tags,
            metadata=safe_metadata,
            flags=content_flags(clean_key, safe_value),
            confidence=confidence,
            pinned=pinned,
            expires_at=expires_at,
            file_path=file_path,
            about_agent=about_agent,
            redactions=value_redactions + redactions,
        )
        return new

    @staticmethod
    def check_expected_version(expected_version: int | None) -> int | None:
        if expected_version is not None and not v.is_whole_number(expected_version, 0):
            raise InvalidInputError(
                "expected_version", f"must be a whole number from 0 to {v.MAX_WHOLE_NUMBER}"
            )
        return expected_version

    async def write_memory(
        self,
        caller: Caller,
        new: NewMemory,
        expected_version: int | None = None,
        now: float | None = None,
        *,
        embed_now: bool = True,
        origin: Origin = Origin.CALLER,
        take_over: bool = False,
    ) -> UpsertOutcome:
        """Upsert a memory that prepare_memory built for `caller` (evicting over the cap),
        then embed it if the model is loaded (and `embed_now`). Whether it may update a
        memory another agent holds is decided here (permissions.py, with `origin`) and
        applied by the store to the row it reads under its write lock. `take_over`: that
        memory becomes the caller's (inject_learning)."""
        now = now if now is not None else self.clock()
        permissions.check(caller, Target.written(caller, new), Change.UPDATE, origin)
        outcome = await self.store.upsert(
            new,
            expected_version=expected_version,
            now=now,
            cap=self.policy.max_memories_per_agent,
            may_overwrite_others=permissions.may_overwrite_others(caller, new, origin),
            take_over=take_over,
        )
        outcome.redactions = list(new.redactions)
        if outcome.evicted_ids:
            log.info("agent %s over its cap: evicted %s", new.agent_id, outcome.evicted_ids)
        if outcome.changed and embed_now:
            await self.vectors.embed_written(outcome.record)
        return outcome

    async def similar_to(self, caller: Caller, record: MemoryRecord) -> SimilarCheck:
        """The memories `caller` can see that closely resemble `record` (just written):
        store_memory's `similar` (memory_mcp/similar.py)."""
        return await find_similar(self.vectors, self.store, caller, record, self.clock())

    # -- notes (memory_mcp/notes/): memories that mirror a file ----------------------------

    async def store_note_chunk(
        self, caller: Caller, chunk: NoteChunk, origin: Origin
    ) -> UpsertOutcome:
        """Mirror one chunk of a note. The vector is left to the background worker, so a
        big note's chunks never hold up the notes saved after it. A shared note's chunk
        another agent indexed may be updated by a lead, or when this server read the note
        from the shared folder itself (`origin` FOLDER: see permissions.py)."""
        new = self._new_memory(
            caller,
            key=chunk.key,
            value=chunk.value,
            scope=chunk.scope,
            source=Source.FILE_INDEX,
            tags=[],
            metadata=chunk.metadata,
            expires_at=chunk.expires_at,
            file_path=chunk.file_path,
        )
        return await self.write_memory(caller, new, embed_now=False, origin=origin)

    def _note_owner(self, caller: Caller, scope: Scope) -> str | None:
        return caller.agent_id if scope is not Scope.SWARM else None

    async def note_records(
        self, caller: Caller, scope: Scope, file_path: str
    ) -> list[MemoryRecord]:
        """The memories mirroring `file_path` in `caller`'s folder of `scope`."""
        return await self.store.records_for_file(
            file_path, scope, self._note_owner(caller, scope), Source.FILE_INDEX
        )

    async def note_paths(self, caller: Caller, scope: Scope, prefix: str) -> set[str]:
        """The note files under `prefix` that have memories in `caller`'s folder of `scope`."""
        return await self.store.file_paths(
            prefix, scope, self._note_owner(caller, scope), Source.FILE_INDEX
        )

    def check_note_change(
        self, caller: Caller, records: Sequence[MemoryRecord], origin: Origin
    ) -> None:
        """Refuse, naming the owner, unless `caller` may change or remove every one of a
        note's memories (`records`, from note_records) with content of `origin`: a note is
        replaced as a set, so it is checked whole before anything is written."""
        for record in records:
            permissions.check(caller, Target.of(record), Change.NOTE, origin)

    async def forget_note_records(
        self, caller: Caller, records: list[MemoryRecord], origin: Origin
    ) -> int:
        """Delete memories that note_records returned (their file or chunk is gone)."""
        notes = [r for r in records if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, notes, origin)
        return await self.store.delete([r.id for r in notes])

    async def set_note_expiry(
        self,
        caller: Caller,
        records: list[MemoryRecord],
        expires_at: float | None,
        origin: Origin,
    ) -> None:
        notes = [r for r in records if r.source is Source.FILE_INDEX]
        self.check_note_change(caller, notes, origin)
        await self.store.set_expiry([r.id for r in notes], expires_at)

    async def write_batch(
        self, memories: Sequence[tuple[Caller, NewMemory, float | None]]
    ) -> BatchOutcome:
        """Write memories that prepare_memory built, each at its own time (None: now), in
        ONE transaction: committed whole or not at all (import). Vectors are left to
        `vectors.embed_texts` or the background worker."""
        now = self.clock()
        for caller, new, _ in memories:
            permissions.check(caller, Target.written(caller, new), Change.UPDATE)
        items = [
            BatchItem(
                new,
                at if at is not None else now,
                permissions.may_overwrite_others(caller, new),
            )
            for caller, new, at in memories
        ]
        outcome = await self.store.upsert_many(items, cap=self.policy.max_memories_per_agent)
        if outcome.evicted_ids:
            log.info("over the cap: evicted %s", outcome.evicted_ids)
        return outcome

    async def ownership_refusals(
        self, memories: Sequence[tuple[Caller, NewMemory]]
    ) -> dict[int, str]:
        """The writes, in this order, that the store would refuse because the memory is
        another agent's (stored, or created by an earlier one of these): index -> reason.
        An import checks this before it writes anything."""
        stored = await self.store.owners([new.identity for _, new in memories])
        owners = {identity: agent for identity, (_, agent) in stored.items()}
        refused: dict[int, str] = {}
        for index, (caller, new) in enumerate(memories):
            owner = owners.setdefault(new.identity, new.agent_id)
            if owner == new.agent_id or permissions.may_overwrite_others(caller, new):
                continue
            where = (
                f"memory {stored[new.identity][0]}"
                if new.identity in stored
                else "a memory created earlier in this file"
            )
            refused[index] = (
                f"{where} ({new.key!r}) is a {new.scope.value} memory of agent {owner!r}; "
                "only its owner or the lead may update it"
            )
        return refused

    async def inject_learning(
        self,
        caller: Caller,
        learning: str,
        category: LearningCategory,
        agent_id: str | None = None,
    ) -> UpsertOutcome:
        """Lead only: a swarm-wide learning, tagged with its category. Idempotent: the key
        is derived from the category and the normalised text. The lead owns it (the agent
        it is about must not be able to delete it); `agent_id` is kept as `about_agent`.

        A memory already at the key that this lead did not inject (a worker's, stored
        before `learning:` keys were the lead's; another lead's) is taken over: it becomes
        this lead's learning, a new version, the old one kept in history, and the answer's
        `taken_over_from` names the old owner. Adopting it as it was would answer with the
        worker as owner and leave the worker free to rewrite or delete the lead's learning;
        refusing would let anyone who once wrote the key block that learning for good."""
        if not caller.is_lead:
            raise PermissionDeniedError(
                f"inject-learning is for the lead agent; {caller.agent_id!r} is a worker"
            )
        text, redactions = redact_field(
            v.clean_value(learning, self.policy.max_value_chars, field="learning"), "learning"
        )
        target = None if agent_id in (None, "") else v.clean_key(agent_id, "agent_id")
        normalised = " ".join(text.lower().split())
        digest = hashlib.sha256(f"{category.value}\x1f{normalised}".encode()).hexdigest()[:16]
        metadata: dict[str, Any] = {"injected_by": caller.agent_id, "category": category.value}
        request = StoreRequest(
            key=f"learning:{category.value}:{digest}",
            value=text,
            scope=Scope.SWARM,
            tags=[category.value, "learning"],
            metadata=metadata,
            about_agent=target,
        )
        outcome = await self.write_memory(
            caller, self.prepare_memory(caller, request), take_over=True
        )
        outcome.redactions = redactions  # the learning's: its text is the value
        if outcome.taken_over_from is not None:
            log.warning(
                "learning %s (memory %d) was agent %r's; now lead %r's",
                request.key,
                outcome.record.id,
                outcome.taken_over_from,
                caller.agent_id,
            )
        return outcome

    async def delete(self, caller: Caller, memory_id: Any) -> int:
        record = await self._visible_record(caller, memory_id)
        return await self._delete_record(caller, record)

    async def delete_by_key(self, caller: Caller, key: str, scope: Scope = Scope.AGENT) -> int:
        """Delete the memory that store_memory(key, scope) by `caller` would update: its
        own in agent and session scope, the one swarm memory of that key in swarm scope."""
        identity = _memory_at(caller, v.clean_key(key), scope).identity
        record = await self.store.get_by_identity(identity)
        if record is None or not can_see(caller, record):
            raise NotFoundError(
                f"no {scope.value} memory with key {key.strip()!r} is visible to you"
            )
        return await self._delete_record(caller, record)

    async def _delete_record(self, caller: Caller, record: MemoryRecord) -> int:
        permissions.check(caller, Target.of(record), Change.DELETE)
        _refuse_deleting_a_live_note(record)
        await self.store.delete([record.id])
        return record.id

    async def delete_many(
        self,
        caller: Caller,
        *,
        tags: list[str] | None = None,
        source: Source | None = None,
        older_than: float | None = None,
        scope: Scope | None = None,
        dry_run: bool = False,
        limit: int = DEFAULT_DELETE_MANY_LIMIT,
    ) -> DeleteManyResult:
        """Delete, in one transaction, the oldest `limit` memories `caller` could delete
        one by one (its own; the lead also swarm ones) that have all `tags`, come from
        `source` and were last updated at or before `older_than` (UNIX seconds); expired
        ones included. Notes are left to their files. `dry_run`: choose, delete nothing."""
        cleaned_tags = tuple(v.clean_tags(tags or []))
        if not cleaned_tags and source is None and older_than is None:
            raise InvalidInputError(
                "tags", "give tags, source or older_than (or several): which memories to delete"
            )
        if source is Source.FILE_INDEX:
            raise InvalidInputError(
                "source", "notes follow their files: edit or delete the files instead"
            )
        limit = check_limit(limit, MAX_DELETE_MANY_LIMIT)
        vis = Visibility(
            caller=caller,
            scope=scope,
            tags=cleaned_tags,
            source=source,
            include_expired=True,
            now=self.clock(),
        )
        rights = permissions.bulk_rights(caller)
        chosen = await self.store.bulk_delete(
            vis,
            updated_before=older_than,
            agent_id=caller.agent_id,
            swarm_too=rights.others_swarm,
            spared_swarm_prefix=None if rights.swarm_learnings else permissions.LEARNING_KEY_PREFIX,
            limit=limit,
            dry_run=dry_run,
        )
        deleted = 0 if dry_run else len(chosen.ids)
        if deleted:
            log.info("agent %s deleted %d memories in bulk", caller.agent_id, deleted)
        return DeleteManyResult(chosen.records, chosen.matched, chosen.refused, deleted, dry_run)

    async def revert(
        self,
        caller: Caller,
        memory_id: Any,
        version: Any,
        expected_version: int | None = None,
    ) -> UpsertOutcome:
        """Write a new version equal to an earlier one (value, tags, metadata, source);
        the memory keeps its expiry, pinning and confidence. Allowed to whoever may update
        it. The write is conditional on the version read here (or `expected_version`), so
        a change made meanwhile is never overwritten silently."""
        record = await self._visible_record(caller, memory_id)
        expected = self.check_expected_version(expected_version)
        permissions.check(caller, Target.of(record), Change.REVERT)
        if record.source is Source.FILE_INDEX:
            raise PermissionDeniedError(
                f"memory {record.id} mirrors note {record.file_path}; "
                "edit the file instead (its memories follow it)"
            )
        old = await self._version(record, version)
        new = self._new_memory(
            caller,
            key=record.key,
            value=old.value,
            scope=record.scope,
            source=old.source,
            tags=old.tags,
            metadata=old.metadata,
            confidence=record.confidence,
            pinned=record.pinned,
            expires_at=record.expires_at,
            about_agent=record.about_agent,
        )
        if expected is None:
            expected = record.version
        return await self.write_memory(caller, new, expected)

    async def purge_expired(self) -> int:
        return await self.store.purge_expired(self.clock())

    # -- reading ----------------------------------------------------------------------------

    async def visible_records(self, caller: Caller) -> AsyncIterator[MemoryRecord]:
        """Every memory `caller` may read, expired ones included (memory-get returns them
        too), by id: what `memory-mcp export --agent-id` writes."""
        vis = Visibility(caller=caller, include_expired=True, now=self.clock())
        async for record in self.store.iter_records(vis):
            yield record

    async def all_records(self) -> AsyncIterator[MemoryRecord]:
        """Every memory of every agent, private ones included: for operators only
        (`memory-mcp export --all`), never reachable from a tool."""
        async for record in self.store.iter_records():
            yield record

    async def recent_visible(self, caller: Caller, limit: int) -> list[MemoryRecord]:
        """The `limit` most recently updated unexpired memories `caller` may read."""
        return await self.store.recent(Visibility(caller=caller, now=self.clock()), limit)

    async def count(self) -> int:
        """How many memories the store holds, every agent's (for operators: doctor)."""
        return await self.store.count()

    async def cap_usage(self, agent_id: str, identities: list[str]) -> tuple[int, int]:
        """(memories `agent_id` holds that count against its cap, how many of the
        `identities` (NewMemory.identity) would be new): an import checks before writing."""
        return await self.store.cap_usage(agent_id, identities)

    async def flush_accesses(self) -> None:
        """Write the reads memory-get counted in memory (store/access.py)."""
        await self.store.flush_accesses()

    async def get(self, caller: Caller, memory_id: Any, *, count: bool = True) -> MemoryRecord:
        """The memory, if `caller` may see it. `count`: an agent's read, which adds to its
        access count (a ranking signal); a person looking at it in the web view is not."""
        record = await self._visible_record(caller, memory_id)
        if not count:
            return record
        now = self.clock()
        # Counted in memory and written later in a batch: a read never waits for writers.
        record.access_count += self.store.touch(record.id, now)
        record.last_accessed_at = now
        return record

    async def _visible_record(self, caller: Caller, given_id: Any) -> MemoryRecord:
        """The memory of an id as a caller gave it (checked here: every read and change by
        id comes through), if `caller` may see it."""
        memory_id = v.clean_id(given_id, self.store.largest_id)
        record = await self.store.get(memory_id)
        if record is None or not can_see(caller, record):
            # The same answer whether it is missing or someone else's: existence is private.
            raise MemoryNotFoundError(memory_id)
        return record

    async def list_memories(
        self,
        caller: Caller,
        filters: ListFilters | None = None,
        order: str = "updated",
        cursor: str | None = None,
        limit: int = DEFAULT_LIST_LIMIT,
    ) -> MemoryPage:
        """Memories `caller` may read, newest first by `order` ("updated" or "created"),
        `limit` (1-100) at a time; pass the page's `next_cursor` back for the next one.
        Unexpired only unless `filters.include_expired`. See memory_mcp/browsing.py."""
        filters = filters or ListFilters()
        sort = parse_order(order)
        after = None if cursor is None else decode_cursor(cursor, sort, self.store.largest_id)
        limit = check_limit(limit, MAX_LIST_LIMIT)
        vis = Visibility(
            caller=caller,
            scope=filters.scope,
            tags=filters.tags,
            source=filters.source,
            include_expired=filters.include_expired,
            now=self.clock(),
        )
        selection = Selection(vis, sort, filters.agent_id, filters.since, filters.until)
        records, last = await self.store.list_page(selection, after, limit)
        return MemoryPage(records, None if last is None else encode_cursor(sort, last))

    async def history(
        self,
        caller: Caller,
        memory_id: Any,
        limit: int | None = DEFAULT_HISTORY_LIMIT,
        before: Any = None,
    ) -> HistoryPage:
        """Versions of a memory `caller` may read (expired too), oldest first: what each
        held, who wrote it, when. The newest `limit` (1-500; None: all) of those older than
        version `before` (None: up to the current one, which is last)."""
        record = await self._visible_record(caller, memory_id)
        if limit is not None:
            limit = check_limit(limit, MAX_HISTORY_LIMIT)
        return await self._versions(record, check_before(before), limit)

    async def version_of(self, caller: Caller, memory_id: Any, version: Any) -> MemoryVersion:
        """One version of a memory `caller` may read (see history)."""
        record = await self._visible_record(caller, memory_id)
        return await self._version(record, version)

    async def _version(self, record: MemoryRecord, version: Any) -> MemoryVersion:
        if not v.is_whole_number(version):
            raise InvalidInputError(
                "version", f"{v.shown(version)} is not a version number (1 or more)"
            )
        page = await self._versions(record, version + 1, 1)
        if not page.versions or page.versions[0].version != version:
            raise InvalidInputError(
                "version", f"memory {record.id} has versions 1 to {record.version}, not {version}"
            )
        return page.versions[0]

    async def _versions(
        self, record: MemoryRecord, before: int | None, limit: int | None
    ) -> HistoryPage:
        # A version replaced after `record` was read is left out: the list ends at the
        # version `record` is, which is the current one.
        if before is None or before > record.version:
            with_current, below = True, record.version
        else:
            with_current, below = False, before
        wanted = None if limit is None else limit - (1 if with_current else 0)
        # One replaced version more than shown: when it was replaced is when the oldest one
        # shown was written, and it tells that there are earlier ones.
        rows = await self.store.history(record.id, below, None if wanted is None else wanted + 1)
        written_at = record.created_at
        more = wanted is not None and len(rows) > wanted
        if more:
            written_at = rows[0]["replaced_at"]
            rows = rows[1:]
        versions = []
        for row in rows:
            versions.append(
                MemoryVersion(
                    version=row["version"],
                    value=row["value"],
                    tags=_json_or(row["tags"], []),
                    metadata=_json_or(row["metadata"], {}),
                    source=_source_or(row["source"], record.source),
                    written_by=row["updated_by"] or record.agent_id,
                    written_at=written_at,
                    current=False,
                )
            )
            written_at = row["replaced_at"]  # the next version was written then
        if with_current:
            versions.append(
                MemoryVersion(
                    version=record.version,
                    value=record.value,
                    tags=record.tags,
                    metadata=record.metadata,
                    source=record.source,
                    written_by=record.updated_by,
                    written_at=record.updated_at,
                    current=True,
                )
            )
        return HistoryPage(versions, versions[0].version if more else None)

    def is_expired(self, record: MemoryRecord) -> bool:
        return record.expires_at is not None and record.expires_at <= self.clock()

    async def search(
        self,
        caller: Caller,
        query: str,
        limit: int = 10,
        scope: Scope | None = None,
        tags: list[str] | None = None,
        source: Source | None = None,
        include_expired: bool = False,
        *,
        since: str | None = None,
        until: str | None = None,
        min_score: float | None = None,
    ) -> SearchResult:
        """`scope` None: every scope the caller can see. `since`/`until`: only memories
        last changed (updated_at) in that window, an ISO date-time or an age such as "7d"
        (time_filters.py); like every filter they apply before either arm's top-k cut.
        `min_score`: leave out results scoring below it (the same score the results show)."""
        text = v.clean_query(query)
        limit = v.clean_limit(limit)
        now = self.clock()
        window = parse_time_range(since, until, now)
        floor = v.clean_min_score(min_score)
        vis = Visibility(
            caller=caller,
            scope=scope,
            tags=tuple(v.clean_tags(tags or [])),
            source=source,
            include_expired=include_expired,
            now=now,
            updated_since=window.since,
            updated_until=window.until,
        )
        config = self.policy.ranking
        pool = max(limit * config.candidate_multiplier, config.min_candidates)
        notices: list[str] = []

        keyword_hits: list[tuple[int, float]] = []
        terms = query_terms(text)
        vector_hits: list[tuple[int, float]] = []
        semantic = await self.vectors.model_ready(self.policy.search_model_wait_seconds)
        query_vectors: list[np.ndarray] = []
        exact: list[ExactMatches] = []

        records: dict[int, MemoryRecord] = {}  # read whole: the exact candidates
        facts: dict[int, Ranked] = {}  # what ranking needs of the other candidates
        scans: list[Scan | None] = []

        lookup = exact_lookup(text)
        keyword_query = KeywordQuery(
            terms=tuple(terms),
            limit=pool,
            column_weights=KEYWORD_COLUMN_WEIGHTS,
            key=lookup.key,
            identifiers=lookup.identifiers,
            key_limit=lookup.key_limit,
            identifier_limit=lookup.identifier_limit,
            records_for_holders_up_to=lookup.rare_up_to,
        )

        async def keyword_arm() -> None:
            # One read, with what ranking needs of its finds: afterwards only the vector
            # arm's own finds are left to read.
            finds = await self.store.keyword_finds(keyword_query, vis)
            keyword_hits.extend(finds.hits)
            exact.append(exact_matches(lookup, finds.holding, finds.exact_ids))
            records.update(finds.records)
            facts.update(finds.facts)

        async def vector_arm() -> None:
            async with anyio.create_task_group() as index:  # catch up while the model embeds
                index.start_soon(self.vectors.catch_up)
                query_vectors.append(await self.vectors.embed_query(text))
            scans.append(await self.vectors.scan(query_vectors[0]))

        # The query embedding (a model thread) and the FTS5 query (a database thread)
        # overlap instead of adding up.
        async with anyio.create_task_group() as arms:
            if semantic:  # first: the query embedding is the longest part
                arms.start_soon(vector_arm)
            arms.start_soon(keyword_arm)
        # Exact keys and identifiers are ranked even if the keyword pool left them out.
        keyword_hits = with_candidates(keyword_hits, exact[0].candidate_ids)
        if semantic:
            query_vector = query_vectors[0]
            # The keyword candidates get their cosine too, so both arms judge each one.
            vector_hits = await self.vectors.nearest(
                query_vector, vis, pool, [memory_id for memory_id, _ in keyword_hits], scans[0]
            )
        else:
            notices.append(
                "semantic search is warming up (embedding model loading): "
                "these results come from keyword search only"
            )

        fused = fuse(keyword_hits, vector_hits, config)
        # Ranking reads a few facts of each candidate; whole records are read for the
        # results only. In the same read as the vector arm's own finds' facts: the whole
        # records of the likely results, the most relevant candidates of either arm not
        # read whole yet (a score is the relevance times a prior of at most 1), so a
        # second read is seldom needed.
        facts.update(records)
        by_relevance = sorted(
            (i for i in fused if i not in records), key=lambda i: -fused[i].relevance
        )
        likely_count = limit + LIKELY_SLACK
        rest = [i for i in by_relevance[likely_count:] if i not in facts]
        found, likely = await self.store.rank_facts(rest, by_relevance[:likely_count])
        facts.update(found)
        records.update(likely)
        facts.update(likely)
        matches = exact[0]
        candidates = []
        for memory_id, rel in fused.items():
            fact = facts.get(memory_id)
            if fact is None or is_unrelated(rel):  # deleted meanwhile, or unrelated
                continue
            parts = prior_parts(fact, vis.now, config)
            # Only an exact candidate can match exactly (exact_match.py), and the keyword
            # arm read every one of them whole.
            record = records.get(memory_id)
            level = matches.level(record) if record is not None else 0
            candidates.append(_Candidate(fact, rel.relevance * parts.value, rel, parts, level))
        ranked = exact_first(candidates, lambda candidate: candidate.level)
        if floor is not None:
            # Scores decrease down the list (exact_first), so this keeps a prefix.
            ranked = [candidate for candidate in ranked if candidate.score >= floor]
        hits = await self._whole_hits(ranked, records, limit)
        return SearchResult(hits, notices, semantic)

    async def _whole_hits(
        self, ranked: list[_Candidate], records: dict[int, MemoryRecord], limit: int
    ) -> list[SearchHit]:
        """The first `limit` candidates as hits with their whole records, read now where
        the search has only their facts; one deleted or damaged since is passed over."""
        hits: list[SearchHit] = []
        taken = 0
        while len(hits) < limit and taken < len(ranked):
            batch = ranked[taken : taken + limit - len(hits)]
            taken += len(batch)
            unread = [c.record.id for c in batch if c.record.id not in records]
            records.update(await self.store.fetch_many(unread))
            for c in batch:
                record = records.get(c.record.id)
                if record is not None:
                    hits.append(
                        SearchHit(
                            record,
                            c.score,
                            c.relevance.relevance,
                            c.relevance.matched_by,
                            c.relevance,
                            c.prior,
                            c.level,
                        )
                    )
        return hits

    # -- embeddings (the Vectors component; these stay for the service's callers) ---------

    @property
    def vector_model(self) -> str:
        return self.vectors.model

    async def sync_index(self) -> None:
        """Bring the vector index up to the store's revision (other processes included)."""
        await self.vectors.catch_up()

    async def embed_pending(
        self,
        batch_size: int = 128,
        progress: Callable[[int], None] | None = None,
        max_batches: int | None = None,
        batch_chars: int | None = None,
        call_chars: int | None = None,
    ) -> int:
        """Embed stored texts that have no vector yet: see Vectors.embed_pending."""
        return await self.vectors.embed_pending(
            batch_size, progress, max_batches, batch_chars, call_chars
        )


def _memory_at(caller: Caller, key: str, scope: Scope) -> NewMemory:
    """The memory store_memory(key, scope) by `caller` would write, for its identity."""
    session_id = caller.session_id if scope is Scope.SESSION else ""
    return NewMemory(key, "", scope, caller.agent_id, session_id, Source.MANUAL)


def _json_or(text: Any, default: Any) -> Any:
    """A history row's JSON column; a damaged one reads as `default` (history is shown,
    never refused, for one bad column)."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def _source_or(name: Any, default: Source) -> Source:
    try:
        return Source(name)
    except ValueError:
        return default


def _refuse_note_key(key: str, source: Source) -> None:
    if source is not Source.FILE_INDEX and key.strip().startswith(NOTE_KEY_PREFIX):
        raise InvalidInputError(
            "key",
            f"keys starting with {NOTE_KEY_PREFIX!r} are reserved for notes indexed from "
            "the memory folders; choose another key",
        )


def _refuse_deleting_a_live_note(record: MemoryRecord) -> None:
    """A note's memory mirrors its file: deleted alone, it would come back at the next
    edit or start-up. Once the file is gone, the memory may go too."""
    path = record.file_path
    if record.source is not Source.FILE_INDEX or not path or not os.path.lexists(path):
        return
    start, end = record.metadata.get("start_line"), record.metadata.get("end_line")
    lines = f" lines {start}-{end}" if start and end else ""
    raise PermissionDeniedError(
        f"memory {record.id} mirrors note {path}{lines}; edit or delete the file instead "
        "(its memories follow it)"
    )


__all__ = [
    "MemoryService",
    "Policy",
    "SearchHit",
    "SearchResult",
    "can_see",
]
