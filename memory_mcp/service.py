"""MemoryService: the memory rules — scopes, permissions, TTL, versions, the cap, ranking.

The MCP tools, the CLI and the hooks all call this; it calls the store and the embedder."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from memory_mcp import permissions
from memory_mcp.browsing import (
    DEFAULT_DELETE_MANY_LIMIT,
    MAX_DELETE_MANY_LIMIT,
    DeleteManyResult,
    check_limit,
)
from memory_mcp.checks import validation as v
from memory_mcp.checks.new_memory import checked_memory
from memory_mcp.checks.safety import redact_field, refuse_secret_name
from memory_mcp.errors import (
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
)
from memory_mcp.linking import MemoryLinks
from memory_mcp.models import (
    NOTE_KEY_PREFIX,
    BatchItem,
    BatchOutcome,
    Caller,
    LearningCategory,
    MemoryRecord,
    NewMemory,
    NoteChunk,
    Scope,
    Source,
    StoreRequest,
    UpsertOutcome,
    Visibility,
)
from memory_mcp.note_records import NoteRecords
from memory_mcp.permissions import Change, Origin, Target, can_see
from memory_mcp.policy import Policy
from memory_mcp.reading import MemoryReads
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.similar import find_similar
from memory_mcp.semantic.similar_check import SimilarCheck
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.store.repository import MemoryStore
from memory_mcp.versions import one_version

log = logging.getLogger(__name__)


class MemoryService(MemoryLinks, MemoryReads, NoteRecords):
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
        # Embedding, storing and searching vectors (memory_mcp/semantic/vectors.py tells the story).
        self.vectors = vectors or Vectors.in_process(store.vectors, embedder, clock)

    # -- writing ----------------------------------------------------------------------------

    async def store_memory(
        self,
        caller: Caller,
        request: StoreRequest,
        *,
        embed_now: bool = True,
        then: Callable[[UpsertOutcome], Awaitable[None]] | None = None,
    ) -> UpsertOutcome:
        """Store `request` for `caller` (an upsert on its identity).
        `embed_now=False` leaves the vector to the background worker. `then`: see
        write_memory.

        A swarm memory with this key owned by another agent is updated only by the lead
        (PermissionDeniedError names the owner; memory_mcp/permissions.py)."""
        now = request.written_at if request.written_at is not None else self.clock()
        new = self.prepare_memory(caller, request)
        version = self.check_expected_version(request.expected_version)
        return await self.write_memory(caller, new, version, now, embed_now=embed_now, then=then)

    async def store_and_check(
        self, caller: Caller, request: StoreRequest
    ) -> tuple[UpsertOutcome, SimilarCheck]:
        """store_memory, and the near-duplicate check of the memory it wrote (similar_to)
        made on the way: the check's reads run beside the model and the vector's save
        instead of after them (Vectors.write_embedded). The memory-store tool's call."""
        checks: list[SimilarCheck] = []

        async def check(outcome: UpsertOutcome) -> None:
            checks.append(await self.similar_to(caller, outcome.record))

        outcome = await self.store_memory(caller, request, then=check)
        return outcome, checks[0]

    def prepare_memory(self, caller: Caller, request: StoreRequest) -> NewMemory:
        """Every check of store_memory, without writing: the memory that would be stored.
        `import` checks a whole file with this before it writes anything."""
        now = request.written_at if request.written_at is not None else self.clock()
        _refuse_note_key(request.key, request.source)
        new = checked_memory(
            caller,
            self.policy.max_value_chars,
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
        then: Callable[[UpsertOutcome], Awaitable[None]] | None = None,
    ) -> UpsertOutcome:
        """Upsert a memory that prepare_memory built for `caller` (evicting over the cap),
        embedding it meanwhile if the model is loaded (and `embed_now`; see
        Vectors.write_embedded). Whether it may update a memory another agent holds is
        decided here (permissions.py, with `origin`) and applied by the store to the row it
        reads under its write lock. `take_over`: that memory becomes the caller's
        (inject_learning). `then(outcome)` runs once the memory is written and its vector
        known, before this returns (store_and_check's near-duplicate check)."""
        now = now if now is not None else self.clock()
        permissions.check(caller, Target.written(caller, new), Change.UPDATE, origin)

        async def upsert() -> UpsertOutcome:
            return await self.store.upsert(
                new,
                expected_version=expected_version,
                now=now,
                cap=self.policy.max_memories_per_agent,
                may_overwrite_others=permissions.may_overwrite_others(caller, new, origin),
                take_over=take_over,
            )

        if embed_now:
            outcome = await self.vectors.write_embedded(new.value, upsert, then)
        else:
            outcome = await upsert()
            if then is not None:
                await then(outcome)
        outcome.redactions = list(new.redactions)
        if outcome.evicted_ids:
            log.info("agent %s over its cap: evicted %s", new.agent_id, outcome.evicted_ids)
        return outcome

    async def similar_to(self, caller: Caller, record: MemoryRecord) -> SimilarCheck:
        """The memories `caller` can see that closely resemble `record` (just written):
        store_memory's `similar` (memory_mcp/semantic/similar.py)."""
        return await find_similar(self.vectors, self.store, caller, record, self.clock())

    # -- notes (memory_mcp/notes/): a chunk's write; a note's set is note_records.py's ---

    async def store_note_chunk(
        self, caller: Caller, chunk: NoteChunk, origin: Origin
    ) -> UpsertOutcome:
        """Mirror one chunk of a note. The vector is left to the background worker, so a
        big note's chunks never hold up the notes saved after it. A shared note's chunk
        another agent indexed may be updated by a lead, or when this server read the note
        from the shared folder itself (`origin` FOLDER: see permissions.py)."""
        new = checked_memory(
            caller,
            self.policy.max_value_chars,
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
        if target is not None:  # kept as the learning's about_agent, shown to every agent
            refuse_secret_name(target, "agent_id", "agent_id")
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
                "arguments",
                "give at least one of tags, source and older_than (they combine): "
                "which memories to delete",
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
        old = await one_version(self.store, record, version)
        new = checked_memory(
            caller,
            self.policy.max_value_chars,
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


__all__ = ["MemoryService"]
