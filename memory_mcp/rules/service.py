"""MemoryService: the memories themselves — storing, injecting learnings, reverting,
deleting, reading, listing, searching — with the rules (scopes, permissions, TTL, versions,
the cap) applied around the store and the vectors; and the front door to the subjects
beside it, which share its gate (rules/gate.py): links (rules/linking.py), tasks and
projects (rules/tasks.py), a note's memories (rules/note_memories.py). The MCP tools, the
CLI, the web view and the hooks all call these; they call the store (store/), the vectors
(semantic/) and the search pipeline (search/).

Who may read or change a memory is decided in one place, rules/permissions.py (`can_see`,
`decide`/`check`); every method here asks it before it reads or writes. A read by id is the
gate's (`Gate.read`): a memory someone may not see is "not found", the same answer as a
missing one. A write is the gate's (`Gate.write`), which decides it once; this module builds
the memory to write at a time it reads once.

Over 500 lines: the memories' own operations, one method each for a tool or a command
(store, inject, revert, three deletes, get, list, history, search, the import's batch);
the other subjects live beside it."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.json_values import shown_value
from memory_mcp.checks.new_memory import checked_memory
from memory_mcp.errors import (
    InvalidInputError,
    PermissionDeniedError,
)
from memory_mcp.models import (
    EVERY_PROJECT,
    BatchItem,
    BatchOutcome,
    Caller,
    LearningCategory,
    MemoryRecord,
    NewMemory,
    Scope,
    SearchRequest,
    Source,
    StoreRequest,
    UpsertOutcome,
    Visibility,
)
from memory_mcp.rules import permissions, task_agents, unknown_project, validity
from memory_mcp.rules.batch import store_batch
from memory_mcp.rules.browsing import (
    DEFAULT_HISTORY_LIMIT,
    DEFAULT_LIST_LIMIT,
    MAX_HISTORY_LIMIT,
    MAX_LIST_LIMIT,
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
from memory_mcp.rules.deletes import DeleteService
from memory_mcp.rules.gate import Gate
from memory_mcp.rules.key_reads import one_by_key
from memory_mcp.rules.learnings import learning_request
from memory_mcp.rules.linking import LinkService
from memory_mcp.rules.memories_block import pool_view
from memory_mcp.rules.note_memories import (
    NoteMemoryService,
    refuse_note_key,
)
from memory_mcp.rules.permissions import Change, Target, can_see
from memory_mcp.rules.policy import Policy
from memory_mcp.rules.quarantine import Quarantine, held
from memory_mcp.rules.scopes import change_scope
from memory_mcp.rules.tasks import TaskService
from memory_mcp.rules.trust import TrustMarks, marks_of
from memory_mcp.rules.versions import one_version, versions_page
from memory_mcp.rules.write_policy import check_kind
from memory_mcp.search import pipeline
from memory_mcp.search.hits import SearchResult
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.similar_check import SimilarCheck
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.store.browsing import Selection
from memory_mcp.store.repository import MemoryStore

log = logging.getLogger(__name__)


class MemoryService:
    """The memories themselves, and the rules' front door: the MCP tools, the CLI, the web
    view and the hooks hold one. The other subjects sit beside it on the same gate:
    `links` (rules/linking.py), `tasks` (rules/tasks.py), `note_memories`
    (rules/note_memories.py)."""

    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        policy: Policy,
        vectors: Vectors,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.gate = Gate(store, policy, vectors, clock)
        self.embedder = embedder
        self.links = LinkService(self.gate)
        self.tasks = TaskService(self.gate, self)
        self.deletes = DeleteService(self.gate, self)
        self.note_memories = NoteMemoryService(self.gate)
        self.quarantine = Quarantine(store)  # memories held for approval

    # What every subject shares is the gate's (a test sets the clock here, for all of them).
    @property
    def store(self) -> MemoryStore:
        return self.gate.store

    @property
    def vectors(self) -> Vectors:
        """Embedding, storing and searching vectors (semantic/vectors.py tells the story)."""
        return self.gate.vectors

    @property
    def policy(self) -> Policy:
        return self.gate.policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self.gate.policy = policy

    @property
    def clock(self) -> Callable[[], float]:
        return self.gate.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.gate.clock = clock

    # -- writing ----------------------------------------------------------------------------

    async def store_memory(
        self, caller: Caller, request: StoreRequest, *, embed_now: bool = True
    ) -> UpsertOutcome:
        """Store `request` for `caller` (an upsert on its identity). An update changes the
        fields `request` gives and keeps the others (StoreRequest: None is not given;
        `replace` rewrites the whole memory). `embed_now=False` leaves the vector to the
        background worker.

        A swarm memory with this key owned by another agent is updated only by the lead
        (PermissionDeniedError names the owner; memory_mcp/rules/permissions.py)."""
        now = self._written_at(request)
        new = self._memory_of(caller, request, now)
        version = _expected_version(request.expected_version)
        old = await validity.corrected(self.store, caller, new, request.supersedes)
        shared = await self._task_agent(caller, request, new, now)
        outcome = await self.gate.write(
            caller, new, now, expected_version=version, embed_now=embed_now, task_agent=shared
        )
        if old is not None:
            await validity.close(old, outcome.record, self.links.change_links, caller)
        return outcome

    async def _task_agent(
        self, caller: Caller, request: StoreRequest, new: NewMemory, now: float
    ) -> bool:
        """Whether `caller` may update any memory of the task it stores into (one of its
        agents: rules/task_agents.py, which refuses the others)."""
        if new.task is None:
            if request.task_agents:
                raise InvalidInputError("task_agents", "names a task's agents: give task too")
            return False
        naming = task_agents.clean_agents(request.task_agents or [])
        await task_agents.before_store(self.store, caller, new.project, new.task, naming, now)
        return await task_agents.is_agent(self.store, caller, new.project, new.task)

    async def store_and_check(
        self, caller: Caller, request: StoreRequest
    ) -> tuple[UpsertOutcome, SimilarCheck]:
        """store_memory, and the near-duplicate check of the memory it wrote made on the
        way (Gate.write_and_check). The store_memory tool's call: the time read once, the
        permission decided once (by the gate)."""
        # The write criteria judge an agent's own observations (rules/write_policy.py).
        check_kind(v.clean_kind(request.kind), self.policy.write_kinds)
        now = self._written_at(request)
        new = self._memory_of(caller, request, now)
        version = _expected_version(request.expected_version)
        old = await validity.corrected(self.store, caller, new, request.supersedes)
        shared = await self._task_agent(caller, request, new, now)
        written = await self.gate.write_and_check(
            caller, new, now, expected_version=version, task_agent=shared
        )
        if old is not None:
            await validity.close(old, written[0].record, self.links.change_links, caller)
        return written

    async def store_batch(
        self, caller: Caller, requests: list[StoreRequest]
    ) -> list[tuple[UpsertOutcome, SimilarCheck]]:
        """Several memories in one transaction, all or none (rules/batch.py)."""
        return await store_batch(self, caller, requests)

    async def change_scope(
        self, caller: Caller, key: str, from_scope: Scope, to_scope: Scope
    ) -> tuple[UpsertOutcome, SimilarCheck]:
        """Move a memory to another scope, and what it resembles there (rules/scopes.py)."""
        outcome = await change_scope(self, caller, key, from_scope, to_scope)
        return outcome, await self.gate.similar_to(caller, outcome.record, self.clock())

    def prepare_memory(self, caller: Caller, request: StoreRequest) -> NewMemory:
        """Every check of store_memory, without writing: the memory that would be stored.
        `import` checks a whole file with this before it writes anything."""
        new = self._memory_of(caller, request, self._written_at(request))
        permissions.check_write(caller, new)
        return new

    def _written_at(self, request: StoreRequest) -> float:
        return request.written_at if request.written_at is not None else self.clock()

    def _memory_of(self, caller: Caller, request: StoreRequest, now: float) -> NewMemory:
        """The memory `request` asks `caller` to store at `now`, checked (sizes, secrets,
        expiry bounds, its project); whether it may be written is the gate's to decide."""
        source = request.source or Source.MANUAL
        refuse_note_key(request.key, source)
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
                self.policy.default_ttl_seconds(source, v.clean_kind(request.kind)),
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
        validity.window_of(new, request)
        # An update changes what the request gives and keeps the rest (the store takes
        # those columns from the row it updates: store/writes.py, update_values).
        new.kept = request.kept()
        return new

    async def write_batch(
        self, memories: Sequence[tuple[Caller, NewMemory, float | None]]
    ) -> BatchOutcome:
        """Write memories that prepare_memory built, each at its own time (None: now), in
        ONE transaction: committed whole or not at all (import). Vectors are left to
        `vectors.embed_texts` or the background worker."""
        now = self.clock()
        # Each decided once, all before anything is written.
        items = [
            BatchItem(new, at if at is not None else now, permissions.check_write(caller, new))
            for caller, new, at in memories
        ]
        outcome = await self.store.upsert_many(items, cap=self.policy.caps)
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
        request, redactions = learning_request(
            caller, learning, category, agent_id, project, self.policy.max_value_chars
        )
        now = self.clock()
        new = self._memory_of(caller, request, now)
        outcome = await self.gate.write(caller, new, now, take_over=True)
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
        record = await self.gate.read(caller, memory_id)
        expected = _expected_version(expected_version)
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
            value=shown_value(old.value, old.value_json),
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
        return await self.gate.write(caller, new, self.clock(), expected_version=expected)

    async def purge_expired(self) -> int:
        return await self.store.purge_expired(self.clock())

    async def decay(self, *, dry_run: bool = False) -> list[Faded]:
        """Archive the faded guesses (rules/decay.py); `dry_run`: only say which."""
        return await archive_faded(self.store, self.policy.trust, self.clock(), dry_run=dry_run)

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
            include_superseded=True,
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
        record = await self.gate.read(caller, memory_id)
        if not count:
            return record
        now = self.clock()
        # Counted in memory and written later in a batch: a read never waits for writers.
        record.access_count += self.store.touch(record.id, now)
        record.last_accessed_at = now
        return record

    async def as_of(self, record: MemoryRecord, given: Any) -> MemoryRecord:
        """`record` (read by `get`) as it held at `given` (memory-get's `as_of`)."""
        at = validity.as_of_time(given, self.clock())
        return record if at is None else await validity.record_as_of(self.store, record, at)

    async def get_by_key(
        self, caller: Caller, key: object, scope: Scope | None, project: str | None
    ) -> MemoryRecord:
        """The one memory `caller` may see under `key` (rules/key_reads.py), its read
        counted as `get` counts one."""
        record = await one_by_key(self.store, caller, key, scope, project, self.clock())
        return await self.get(caller, record.id)

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
            projects=permissions.readable_projects(caller, filters.project, filters.project_alone),
            task=filters.task,
            include_archived=filters.include_archived,
            include_superseded=filters.include_superseded,
            as_of=filters.as_of,
        )
        selection = Selection(vis, sort, filters.agent_id, filters.since, filters.until)
        records, last = await self.store.list_page(selection, after, limit)
        if filters.as_of is not None:
            records = await validity.records_as_of(self.store, records, filters.as_of)
        page = MemoryPage(records, None if last is None else encode_cursor(sort, last))
        page.notices = await unknown_project.notices(self.store, caller, filters.project)
        return page

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
        record = await self.gate.read(caller, memory_id)
        if limit is not None:
            limit = check_limit(limit, MAX_HISTORY_LIMIT)
        page = await versions_page(self.store, record, check_before(before), limit)
        page.marks = self.trust_marks(record)
        return page

    async def version_of(self, caller: Caller, memory_id: Any, version: Any) -> MemoryVersion:
        """One version of a memory `caller` may read (see history)."""
        record = await self.gate.read(caller, memory_id)
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
        projects = permissions.readable_projects(caller, request.project, request.project_alone)
        await self.store.forget_expired(self.clock())  # before the index is read
        result = await pipeline.search(
            self.store, self.vectors, self.policy, self.clock, caller, request, projects
        )
        result.notices += await unknown_project.notices(self.store, caller, request.project)
        return result


def _memory_at(caller: Caller, key: str, scope: Scope, project: str) -> NewMemory:
    """The memory store_memory(key, scope) by `caller` in `project` would write, for its
    identity."""
    session_id = caller.session_id if scope is Scope.SESSION else ""
    return NewMemory(key, "", scope, caller.agent_id, session_id, Source.MANUAL, project=project)


def _expected_version(expected_version: int | None) -> int | None:
    if expected_version is not None and not v.is_whole_number(expected_version, 0):
        raise InvalidInputError(
            "expected_version", f"must be a whole number from 0 to {v.MAX_WHOLE_NUMBER}"
        )
    return expected_version


__all__ = ["MemoryService"]
