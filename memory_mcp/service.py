"""MemoryService: the memory rules — scopes, permissions, TTL, versions, the cap, ranking.

The MCP tools, the CLI and the hooks all call this; it calls the store and the embedder."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from memory_mcp import validation as v
from memory_mcp.embeddings import Embedder
from memory_mcp.errors import InvalidInputError, NotFoundError, PermissionDeniedError
from memory_mcp.exact_match import ExactMatches, exact_first, find_exact_matches, with_candidates
from memory_mcp.injection import content_flags
from memory_mcp.models import Caller, MemoryRecord, NewMemory, Scope, Source, Visibility
from memory_mcp.ranking import RankingConfig, fuse, is_unrelated, prior
from memory_mcp.safety import refuse_secrets, refuse_secrets_in
from memory_mcp.store import MemoryStore
from memory_mcp.store.keyword import query_terms
from memory_mcp.vectors import Vectors

log = logging.getLogger(__name__)

TOOL_SOURCES = (Source.MANUAL, Source.TASK_COMPLETION, Source.SESSION_SUMMARY)
LEARNING_CATEGORIES = ("mistake-pattern", "best-practice", "codebase-knowledge", "preference")
# BM25 column weights for (key, value, tags): a hit in the key or a tag says more than one
# word somewhere in a long value.
KEYWORD_COLUMN_WEIGHTS = (2.0, 1.0, 1.5)
# Keys of memories that mirror a note (notes/indexer.py); reserved so that no other memory
# can take a note's identity or be taken over by the indexer.
NOTE_KEY_PREFIX = "file:"


@dataclass(frozen=True)
class Policy:
    """The knobs of the rules, built from Settings by the composition root."""

    max_memories_per_agent: int = 10_000
    max_value_chars: int = 65_536
    search_value_chars: int = 1_000
    ttl_days: dict[Source, float] = field(
        default_factory=lambda: {
            Source.MANUAL: 0.0,
            Source.TASK_COMPLETION: 7.0,
            Source.SESSION_SUMMARY: 3.0,
            Source.FILE_INDEX: 30.0,
        }
    )
    ranking: RankingConfig = field(default_factory=RankingConfig)
    # A search while the model is still loading waits this long before going keyword-only.
    search_model_wait_seconds: float = 5.0

    def default_ttl_seconds(self, source: Source) -> float | None:
        days = self.ttl_days.get(source, 0.0)
        return days * 86_400 if days else None


@dataclass
class StoreResult:
    record: MemoryRecord
    created: bool
    changed: bool


@dataclass
class SearchHit:
    record: MemoryRecord
    score: float
    relevance: float
    matched_by: str


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


def may_change(caller: Caller, record: MemoryRecord) -> bool:
    """Update or delete a memory it can see: its owner, or the lead for a swarm memory.
    (Only swarm memories can be reached by another agent: the others are invisible.)"""
    return record.agent_id == caller.agent_id or (record.scope is Scope.SWARM and caller.is_lead)


class MemoryService:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        policy: Policy | None = None,
        clock: Callable[[], float] = time.time,
        vectors: Vectors | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.policy = policy or Policy()
        self.clock = clock
        # Embedding, storing and searching vectors (memory_mcp/vectors.py tells the story).
        self.vectors = vectors or Vectors.in_process(store.vectors, embedder, clock)

    # -- writing ----------------------------------------------------------------------------

    async def store_memory(
        self,
        caller: Caller,
        key: Any,
        value: Any,
        scope: Any = "agent",
        tags: Any = None,
        metadata: Any = None,
        ttl_seconds: Any = None,
        expires_at: Any = None,
        source: Any = "manual",
        confidence: Any = None,
        pinned: Any = False,
        expected_version: Any = None,
        *,
        allowed_sources: tuple[Source, ...] = TOOL_SOURCES,
        file_path: str | None = None,
        written_at: float | None = None,
        about_agent: str | None = None,
        embed_now: bool = True,
    ) -> StoreResult:
        """`written_at` keeps a memory's own time instead of now: an exported memory's
        (import), a transcript's last change (session summaries).
        `embed_now=False` leaves the vector to the background worker (notes: a big note's
        chunks must not hold up the notes saved after it).

        A swarm memory with this key owned by another agent is updated only by the lead
        (PermissionDeniedError names the owner). The one exception is a note from the
        shared folder (`file_path`, source file_index): the folder owns it, and whichever
        agent indexes the file keeps it in step."""
        now = written_at if written_at is not None else self.clock()
        new = self.prepare_memory(
            caller,
            key,
            value,
            scope,
            tags,
            metadata,
            ttl_seconds,
            expires_at,
            source,
            confidence,
            pinned,
            allowed_sources=allowed_sources,
            file_path=file_path,
            now=now,
            about_agent=about_agent,
        )
        version = self.check_expected_version(expected_version)
        return await self.write_memory(caller, new, version, now, embed_now=embed_now)

    def prepare_memory(
        self,
        caller: Caller,
        key: Any,
        value: Any,
        scope: Any = "agent",
        tags: Any = None,
        metadata: Any = None,
        ttl_seconds: Any = None,
        expires_at: Any = None,
        source: Any = "manual",
        confidence: Any = None,
        pinned: Any = False,
        *,
        allowed_sources: tuple[Source, ...] = TOOL_SOURCES,
        file_path: str | None = None,
        now: float | None = None,
        about_agent: str | None = None,
    ) -> NewMemory:
        """Every check of store_memory, without writing: the memory that would be stored.
        `import` checks a whole file with this before it writes anything."""
        now = now if now is not None else self.clock()
        parsed_scope = v.parse_scope(scope)
        assert parsed_scope is not None
        parsed_source = v.parse_source(source, allowed_sources)
        _refuse_note_key(key, parsed_source)
        clean_value = v.clean_value(value, self.policy.max_value_chars)
        if not isinstance(pinned, bool):
            raise InvalidInputError("pinned", "must be true or false")
        new = NewMemory(
            key=v.clean_key(key),
            value=clean_value,
            scope=parsed_scope,
            agent_id=caller.agent_id,
            session_id=caller.session_id if parsed_scope is Scope.SESSION else "",
            source=parsed_source,
            tags=v.clean_tags(tags),
            metadata=v.clean_metadata(metadata),
            flags=[],
            confidence=v.clean_confidence(confidence),
            pinned=pinned,
            expires_at=v.resolve_expiry(
                ttl_seconds, expires_at, self.policy.default_ttl_seconds(parsed_source), now
            ),
            file_path=file_path,
            about_agent=about_agent,
        )
        # After every size check: scanning and flagging look at bounded text only.
        refuse_secrets_in(
            {"key": new.key, "value": new.value, "tags": new.tags, "metadata": new.metadata}
        )
        new.flags = content_flags(new.key, new.value)
        return new

    @staticmethod
    def check_expected_version(expected_version: Any) -> int | None:
        if expected_version is not None and (
            isinstance(expected_version, bool)
            or not isinstance(expected_version, int)
            or expected_version < 0
        ):
            raise InvalidInputError("expected_version", "must be a whole number >= 0")
        return expected_version

    async def write_memory(
        self,
        caller: Caller,
        new: NewMemory,
        expected_version: int | None = None,
        now: float | None = None,
        *,
        embed_now: bool = True,
    ) -> StoreResult:
        """Upsert a memory that prepare_memory built for `caller` (evicting over the cap),
        then embed it if the model is loaded (and `embed_now`)."""
        now = now if now is not None else self.clock()
        mirrors_shared_file = new.file_path is not None and new.source is Source.FILE_INDEX
        outcome = await self.store.upsert(
            new,
            expected_version=expected_version,
            now=now,
            cap=self.policy.max_memories_per_agent,
            # The same rule as delete (may_change), applied by the store to the row it
            # reads under the write lock.
            may_overwrite_others=caller.is_lead or mirrors_shared_file,
        )
        if outcome.evicted_ids:
            log.info("agent %s over its cap: evicted %s", new.agent_id, outcome.evicted_ids)
        if outcome.changed and embed_now:
            await self.vectors.embed_written(outcome.record)
        return StoreResult(outcome.record, outcome.created, outcome.changed)

    async def inject_learning(
        self, caller: Caller, learning: Any, category: Any, agent_id: Any = None
    ) -> StoreResult:
        """Lead only: a swarm-wide learning, tagged with its category. Idempotent: the key
        is derived from the category and the normalised text. The lead owns it (the agent
        it is about must not be able to delete it); `agent_id` is kept as `about_agent`."""
        if not caller.is_lead:
            raise PermissionDeniedError(
                f"inject-learning is for the lead agent; {caller.agent_id!r} is a worker"
            )
        if category not in LEARNING_CATEGORIES:
            raise InvalidInputError(
                "category", f"{category!r} is not one of {', '.join(LEARNING_CATEGORIES)}"
            )
        text = v.clean_value(learning, self.policy.max_value_chars, field="learning")
        refuse_secrets(text, "learning")
        target = None if agent_id in (None, "") else v.clean_key(agent_id, "agent_id")
        normalised = " ".join(text.lower().split())
        digest = hashlib.sha256(f"{category}\x1f{normalised}".encode()).hexdigest()[:16]
        metadata: dict[str, Any] = {"injected_by": caller.agent_id, "category": category}
        return await self.store_memory(
            caller,
            key=f"learning:{category}:{digest}",
            value=text,
            scope=Scope.SWARM.value,
            tags=[category, "learning"],
            metadata=metadata,
            about_agent=target,
        )

    async def delete(self, caller: Caller, memory_id: Any) -> int:
        record = await self._visible_record(caller, v.clean_id(memory_id))
        if not may_change(caller, record):
            raise PermissionDeniedError(
                f"memory {record.id} is a swarm memory of agent {record.agent_id!r}; "
                "only its owner or the lead may delete it"
            )
        _refuse_deleting_a_live_note(record)
        await self.store.delete([record.id])
        return record.id

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

    async def get(self, caller: Caller, memory_id: Any) -> MemoryRecord:
        record = await self._visible_record(caller, v.clean_id(memory_id))
        now = self.clock()
        # Counted in memory and written later in a batch: a read never waits for writers.
        record.access_count += self.store.touch(record.id, now)
        record.last_accessed_at = now
        return record

    async def _visible_record(self, caller: Caller, memory_id: int) -> MemoryRecord:
        record = await self.store.get(memory_id)
        if record is None or not can_see(caller, record):
            # The same answer whether it is missing or someone else's: existence is private.
            raise NotFoundError(
                memory_id, f"no memory {memory_id} is visible to agent {caller.agent_id!r}"
            )
        return record

    def is_expired(self, record: MemoryRecord) -> bool:
        return record.expires_at is not None and record.expires_at <= self.clock()

    async def search(
        self,
        caller: Caller,
        query: Any,
        limit: Any = 10,
        scope: Any = "all",
        tags: Any = None,
        source: Any = None,
        include_expired: Any = False,
    ) -> SearchResult:
        text = v.clean_query(query)
        limit = v.clean_limit(limit)
        if not isinstance(include_expired, bool):
            raise InvalidInputError("include_expired", "must be true or false")
        vis = Visibility(
            caller=caller,
            scope=v.parse_scope(scope, allow_all=True),
            tags=tuple(v.clean_tags(tags)),
            source=None if source is None else v.parse_source(source, tuple(Source)),
            include_expired=include_expired,
            now=self.clock(),
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

        async def keyword_arm() -> None:
            if terms:
                keyword_hits.extend(
                    await self.store.keyword_search(terms, vis, pool, KEYWORD_COLUMN_WEIGHTS)
                )
            exact.append(await find_exact_matches(self.store, text, vis))

        async def embed_query() -> None:
            query_vectors.append(await self.vectors.embed_query(text))
            await self.vectors.catch_up()

        # The query embedding (a model thread) and the FTS5 query (a database thread)
        # overlap instead of adding up.
        async with anyio.create_task_group() as arms:
            arms.start_soon(keyword_arm)
            if semantic:
                arms.start_soon(embed_query)
        # Exact keys and identifiers are ranked even if the keyword pool left them out.
        keyword_hits = with_candidates(keyword_hits, exact[0].candidate_ids)
        if semantic:
            query_vector = query_vectors[0]
            # The keyword candidates get their cosine too, so both arms judge each one.
            vector_hits = await self.vectors.nearest(
                query_vector, vis, pool, also=[memory_id for memory_id, _ in keyword_hits]
            )
        else:
            notices.append(
                "semantic search is warming up (embedding model loading): "
                "these results come from keyword search only"
            )

        fused = fuse(keyword_hits, vector_hits, config)
        records = await self.store.fetch_many(list(fused))
        hits = []
        for memory_id, rel in fused.items():
            record = records.get(memory_id)
            if record is None or is_unrelated(rel):  # deleted meanwhile, or unrelated
                continue
            score = rel.relevance * prior(record, vis.now, config)
            hits.append(SearchHit(record, score, rel.relevance, rel.matched_by))
        return SearchResult(exact_first(hits, exact[0])[:limit], notices, semantic)

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


def _refuse_note_key(key: Any, source: Source) -> None:
    if (
        source is not Source.FILE_INDEX
        and isinstance(key, str)
        and key.strip().startswith(NOTE_KEY_PREFIX)
    ):
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
    "LEARNING_CATEGORIES",
    "MemoryService",
    "Policy",
    "SearchHit",
    "SearchResult",
    "StoreResult",
    "can_see",
    "may_change",
]
