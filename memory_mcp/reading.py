"""The reading half of MemoryService: the ways to read what a caller may read (the rule
itself: permissions.can_see): one memory, a page of a listing, a memory's versions, a
search, an export. MemoryService (service.py) adds the links (linking.py) and the
writing rules; the store, the vectors, the policy and the clock are its own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from memory_mcp.browsing import (
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
from memory_mcp.checks import validation as v
from memory_mcp.errors import MemoryNotFoundError
from memory_mcp.models import Caller, MemoryRecord, Scope, Source, Visibility
from memory_mcp.permissions import can_see
from memory_mcp.policy import Policy
from memory_mcp.search import pipeline
from memory_mcp.search.hits import SearchResult
from memory_mcp.semantic.vectors import Vectors
from memory_mcp.store.listing import Selection
from memory_mcp.store.repository import MemoryStore
from memory_mcp.versions import one_version, versions_page


class MemoryReads:
    store: MemoryStore
    vectors: Vectors
    policy: Policy
    clock: Callable[[], float]

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

    async def by_identity(self, caller: Caller, identity: str) -> MemoryRecord | None:
        """The memory of an upsert identity (NewMemory.identity), if `caller` may see it:
        the knowledge-graph profile finds an entity by its name so (graph.py)."""
        record = await self.store.get_by_identity(identity)
        return record if record is not None and can_see(caller, record) else None

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
        return await versions_page(self.store, record, check_before(before), limit)

    async def version_of(self, caller: Caller, memory_id: Any, version: Any) -> MemoryVersion:
        """One version of a memory `caller` may read (see history)."""
        record = await self._visible_record(caller, memory_id)
        return await one_version(self.store, record, version)

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
        expand: bool | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """`scope` None: every scope the caller can see. `since`/`until`: only memories
        last changed (updated_at) in that window, an ISO date-time or an age such as "7d"
        (search/time_filters.py); like every filter they apply before either arm's top-k cut.
        `min_score`: leave out results scoring below it (the same score the results show).
        `expand`: memories linked to the strong hits join the candidates (None: the
        measured default, search/expansion.py). `explain`: name the neighbours that lent a
        hit its words. The pipeline: memory_mcp/search/pipeline.py."""
        return await pipeline.search(
            self.store,
            self.vectors,
            self.policy,
            self.clock,
            caller,
            query,
            limit,
            scope,
            tags,
            source,
            include_expired,
            since=since,
            until=until,
            min_score=min_score,
            expand=self.policy.ranking.expand.on_by_default if expand is None else expand,
            explain=explain,
        )
