"""The light way in, for what only reads a row or prints the `<memories>` block: the
SessionStart hook, `memory-mcp context` and `memory-mcp get`. On a SQLite file they read
through the standard library's sqlite3 (store/sqlite/stdlib_reads.py) instead of opening the app
(app/root.py: SQLAlchemy, the model's runtime, the workers), which costs several times
their whole work in imports alone. The rules are the app's: who may see what is
rules/permissions.py's decision and store/visibility.py's SQL, the block is
rules/memories_block.py's. Where these reads cannot serve (PostgreSQL, an in-memory
database, an older store the full open migrates) each function answers None and the
caller opens the app.

Also the parts of the app both ways build from Settings (the caller, the policy), so the
composition root (app/root.py) and this one read the settings alike."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from memory_mcp.app.startup import prepare_store_location
from memory_mcp.checks import validation as v
from memory_mcp.models import Caller, MemoryRecord, Source
from memory_mcp.rules.memories_block import (
    POOL,
    BlockLimits,
    Reading,
    by_priority,
    most_relevant,
    pool_view,
    render_block,
)
from memory_mcp.rules.permissions import visible_or_not_found
from memory_mcp.rules.policy import Policy
from memory_mcp.rules.projects import current_project
from memory_mcp.rules.trust import DEFAULT_CONFIDENCE, TrustMarks, TrustPolicy, marks
from memory_mcp.rules.write_policy import write_kinds
from memory_mcp.search.ranking_config import RankingConfig
from memory_mcp.settings import Settings
from memory_mcp.store.sqlite.file import LARGEST_ID
from memory_mcp.store.sqlite.stdlib_reads import SqliteReads, open_reads


def project_of(settings: Settings) -> str | None:
    """The current project of this process: the setting, else (stdio server, CLI, hooks)
    the git work tree it runs in; a team server's callers choose theirs per connection."""
    here = Path.cwd() if settings.transport == "stdio" else None
    return current_project(settings.project, here)


def caller_of(settings: Settings) -> Caller:
    """Who a local way in (stdio, the CLI, the hooks) acts as, in its current project."""
    return Caller(settings.agent_id, settings.role, settings.session_id, project_of(settings))


def policy_from(settings: Settings) -> Policy:
    return Policy(
        max_memories_per_agent=settings.max_memories_per_agent,
        max_entries_per_project=settings.max_entries_per_project,
        max_value_chars=settings.max_value_chars,
        search_value_chars=settings.search_value_chars,
        ttl_days={
            Source.MANUAL: settings.ttl_manual_days,
            Source.TASK_COMPLETION: settings.ttl_task_completion_days,
            Source.SESSION_SUMMARY: settings.ttl_session_summary_days,
            Source.FILE_INDEX: settings.ttl_file_index_days,
        },
        ranking=replace(
            RankingConfig().with_half_life(settings.recency_half_life_days),
            trust=trust_from(settings),
        ),
        search_model_wait_seconds=settings.search_model_wait_seconds,
        injection_policy=settings.injection_policy,
        write_kinds=write_kinds(settings.write_kinds) if settings.write_policy else None,
        kind_ttl_days=dict(settings.ttl_kind_days),
    )


def marks_of(settings: Settings, record: MemoryRecord, now: float) -> TrustMarks:
    """The trust marks of a record read here (rules/trust.py), as the service gives them."""
    policy = trust_from(settings)
    return marks(policy, record.source, record.confidence, record.pinned, record.updated_at, now)


def trust_from(settings: Settings) -> TrustPolicy:
    """rules/trust.py's knobs: the built-in confidence of each source, overridden by the
    settings' `source_confidence`."""
    confidence = dict(DEFAULT_CONFIDENCE)
    confidence.update({Source(name): value for name, value in settings.source_confidence.items()})
    return TrustPolicy(
        default_confidence=confidence,
        stale_after_days=settings.stale_after_days,
        stale_below=settings.stale_below_confidence,
        verify_below=settings.verify_below_confidence,
        decay_per_day=settings.confidence_decay_per_day,
        floor=settings.confidence_floor,
    )


@contextmanager
def store_reads(settings: Settings) -> Iterator[SqliteReads | None]:
    """The store's reads on the standard library, or None (open the app instead). Never
    creates a store: StoreMissingError when there is none."""
    prepare_store_location(settings, create=False)
    path = settings.database_file
    reads = None if path is None else open_reads(path, settings.synchronous)
    try:
        yield reads
    finally:
        if reads is not None:
            reads.close()


def memories_block(settings: Settings, limits: BlockLimits | None = None) -> str | None:
    """The `<memories>` block without a query (rules/memories_block.py's, from the same
    pool, ranked alike), or None when these reads cannot serve the store."""
    limits = limits or block_limits(settings)
    with store_reads(settings) as reads:
        if reads is None:
            return None
        now = time.time()
        caller = caller_of(settings)
        pool = reads.recent(pool_view(caller, now), POOL)
    ranking = policy_from(settings).ranking
    chosen = most_relevant(pool, now, ranking, limits.max_items)
    return render_block(chosen, limits, Reading(ranking.trust, now), caller.project)


def block_limits(settings: Settings, max_tokens: int | None = None) -> BlockLimits:
    """The session's block: the settings' budget (context_max_tokens), unless given."""
    return BlockLimits(settings.context_max_items, max_tokens or settings.context_max_tokens)


def prompt_block(settings: Settings, prompt: str) -> str | None:
    """The `<memories>` block for a prompt (the UserPromptSubmit hook): the memories of
    the current project and `*` whose words match the prompt well enough
    (rules/prompt_recall.py: BM25 over the keyword index, each hit holding at least
    `prompt_min_match` of the prompt), best first, in `prompt_max_tokens`; ""
    when none does; None when these reads cannot serve the store."""
    from memory_mcp.rules.prompt_recall import (
        CANDIDATES,
        MAX_PROMPT_TERMS,
        recalled_by_prompt,
        relevant,
    )
    from memory_mcp.store.keyword import KEYWORD_COLUMN_WEIGHTS, query_terms

    terms = query_terms(prompt)[:MAX_PROMPT_TERMS]
    limits = BlockLimits(settings.context_max_items, settings.prompt_max_tokens)
    if not terms:
        return ""
    with store_reads(settings) as reads:
        if reads is None:
            return None
        caller = caller_of(settings)
        vis = pool_view(caller, time.time())
        hits, shares = reads.keyword_hits(terms, vis, CANDIDATES, KEYWORD_COLUMN_WEIGHTS)
        chosen = relevant(hits, shares, settings.prompt_min_match)
        records = [r for r in map(reads.get, chosen) if r is not None and recalled_by_prompt(r)]
    reading = Reading(trust_from(settings), time.time())
    return render_block(by_priority(records[: limits.max_items]), limits, reading, caller.project)


def get_memory(settings: Settings, given_id: object) -> MemoryRecord | None:
    """MemoryService.get: the memory if the settings' agent may see it (else
    MemoryNotFoundError), its read counted and written now; or None when these reads
    cannot serve the store."""
    with store_reads(settings) as reads:
        if reads is None:
            return None
        memory_id = v.clean_id(given_id, LARGEST_ID)
        record = visible_or_not_found(caller_of(settings), memory_id, reads.get(memory_id))
        now = time.time()
        reads.count_read(record.id, now)
    record.access_count += 1
    record.last_accessed_at = now
    return record


__all__ = [
    "block_limits",
    "caller_of",
    "get_memory",
    "memories_block",
    "policy_from",
    "project_of",
    "prompt_block",
    "store_reads",
]
