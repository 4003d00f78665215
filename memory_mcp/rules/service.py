"""MemoryService: the memory rules — scopes, permissions, TTL, versions, the cap, links,
notes — applied around the store and the vectors. The MCP tools, the CLI, the web view and
the hooks all call this; it calls the store (store/), the vectors (semantic/) and the search
pipeline (search/).

Who may read or change a memory is decided in one place, rules/permissions.py (`can_see`,
`decide`/`check`); every method here asks it before it reads or writes. Reads by id go
through `_visible_record`: a memory someone may not see is "not found", the same answer as a
missing one.

Links: a link is its source memory's, changed as an update of it is, and seen by whoever
may see both of its ends: a memory's links to or from memories its reader may not see are
left out everywhere (memory-get, memory-related, a search's expansion, the knowledge-graph
tools, exports), never counted, never named. Links have their own history: a removed link
stays as a row with who removed it and when (its target deleted: removed by nobody), and
making or removing a link writes no new version of the memory (its text did not change).

Notes (memory_mcp/notes/): a note's chunks are written by the write path every memory takes
(store_note_chunk); a note's memories are found, removed or expired as a set, each change
asked of the one rule (Change.NOTE) before anything is written."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.new_memory import checked_memory
from memory_mcp.checks.safety import redact_field, refuse_secret_name
from memory_mcp.errors import (
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
)
from memory_mcp.models import (
    EVERY_PROJECT,
    NOTE_KEY_PREFIX,
    BatchItem,
    BatchOutcome,
    Caller,
    LearningCategory,
    Link,
    LinkOutcome,
    MemoryRecord,
    NewMemory,
    NoteChunk,
    Placement,
    Scope,
    SearchRequest,
    Source,
    StoreRequest,
    UpsertOutcome,
    Visibility,
)
from memory_mcp.rules import permissions
from memory_mcp.rules.browsing import (
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
from memory_mcp.rules.decay import Faded, archive_faded
from memory_mcp.rules.links import (
    DEFAULT_FAN_OUT,
    DEFAULT_RELATED_LIMIT,
    MAX_DEPTH,
    MAX_FAN_OUT,
    MAX_LINK_HISTORY,
    MAX_RELATED_LIMIT,
    MAX_SHOWN_LINKS,
    WAYS,
    Direction,
    LinkedMemory,
    LinkEvent,
    Neighbour,
    Related,
    bounded,
    far_end,
    near_end,
    over_fan_out,
    parse_direction,
    within_fan_out,
)
from memory_mcp.rules.memories_block import pool_view
from memory_mcp.rules.permissions import Change, Origin, Target, can_see, can_see_memory_of
from memory_mcp.rules.policy import Policy
from memory_mcp.rules.quarantine import Quarantine, held
from memory_mcp.rules.task_completions import record_completion
from memory_mcp.rules.trust import TrustMarks, marks_of
from memory_mcp.rules.versions import one_version, versions_page
from memory_mcp.rules.write_policy import check_kind
from memory_mcp.search import pipeline
from memory_mcp.search.hits import SearchResult
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.similar import find_similar
from memory_mcp.semantic.similar_check import SimilarCheck
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.store.browsing import Selection
from memory_mcp.store.repository import MemoryStore

log = logging.getLogger(__name__)

MAX_LINKS_PER_MEMORY = 1_000
_ID_BATCH = 500  # memory ids in one statement


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        policy: Policy,
        vectors: Vectors,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.policy = policy
        self.clock = clock
        # Embedding, storing and searching vectors (semantic/vectors.py tells the story).
        self.vectors = vectors
        self.quarantine = Quarantine(store)  # memories held for approval

    # -- writing ----------------------------------------------------------------------------

    async def store_memory(
        self,
        caller: Caller,
        request: StoreRequest,
        *,
        embed_now: bool = True,
        then: Callable[[UpsertOutcome], Awaitable[None]] | None = None,
    ) -> UpsertOutcome:
        """Store `request` for `caller` (an upsert on its identity). An update changes the
        fields `request` gives and keeps the others (StoreRequest: None is not given;
        `replace` rewrites the whole memory). `embed_now=False` leaves the vector to the
        background worker. `then`: see write_memory.

        A swarm memory with this key owned by another agent is updated only by the lead
        (PermissionDeniedError names the owner; memory_mcp/rules/permissions.py)."""
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
        # The write criteria judge an agent's own observations (rules/write_policy.py).
        check_kind(v.clean_kind(request.kind), self.policy.write_kinds)
        checks: list[SimilarCheck] = []

        async def check(outcome: UpsertOutcome) -> None:
            checks.append(await self.similar_to(caller, outcome.record))

        outcome = await self.store_memory(caller, request, then=check)
        return outcome, checks[0]

    def prepare_memory(self, caller: Caller, request: StoreRequest) -> NewMemory:
        """Every check of store_memory, without writing: the memory that would be stored.
        `import` checks a whole file with this before it writes anything."""
        now = request.written_at if request.written_at is not None else self.clock()
        source = request.source or Source.MANUAL
        _refuse_note_key(request.key, source)
        project = permissions.written_project(caller, request.project)
        # A task's working memory is seen by every agent that names the task: swarm scope.
        scope = Scope.SWARM if request.task is not None else request.scope
        new = checked_memory(
            caller,
            self.policy.max_value_chars,
            key=request.key,
            value=request.value,
            scope=scope,
            source=source,
            tags=request.tags or [],
            metadata=request.metadata or {},
            confidence=v.clean_confidence(request.confidence),
            pinned=bool(request.pinned),
            expires_at=v.resolve_expiry(
                request.ttl_seconds,
                request.expires_at,
                self.policy.default_ttl_seconds(source),
                now,
            ),
            about_agent=request.about_agent,
            project=project,
            task=request.task,
            archived_at=request.archived_at,
            kind=request.kind,
        )
        # Held for approval, or refused, by the injection policy (rules/quarantine.py).
        new.quarantined = held(source, new.flags, self.policy.injection_policy)
        # An update changes what the request gives and keeps the rest (the store takes
        # those columns from the row it updates: store/writes.py, update_values).
        new.kept = request.kept()
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
        decided here (rules/permissions.py, with `origin`) and applied by the store to the row it
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
        project: str | None = None,
    ) -> UpsertOutcome:
        """Lead only: a swarm-wide learning, tagged with its category, in `project` (None:
        the lead's current project, else `*`). Idempotent: the key
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
                f"memory-inject-learning is for the lead agent; {caller.agent_id!r} is a "
                "worker (store what you learned with memory-store, or ask the lead)"
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
            project=project,
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

    # -- deleting and reverting -------------------------------------------------------------

    async def delete(self, caller: Caller, memory_id: Any) -> int:
        record = await self._visible_record(caller, memory_id)
        return await self._delete_record(caller, record)

    async def delete_by_key(self, caller: Caller, key: str, scope: Scope = Scope.AGENT) -> int:
        """Delete the memory that store_memory(key, scope) by `caller` would update: its
        own in agent and session scope, the one swarm memory of that key in swarm scope;
        in its current project if it has one there, else in `*`."""
        clean = v.clean_key(key)
        record = await self.by_key(caller, clean, scope)
        if record is None:
            raise NotFoundError(
                f"no {scope.value} memory with key {v.shown(clean, 80)} is visible to you"
                + await self._key_elsewhere(caller, clean, scope)
            )
        return await self._delete_record(caller, record)

    async def by_key(self, caller: Caller, key: str, scope: Scope) -> MemoryRecord | None:
        """The memory store_memory(key, scope) by `caller` would update, if `caller` may see
        it: in its current project first, then in `*`."""
        clean = v.clean_key(key)
        for project in dict.fromkeys([caller.project or EVERY_PROJECT, EVERY_PROJECT]):
            record = await self.store.get_by_identity(
                _memory_at(caller, clean, scope, project).identity
            )
            if record is not None and can_see(caller, record):
                return record
        return None

    async def _key_elsewhere(self, caller: Caller, key: str, scope: Scope) -> str:
        """A hint when `key` names a memory `caller` can see in another scope."""
        for other in Scope:
            if other is scope:
                continue
            found = await self.by_key(caller, key, other)
            if found is not None:
                return f"; there is a {other.value} one (memory {found.id}): scope={other.value!r}"
        return ""

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
        project: str | None = None,
        task: str | None = None,
        include_archived: bool = False,
    ) -> DeleteManyResult:
        """Delete, in one transaction, the oldest `limit` memories `caller` could delete
        one by one (its own; the lead also swarm ones) that have all `tags`, come from
        `source` and were last updated at or before `older_than` (UNIX seconds); expired
        ones included. Notes are left to their files. `dry_run`: choose, delete nothing.
        `project`, `task`, `include_archived`: which memories, as for search; of those,
        only the ones in projects `caller` may change."""
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
        projects = permissions.may_write_in(caller, permissions.readable_projects(caller, project))
        vis = Visibility(
            caller=caller,
            scope=scope,
            tags=cleaned_tags,
            source=source,
            include_expired=True,
            now=self.clock(),
            projects=projects,
            task=_task_argument(task),
            include_archived=include_archived,
        )
        # The decision depends on whether the project is one the caller may change, which
        # every project of `projects` is.
        rights = permissions.bulk_rights(caller, min(projects or {EVERY_PROJECT}, default=""))
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
            project=record.project,
            task=record.task,
        )
        new.kept = frozenset({"confidence", "pinned", "expires_at", "about_agent", "kind"})
        if expected is None:
            expected = record.version
        return await self.write_memory(caller, new, expected)

    async def purge_expired(self) -> int:
        return await self.store.purge_expired(self.clock())

    async def decay(self, *, dry_run: bool = False) -> list[Faded]:
        """Archive the faded guesses (rules/decay.py); `dry_run`: only say which."""
        return await archive_faded(self.store, self.policy.trust, self.clock(), dry_run=dry_run)

    # -- where a memory lives: its project, and a task's working memories -----------------

    async def complete_task(
        self, caller: Caller, task: Any, handoff_to: Any = None, project: str | None = None
    ) -> Placement:
        """Archive the working memories of `task` in `project` (None: the current one, else
        `*`), or move them to task `handoff_to` (all or none: refused, naming the keys, if
        it holds one of those keys). A worker completes a task it wrote in; a lead any."""
        name, to = _task_id(task), _task_argument(handoff_to, "handoff_to")
        if to == name:
            raise InvalidInputError("handoff_to", "is the task being completed; name another")
        where = permissions.written_project(caller, project)
        records = await self.store.task_records(where, name)
        wrote_in = any(caller.agent_id in (r.agent_id, r.updated_by) for r in records)
        permissions.check_task(caller, where, name, wrote_in)
        working = [r.id for r in records if r.archived_at is None]
        if to is None:
            await self.store.archive(working, self.clock())
            done = [r for r in records if r.archived_at is None]
            await record_completion(self, caller, where, name, done)
            return Placement(where, archived=working)
        return Placement(where, moved=await self.store.place(working, task=to, field="handoff_to"))

    async def move_to_project(
        self, caller: Caller, records: Sequence[MemoryRecord], to: str, *, dry_run: bool = False
    ) -> Placement:
        """Move `records` (read by `caller`) to project `to`, all or none, keeping ids,
        versions and links: each decided as a change where it is and where it goes."""
        target = permissions.written_project(caller, to)
        for record in records:
            permissions.check(caller, Target.of(record), Change.MOVE)
            permissions.check(caller, replace(Target.of(record), project=target), Change.MOVE)
        ids = [record.id for record in records if record.project != target]
        moved = ids if dry_run else await self.store.place(ids, project=target, field="to")
        return Placement(target, moved=moved)

    async def project_counts(self, caller: Caller) -> dict[str, int]:
        """How many memories `caller` may read in each project (`*` too), by id's rule."""
        return await self.store.project_counts(self.by_id(caller, include_expired=True))

    # -- reading ----------------------------------------------------------------------------

    async def visible_records(
        self, caller: Caller, project: str | None = None
    ) -> AsyncIterator[MemoryRecord]:
        """Every memory `caller` may read in the projects `project` covers (as a search's
        argument: None, its current project and `*`), expired, archived and task ones
        included (memory-get returns them too), by id: what `memory-mcp export` writes."""
        vis = Visibility(
            caller=caller,
            include_expired=True,
            now=self.clock(),
            projects=permissions.readable_projects(caller, project),
            every_task=True,
            include_archived=True,
        )
        async for record in self.store.iter_records(vis):
            yield record

    async def all_records(self) -> AsyncIterator[MemoryRecord]:
        """Every memory of every agent, private ones included: for operators only
        (`memory-mcp export --all`), never reachable from a tool."""
        async for record in self.store.iter_records():
            yield record

    async def recent_visible(self, caller: Caller, limit: int) -> list[MemoryRecord]:
        """The `limit` most recently used unexpired memories `caller` may read in its
        current project and `*` (pinned first): the `<memories>` block's pool
        (rules/memories_block.py's pool_view)."""
        return await self.store.recent(pool_view(caller, self.clock()), limit)

    async def count(self) -> int:
        """How many memories the store holds, every agent's (for operators: doctor)."""
        return await self.store.count()

    async def cap_usage(self, agent_id: str, identities: list[str]) -> tuple[int, int]:
        """(memories `agent_id` holds that count against its cap, how many of the
        `identities` (NewMemory.identity) would be new): an import checks before writing."""
        return await self.store.cap_usage(agent_id, identities)

    async def flush_accesses(self) -> None:
        """Write the reads memory-get counted in memory (store/access_counts.py)."""
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

    def by_id(self, caller: Caller, include_expired: bool = False) -> Visibility:
        """What a read by id shows (can_see): a memory of any project the caller may read,
        a task's working memories and archived ones too: a link's far end, a neighbour."""
        return Visibility(
            caller=caller,
            include_expired=include_expired,
            now=self.clock(),
            every_task=True,
            include_archived=True,
        )

    async def _visible_record(self, caller: Caller, given_id: Any) -> MemoryRecord:
        """The memory of an id as a caller gave it (checked here: every read and change by
        id comes through), if `caller` may see it."""
        memory_id = v.clean_id(given_id, self.store.largest_id)
        return permissions.visible_or_not_found(caller, memory_id, await self.store.get(memory_id))

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
        Unexpired only unless `filters.include_expired`. See memory_mcp/rules/browsing.py."""
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
            projects=permissions.readable_projects(caller, filters.project),
            task=filters.task,
            include_archived=filters.include_archived,
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
        page = await versions_page(self.store, record, check_before(before), limit)
        page.marks = self.trust_marks(record)
        return page

    async def version_of(self, caller: Caller, memory_id: Any, version: Any) -> MemoryVersion:
        """One version of a memory `caller` may read (see history)."""
        record = await self._visible_record(caller, memory_id)
        return await one_version(self.store, record, version)

    def is_expired(self, record: MemoryRecord) -> bool:
        return record.expired(self.clock())

    def trust_marks(self, record: MemoryRecord) -> TrustMarks:
        """How far `record` can be trusted now (rules/trust.py): every read shows it."""
        return marks_of(self.policy.trust, record, self.clock())

    async def search(self, caller: Caller, request: SearchRequest) -> SearchResult:
        """The memories `caller` may see that best answer `request`, ranked: the pipeline
        is search/pipeline.py; the rule of who may see what is applied inside both arms,
        over the projects `request.project` covers (permissions.readable_projects)."""
        projects = permissions.readable_projects(caller, request.project)
        return await pipeline.search(
            self.store, self.vectors, self.policy, self.clock, caller, request, projects
        )

    # -- changing links (a write: permissions.decide) -------------------------------------

    async def link(
        self, caller: Caller, memory_id: Any, to: Any, relation: Any, *, remove: bool = False
    ) -> LinkOutcome:
        """Link memory `memory_id` to memory `to` with `relation` (or remove that link).
        Both must be visible to `caller`; `memory_id` must be one `caller` may update."""
        change = [(to, relation)]
        if remove:
            return await self.change_links(caller, memory_id, [], change)
        return await self.change_links(caller, memory_id, change)

    async def change_links(
        self,
        caller: Caller,
        memory_id: Any,
        adds: Sequence[tuple[Any, Any]],
        removes: Sequence[tuple[Any, Any]] = (),
    ) -> LinkOutcome:
        """Add and remove links of one memory at once (all or nothing). Asks the one
        decision (rules/permissions.py) as for an update of that memory; every target must be
        visible to `caller` (else "not found", as for a missing one)."""
        source = await self._visible_record(caller, memory_id)
        permissions.check(caller, Target.of(source), Change.LINK)
        cleaned_adds = [await self._checked_end(caller, source, to, rel) for to, rel in adds]
        for _, relation in cleaned_adds:  # a name, shown to whoever sees both ends
            refuse_secret_name(relation, "relation", "relation")
        cleaned_removes = [await self._checked_end(caller, source, to, rel) for to, rel in removes]
        # Whether the store may go ahead if another agent holds the source when it writes
        # (only a swarm memory can be; the decision's answer for "someone else's").
        held_by_another = replace(Target.of(source), owner=None)
        return await self.store.links.change(
            source.id,
            cleaned_adds,
            cleaned_removes,
            writer=caller.agent_id,
            now=self.clock(),
            may_change_others=permissions.decide(caller, held_by_another, Change.LINK) is None,
            max_links=MAX_LINKS_PER_MEMORY,
        )

    async def _checked_end(
        self, caller: Caller, source: MemoryRecord, to: Any, relation: Any
    ) -> tuple[int, str]:
        target_id = v.clean_id(to, self.store.largest_id, "to")
        if target_id == source.id:
            raise InvalidInputError("to", f"memory {source.id} cannot link to itself")
        await self._visible_record(caller, target_id)
        return target_id, v.clean_relation(relation)

    # -- reading links (only those whose both ends the caller may see) ----------------------

    async def links_of(
        self, caller: Caller, record: MemoryRecord, limit: int = MAX_SHOWN_LINKS
    ) -> tuple[list[LinkedMemory], bool]:
        """The current links out of and into `record` (which `caller` has read) whose far
        end `caller` may see (expired ones too, as memory-get shows them), newest first,
        at most `limit` each way; and whether some were left out by that bound."""
        vis = self.by_id(caller, include_expired=True)
        shown: list[LinkedMemory] = []
        more = False
        for direction in ("out", "in"):
            links = await self.store.links.current([record.id], direction, vis, limit + 1)
            more = more or len(links) > limit
            shown += await self._with_far_ends(caller, links[:limit], direction)
        return shown, more

    async def related(
        self,
        caller: Caller,
        memory_id: Any,
        *,
        depth: Any = 1,
        direction: Any = "both",
        relation: Any = None,
        limit: Any = DEFAULT_RELATED_LIMIT,
        fan_out: Any = DEFAULT_FAN_OUT,
        include_expired: bool = False,
    ) -> Related:
        """The memories linked to `memory_id`, then to those, up to `depth` links away,
        breadth first (nearest first; newest link first at each memory), each once, at
        most `fan_out` links followed from one memory each way and `limit` in all."""
        start = await self._visible_record(caller, memory_id)
        depth = bounded(depth, "depth", MAX_DEPTH)
        limit = bounded(limit, "limit", MAX_RELATED_LIMIT)
        fan_out = bounded(fan_out, "fan_out", MAX_FAN_OUT)
        ways = WAYS[parse_direction(direction)]
        wanted = None if relation is None else v.clean_relation(relation)
        vis = self.by_id(caller, include_expired=include_expired)
        result = Related(start)
        seen, frontier, full = {start.id}, [start.id], False
        for level in range(1, depth + 1):
            reached: list[tuple[Link, Direction]] = []
            for way in ways:
                links = await self.store.links.current(frontier, way, vis, fan_out + 1, wanted)
                result.truncated |= over_fan_out(links, way, fan_out)
                reached += [(link, way) for link in within_fan_out(links, way, fan_out)]
            steps: list[tuple[Link, Direction]] = []
            for link, way in sorted(reached, key=lambda item: -item[0].id):
                far_id = far_end(link, way)
                if far_id in seen:
                    continue
                if len(result.neighbours) + len(steps) >= limit:
                    result.truncated = full = True
                    break
                seen.add(far_id)
                steps.append((link, way))
            records = await self.store.fetch_many([far_end(link, way) for link, way in steps])
            for link, way in steps:
                far = records.get(far_end(link, way))
                if far is not None and can_see(caller, far):
                    near = near_end(link, way)
                    via = LinkedMemory(link, way, near, far)
                    result.neighbours.append(Neighbour(far, level, via))
            frontier = [step.memory.id for step in result.neighbours if step.depth == level]
            if not frontier or full:
                break
        return result

    async def links_among(self, caller: Caller, memory_ids: Sequence[int]) -> list[Link]:
        """The current links between memories of `memory_ids` (which `caller` has read;
        unexpired ends only), oldest first: a knowledge graph's relations (graph/profile.py)."""
        vis = self.by_id(caller)
        wanted, found = set(memory_ids), []
        ids = list(memory_ids)
        for start in range(0, len(ids), _ID_BATCH):
            chunk = ids[start : start + _ID_BATCH]
            found += await self.store.links.current(chunk, "out", vis, MAX_LINKS_PER_MEMORY)
        return sorted((link for link in found if link.target_id in wanted), key=lambda x: x.id)

    async def link_history(
        self, caller: Caller, memory_id: Any, limit: int = MAX_LINK_HISTORY
    ) -> list[LinkEvent]:
        """Every link out of or into a memory `caller` may read, current and removed,
        newest first, whose far end `caller` may see (or, gone, could have seen)."""
        record = await self._visible_record(caller, memory_id)
        links = await self.store.links.history(record.id, limit)
        sources = await self.store.fetch_many(
            [link.source_id for link in links if link.target_id == record.id]
        )
        events = []
        for link in links:
            if link.source_id == record.id:
                if can_see_memory_of(
                    caller,
                    link.target_scope,
                    link.target_owner,
                    link.target_session,
                    link.target_project,
                ):
                    events.append(LinkEvent(link, "out"))
            else:
                source = sources.get(link.source_id)
                if source is not None and can_see(caller, source):
                    events.append(LinkEvent(link, "in"))
        return events

    async def _with_far_ends(
        self, caller: Caller, links: list[Link], direction: Direction
    ) -> list[LinkedMemory]:
        records = await self.store.fetch_many([far_end(link, direction) for link in links])
        shown = []
        for link in links:
            far = records.get(far_end(link, direction))
            if far is None or not can_see(caller, far):
                continue  # deleted meanwhile (or damaged)
            near = near_end(link, direction)
            shown.append(LinkedMemory(link, direction, near, far))
        return shown

    # -- notes (memory_mcp/notes/): a chunk's write, and a note's memories as a set -------

    async def store_note_chunk(
        self, caller: Caller, chunk: NoteChunk, origin: Origin
    ) -> UpsertOutcome:
        """Mirror one chunk of a note. The vector is left to the background worker, so a
        big note's chunks never hold up the notes saved after it. A shared note's chunk
        another agent indexed may be updated by a lead, or when this server read the note
        from the shared folder itself (`origin` FOLDER: see rules/permissions.py)."""
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
            project=chunk.project,
        )
        # The file gives the text, its place (metadata), expiry and tags (none); what it
        # does not hold, a re-index keeps (StoreRequest's rule).
        new.kept = frozenset({"pinned", "confidence", "about_agent"})
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


def _memory_at(caller: Caller, key: str, scope: Scope, project: str) -> NewMemory:
    """The memory store_memory(key, scope) by `caller` in `project` would write, for its
    identity."""
    session_id = caller.session_id if scope is Scope.SESSION else ""
    return NewMemory(key, "", scope, caller.agent_id, session_id, Source.MANUAL, project=project)


def _task_argument(task: Any, field: str = "task") -> str | None:
    return None if task is None else _task_id(task, field)


def _task_id(task: Any, field: str = "task") -> str:
    if not isinstance(task, str):
        raise InvalidInputError(field, "must be a task id (text), e.g. 'issue-36'")
    return v.clean_key(task, field)


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


__all__ = ["MAX_LINKS_PER_MEMORY", "MemoryService"]
