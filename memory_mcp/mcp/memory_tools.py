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
    AS_OF,
    PROJECT_ARGUMENT,
    PROJECT_FILTER,
    SOURCE_FILTER,
    SUPERSEDED_FILTER,
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
    TimeCueShown,
)

if TYPE_CHECKING:
    from memory_mcp.search.hits import SearchResult


async def store_memory(
    ctx: Context,
    key: Annotated[str, Field(description="Short unique name, e.g. 'deploy-preference'.")],
    value: Annotated[str, Field(description="What to remember, as plain text.")],
    scope: Annotated[
        str,
        one_of(*Scope),
        Field(description="session: this session; agent: you, always; swarm: every agent."),
    ] = "agent",
    tags: Annotated[
        list[str] | None, Field(description="Labels to filter by later ([] removes them).")
    ] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Any JSON object ({} removes it).")
    ] = None,
    ttl_seconds: Annotated[float | None, Field(strict=True, description="Expire after.")] = None,
    expires_at: Annotated[str | None, Field(description="Expire at (ISO 8601).")] = None,
    source: Annotated[
        str | None,
        one_of(*v.TOOL_SOURCES, optional=True),
        Field(description="Default manual."),
    ] = None,
    confidence: Annotated[float | None, Field(strict=True, description="0-1.")] = None,
    pinned: Annotated[bool | None, Field(strict=True, description="Never evicted.")] = None,
    expected_version: Annotated[
        int | None,
        Field(strict=True, description="Update only at this version (0: create only)."),
    ] = None,
    replace: Annotated[
        bool, Field(strict=True, description="Rewrite it whole: left-out fields get defaults.")
    ] = False,
    project: Annotated[str | None, PROJECT_ARGUMENT] = None,
    task: Annotated[str | None, Field(description="A task's working memory.")] = None,
    supersedes: Annotated[
        int | None, Field(strict=True, description="Id of the memory this corrects.")
    ] = None,
    kind: Annotated[
        str | None,
        Field(description="preference, fact, decision..."),
    ] = None,
) -> StoredMemory:
    """Save something worth knowing in a later session: a decision, a preference, a fix
    that worked, a fact about the code. The same key and scope updates it (version +1,
    history kept), changing only the fields given. `similar` lists near-copies: update
    one instead of keeping two; `conflicts`: ones it may contradict. Secrets are stored as
    [REDACTED:kind].
    Example: memory-store(key="test-command", value="Run `make test`", tags=["build"])"""
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
            source=None if source is None else v.parse_source(source, v.TOOL_SOURCES),
            confidence=confidence,
            pinned=pinned,
            expected_version=expected_version,
            replace=replace,
            project=project,
            task=task,
            supersedes=supersedes,
            kind=kind,
        )
        return StoredMemory.of(*await app.service.store_and_check(caller, request))

    return await guard(app, store())


async def memory_search(
    ctx: Context,
    query: Annotated[str, Field(description="Words, names, identifiers or a question.")],
    limit: Annotated[int, Field(strict=True, description="1-50.")] = 10,
    scope: Annotated[str, one_of("all", *Scope)] = "all",
    tags: Annotated[list[str], Field(description="All of these tags.")] = [],  # noqa: B006
    source: Annotated[str | None, SOURCE_FILTER] = None,
    include_expired: Annotated[bool, Field(strict=True)] = False,
    since: Annotated[
        str | None, Field(description="Changed since: ISO 8601 time or age (7d, 12h).")
    ] = None,
    until: Annotated[str | None, Field(description="Changed until (as since).")] = None,
    min_score: Annotated[
        float | None, Field(strict=True, description="Drop results below (0-1; try 0.3).")
    ] = None,
    explain: Annotated[
        bool, Field(strict=True, description="Add each result's score parts.")
    ] = False,
    expand: Annotated[
        bool | None, Field(strict=True, description="Also rank memories linked to top hits.")
    ] = None,
    project: Annotated[str | None, PROJECT_FILTER] = None,
    task: Annotated[str | None, TASK_FILTER] = None,
    include_archived: Annotated[bool, ARCHIVED_FILTER] = False,
    include_superseded: Annotated[bool, SUPERSEDED_FILTER] = False,
    as_of: Annotated[str | None, AS_OF] = None,
) -> SearchResults:
    """Search memories by meaning and exact words, best first. Search before starting a
    task and whenever past work may help. Exact keys and identifiers rank first; a
    narrow filter may return fewer or none. matched_by "context": the words are only in
    the memories written just before it. Long values are cut: memory-get reads one whole.
    Example: memory-search(query="how do we deploy?", limit=5)"""
    app = await app_of(ctx)

    async def search() -> SearchResult:
        request = SearchRequest(
            query,
            limit=limit,
            scope=v.parse_scope(scope, allow_all=True),
            tags=tags,
            source=None if source is None else v.parse_source(source, tuple(Source)),
            include_expired=include_expired,
            since=since,
            until=until,
            min_score=min_score,
            expand=expand,
            explain=explain,
            project=project,
            task=task,
            include_archived=include_archived,
            include_superseded=include_superseded,
            as_of=as_of,
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
                app.service.trust_marks(hit.record),
            )
            for hit in result.hits
        ],
        semantic=result.semantic,  # false: keyword search only, see notices
        notices=result.notices or None,
        time_cue=TimeCueShown.of(result) if explain else None,
    )


async def memory_get(
    ctx: Context,
    id: Annotated[int, Field(strict=True, description="From memory-search or memory-store.")],
    as_of: Annotated[str | None, AS_OF] = None,
) -> Memory:
    """Read one whole memory by id, with its links (expired ones too).
    Example: memory-get(id=42)"""
    app = await app_of(ctx)

    async def read() -> Memory:
        caller = caller_of(app)
        record = await app.service.as_of(await app.service.get(caller, id), as_of)
        links, more = await app.service.links.links_of(caller, record)
        shown = [MemoryLink.of(link) for link in links]
        memory = Memory.of(
            record, app.service.is_expired(record), shown, app.service.trust_marks(record)
        )
        memory.more_links = more or None
        return memory

    return await guard(app, read())


async def memory_delete(
    ctx: Context,
    id: Annotated[int | None, Field(strict=True)] = None,
    key: Annotated[str | None, Field(description="Instead of id: the key, with scope.")] = None,
    scope: Annotated[str, one_of(*Scope)] = "agent",
) -> DeleteResult:
    """Delete a memory for good, by id or by key and scope: your own, or (lead) a swarm
    one.
    Example: memory-delete(id=42)"""
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
    learning: Annotated[str, Field(description="The lesson, stated so a worker can act.")],
    category: Annotated[str, one_of(*LearningCategory)],
    agent_id: Annotated[str | None, Field(description="The worker it is about.")] = None,
    project: Annotated[str | None, PROJECT_ARGUMENT] = None,
) -> Learning:
    """Lead only: share a lesson with every worker (a swarm memory tagged with its
    category, owned by you). The same learning twice changes nothing.
    Example: memory-inject-learning(learning="Run migrations before the API tests",
    category="mistake-pattern", agent_id="worker-2")"""
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
    task: str,
    handoff_to: str | None = None,
) -> CompletedTask:
    """Archive a task's working memories, or move them to task handoff_to.
    Example: memory-complete-task(task="issue-36")"""
    app = await app_of(ctx)

    async def complete() -> CompletedTask:
        done = await app.service.tasks.complete_task(caller_of(app), task, handoff_to)
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
