"""The memory tools: memory-store, memory-search, memory-get, memory-delete,
memory-inject-learning and memory-complete-task. Translation only: arguments parsed into
the service's types inside `guard` (a bad value becomes a tool error naming the
argument), results as pydantic models (results/memories.py, published as each tool's
outputSchema)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.tool_calls import (
    ARCHIVED_FILTER,
    PROJECT_FILTER,
    TASK_FILTER,
    app_of,
    guard,
    one_of,
)
from memory_mcp.models import LearningCategory, Scope, SearchRequest, Source, StoreRequest
from memory_mcp.results.explanations import ScoreExplanation
from memory_mcp.results.links import MemoryLink
from memory_mcp.results.memories import (
    CompletedTask,
    DeleteResult,
    Learning,
    Memory,
    SearchHit,
    SearchResults,
    StoredMemory,
)

if TYPE_CHECKING:
    from memory_mcp.search.hits import SearchResult


async def store_memory(
    ctx: Context,
    key: Annotated[str, Field(description="Short unique name, e.g. 'deploy-preference'.")],
    value: Annotated[str, Field(description="The content to remember (plain text).")],
    scope: Annotated[
        str,
        one_of(*Scope, *v.SCOPE_ALIASES),
        Field(
            description="session: this session only; agent: you, across sessions; "
            "swarm (alias global): every agent."
        ),
    ] = "agent",
    tags: Annotated[list[str], Field(description="Labels to filter by later.")] = [],  # noqa: B006
    metadata: Annotated[dict[str, Any], Field(description="Any JSON object.")] = {},  # noqa: B006
    ttl_seconds: Annotated[
        float | None, Field(strict=True, description="Expire after this many seconds.")
    ] = None,
    expires_at: Annotated[
        str | None,
        Field(description="Expire at this ISO 8601 time, e.g. 2026-12-31T18:00:00Z."),
    ] = None,
    source: Annotated[
        str,
        one_of(*v.TOOL_SOURCES),
        Field(
            description="Where it came from; sets the default lifetime "
            "(task_completion 7 days, session_summary 3 days, manual never)."
        ),
    ] = "manual",
    confidence: Annotated[
        float | None, Field(strict=True, description="0-1, how sure you are.")
    ] = None,
    pinned: Annotated[
        bool, Field(strict=True, description="Pinned memories are never evicted.")
    ] = False,
    expected_version: Annotated[
        int | None,
        Field(
            strict=True,
            description="Only update if the memory is at this version (0: only create).",
        ),
    ] = None,
    project: Annotated[
        str | None, Field(description="Project name, or * for every project. Default: current.")
    ] = None,
    task: Annotated[
        str | None, Field(description="A task id: a working memory of that task (swarm).")
    ] = None,
) -> StoredMemory:
    """Save a memory, or update the one with the same key and scope (an upsert).

    Updating bumps `version` and keeps the previous value in history; storing identical
    content changes nothing. A swarm memory may be updated only by the agent that owns
    it or by the lead; anyone else gets an error naming the owner. Use
    `expected_version` (from memory-get) to avoid overwriting someone else's change: a
    mismatch is refused with the current version.
    The answer lists in `similar` the memories you can see that say nearly the same
    (id, key, cosine score): if one of them is the same fact, update it (store with its
    key and scope, or memory-delete the copy) rather than keeping two. Nothing is
    merged or dropped for you.
    Example: memory-store(key="test-command", value="Run `make test`; it sets up .venv",
    tags=["build"]).
    Secrets (API keys, tokens, private keys, passwords in URLs or assignments) are never
    stored: in the value or a metadata value they are replaced by `[REDACTED:<kind>]`
    and the rest is stored, and `redacted` in the answer lists each one (field, kind,
    characters [start, end) of what you sent); in the key, a tag or a metadata key the
    call is refused, naming the field and the characters. Placeholders (`<TOKEN>`,
    `${API_KEY}`, `your-api-key`, `xxxx`) and code that reads a secret
    (`os.environ["TOKEN"]`) are not secrets and are stored as they are."""
    app = await app_of(ctx)

    async def store() -> StoredMemory:
        caller = caller_of(app)
        request = StoreRequest(
            key=key,
            value=value,
            scope=v.parse_store_scope(scope),
            tags=tags,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            expires_at=v.parse_optional_datetime(expires_at, "expires_at"),
            source=v.parse_source(source, v.TOOL_SOURCES),
            confidence=confidence,
            pinned=pinned,
            expected_version=expected_version,
            project=project,
            task=task,
        )
        return StoredMemory.of(*await app.service.store_and_check(caller, request))

    return await guard(app, store())


async def memory_search(
    ctx: Context,
    query: Annotated[str, Field(description="Words, names or identifiers, or a question.")],
    limit: Annotated[int, Field(strict=True, description="How many results, 1-50.")] = 10,
    scope: Annotated[
        str,
        one_of("all", *Scope, *v.SCOPE_ALIASES),
        Field(description="Restrict to one scope; 'all' searches everything you can see."),
    ] = "all",
    tags: Annotated[list[str], Field(description="Only memories with all these tags.")] = [],  # noqa: B006
    source: Annotated[
        str | None,
        one_of(*Source, optional=True),
        Field(description="Only memories from this source."),
    ] = None,
    include_expired: Annotated[
        bool, Field(strict=True, description="Also return expired ones.")
    ] = False,
    since: Annotated[
        str | None,
        Field(
            description="Only memories changed (created or updated) at or after this: "
            "an ISO 8601 time (2026-11-01, 2026-11-01T09:00:00Z) or an age (7d, 12h, 30m)."
        ),
    ] = None,
    until: Annotated[
        str | None,
        Field(
            description="Only memories last changed at or before this (same forms as "
            "since; until='30d': not changed for 30 days)."
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        Field(strict=True, description="Leave out results whose score is below this (0-1)."),
    ] = None,
    explain: Annotated[
        bool,
        Field(strict=True, description="Add `explain` to each result: why it ranks there."),
    ] = False,
    expand: Annotated[
        bool | None,
        Field(
            strict=True,
            description="Also rank the memories linked to the best hits (memory-link); "
            "explain names the link that brought each in. Default: off.",
        ),
    ] = None,
    project: Annotated[str | None, PROJECT_FILTER] = None,
    task: Annotated[str | None, TASK_FILTER] = None,
    include_archived: Annotated[bool, ARCHIVED_FILTER] = False,
) -> SearchResults:
    """Find memories by meaning and by exact words (hybrid search), best first.

    A memory whose key is the query, or that holds an identifier from it word for word
    (gen-0042, PaymentService.refund, ERR_CONN_42), comes before the merely similar.
    Each result has a `score` in [0, 1] and `matched_by` (keyword, vector or both).
    Long values are cut (`truncated: true`); read the whole memory with memory-get.
    `semantic: false` means the results come from keyword search only (see notices).
    Filters (scope, tags, source, since, until) apply before ranking, so a narrow filter
    still returns up to `limit` results. Scores compare results within one search (1.0:
    best on both words and meaning), so keep `min_score` low (0.2-0.4) to drop weak
    tails. `explain=true` adds each result's keyword and vector scores, recency,
    source, pinned and exact-match parts, with a one-line `why`. `expand=true` follows
    the links of the strongest hits: a linked memory competes with its own score or half
    its hit's relevance, whichever is higher (`matched_by: link`, `explain.via` names the
    link) — for questions whose answer spans memories you linked.
    Example: memory-search(query="how do we deploy to staging?", limit=5);
    memory-search(query="flaky test", since="7d", explain=true)."""
    app = await app_of(ctx)

    async def search() -> SearchResult:
        request = SearchRequest(
            query,
            limit,
            v.parse_scope(scope, allow_all=True),
            tags,
            None if source is None else v.parse_source(source, tuple(Source)),
            include_expired,
            since,
            until,
            min_score,
            expand,
            project,
            task,
            include_archived,
        )
        return await app.service.search(caller_of(app), request)

    result = await guard(app, search())
    max_chars = app.settings.search_value_chars
    return SearchResults(
        results=[
            SearchHit.of(
                hit.record,
                hit.score,
                hit.matched_by,
                max_chars,
                ScoreExplanation.of(hit) if explain else None,
            )
            for hit in result.hits
        ],
        semantic=result.semantic,  # false: keyword search only, see notices
        notices=result.notices or None,
    )


async def memory_get(
    ctx: Context,
    id: Annotated[
        int,
        Field(strict=True, description="The memory id from memory-search or memory-store."),
    ],
) -> Memory:
    """Read one whole memory by id, with its version, access count and expiry, and its
    `links` to and from other memories (relation, direction, the other memory's id and
    key; see memory-link and memory-related).

    Expired memories are still returned here, with `expired: true`.
    Example: memory-get(id=42)."""
    app = await app_of(ctx)

    async def read() -> Memory:
        caller = caller_of(app)
        record = await app.service.get(caller, id)
        links, more = await app.service.links_of(caller, record)
        shown = [MemoryLink.of(link) for link in links]
        memory = Memory.of(record, app.service.is_expired(record), shown)
        memory.more_links = more or None
        return memory

    return await guard(app, read())


async def memory_delete(
    ctx: Context,
    id: Annotated[int | None, Field(strict=True, description="The memory id to delete.")] = None,
    key: Annotated[
        str | None, Field(description="Or: the key of the memory to delete (with scope).")
    ] = None,
    scope: Annotated[
        str,
        one_of(*Scope, *v.SCOPE_ALIASES),
        Field(description="With key: the scope it was stored in."),
    ] = "agent",
) -> DeleteResult:
    """Delete a memory for good, by `id`, or by `key` and `scope` as it was stored.
    You may delete your own memories; the lead may also delete swarm memories.
    Example: memory-delete(id=42), or memory-delete(key="test-command", scope="swarm").
    Many at once: memory-delete-many."""
    app = await app_of(ctx)

    async def delete() -> int:
        caller = caller_of(app)
        if (id is None) == (key is None):
            raise InvalidInputError("id", "give id or key (with scope), not both or neither")
        if key is not None:
            return await app.service.delete_by_key(caller, key, v.parse_store_scope(scope))
        return await app.service.delete(caller, id)

    deleted = await guard(app, delete())
    return DeleteResult(deleted=True, id=deleted)


async def inject_learning(
    ctx: Context,
    learning: Annotated[str, Field(description="The lesson, stated so a worker can act on it.")],
    category: Annotated[
        str,
        one_of(*LearningCategory),
        Field(description="What kind of learning it is."),
    ],
    agent_id: Annotated[
        str | None,
        Field(
            description="The worker it is about, if any (kept as `about_agent`; "
            "the learning belongs to you, the lead)."
        ),
    ] = None,
    project: Annotated[
        str | None, Field(description="Project name, or * for every project. Default: current.")
    ] = None,
) -> Learning:
    """Lead agent only: push a learning into the swarm memory so every worker recalls it.

    Stored swarm-scoped and tagged with its category, owned by the lead (only a lead
    may update or delete it); injecting the same learning again changes nothing.
    Offered to the lead only: workers do not see it in their tool list. A secret in the
    learning is replaced by `[REDACTED:<kind>]`, listed in `redacted` (as memory-store).
    Example: memory-inject-learning(learning="Run migrations before the API tests",
    category="mistake-pattern", agent_id="worker-2")."""
    app = await app_of(ctx)

    async def inject() -> Learning:
        parsed = v.parse_learning_category(category)
        outcome = await app.service.inject_learning(
            caller_of(app), learning, parsed, agent_id, project
        )
        return Learning.of(outcome, parsed)

    return await guard(app, inject())


async def complete_task(
    ctx: Context,
    task: Annotated[str, Field(description="The task id its working memories were stored with.")],
    handoff_to: Annotated[
        str | None, Field(description="Move them to this task instead of archiving.")
    ] = None,
    project: Annotated[str | None, Field(description="Project name. Default: current.")] = None,
) -> CompletedTask:
    """Complete a task: archive its working memories (memory-store with `task`), or hand
    them to the next task. Archived ones are found only with include_archived.
    Example: memory-complete-task(task="issue-36", handoff_to="issue-36-review")."""
    app = await app_of(ctx)

    async def complete() -> CompletedTask:
        done = await app.service.complete_task(caller_of(app), task, handoff_to, project)
        return CompletedTask(
            task=task.strip(),
            project=done.project,
            archived=len(done.archived),
            handed_off=len(done.moved),
            handoff_to=None if handoff_to is None else handoff_to.strip(),
        )

    return await guard(app, complete())


def register_memory_tools(server: MCPServer[Any]) -> None:
    server.tool(
        name="memory-store",  # and the deprecated store_memory (mcp/tool_names.py)
        annotations=ToolAnnotations(
            title="Store a memory", readOnlyHint=False, destructiveHint=False, idempotentHint=True
        ),
    )(store_memory)
    server.tool(
        name="memory-search",
        annotations=ToolAnnotations(title="Search memories", readOnlyHint=True),
    )(memory_search)
    server.tool(
        name="memory-get",
        annotations=ToolAnnotations(title="Read a memory", readOnlyHint=True),
    )(memory_get)
    server.tool(
        name="memory-delete",
        annotations=ToolAnnotations(
            title="Delete a memory", readOnlyHint=False, destructiveHint=True, idempotentHint=True
        ),
    )(memory_delete)
    server.tool(
        name="memory-inject-learning",  # and the deprecated inject-learning (mcp/tool_names.py)
        annotations=ToolAnnotations(
            title="Share a learning with every agent (lead only)",
            readOnlyHint=False,
            idempotentHint=True,
        ),
    )(inject_learning)
    server.tool(
        name="memory-complete-task",
        annotations=ToolAnnotations(
            title="Complete a task", readOnlyHint=False, destructiveHint=False, idempotentHint=True
        ),
    )(complete_task)
