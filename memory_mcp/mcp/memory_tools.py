"""The memory tools: store_memory, memory-search, memory-get, memory-delete,
inject-learning and memory-complete-task. Translation only: arguments parsed into
the service's types inside `guard` (a bad value becomes a tool error naming the
argument), results as pydantic models (results/memories.py, published as each tool's
outputSchema)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field, WithJsonSchema

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError
from memory_mcp.mcp.identity import caller_of
from memory_mcp.mcp.store_batch import batch_requests
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
from memory_mcp.mcp.tool_names import INJECT_LEARNING, STORE
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
    StoreAnswer,
    StoredMemory,
    TimeCueShown,
)
from memory_mcp.rules.batch import MAX_BATCH

if TYPE_CHECKING:
    from memory_mcp.search.hits import SearchResult


def _store_scope(scope: str | None, task: str | None) -> Scope:
    """A task's working memories are shared by its agents (swarm): a task with another
    scope asked for is refused, not stored as swarm without a word."""
    parsed = Scope.AGENT if scope is None else v.parse_store_scope(scope)
    if task is None:
        return parsed
    if scope is not None and parsed is not Scope.SWARM:
        raise InvalidInputError(
            "scope",
            f"a task's working memories are swarm (read by every agent naming the task); "
            f"leave scope out with task, or store it without task (scope {parsed.value!r})",
        )
    return Scope.SWARM


async def store_memory(
    ctx: Context,
    key: Annotated[str | None, Field(description="Short unique name: 'deploy-preference'.")] = None,
    value: Annotated[
        str | dict[str, Any] | list[Any] | None,
        WithJsonSchema({"type": ["string", "object", "array"]}),
        Field(description="What to remember: text, or a JSON object or array."),
    ] = None,
    scope: Annotated[
        str | None,
        one_of(*Scope, optional=True),
        Field(description="session: this session; agent (default): you; swarm: every agent."),
    ] = None,
    tags: Annotated[list[str] | None, Field(description="Labels ([] removes them).")] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="JSON object ({} removes it).")
    ] = None,
    ttl_seconds: Annotated[float | None, Field(strict=True, description="Expire after.")] = None,
    expires_at: Annotated[
        str | None, Field(description='Expire at (ISO 8601), or "never".')
    ] = None,
    source: Annotated[
        str | None,
        one_of(*v.TOOL_SOURCES, optional=True),
        Field(description="Default manual."),
    ] = None,
    confidence: Annotated[float | None, Field(strict=True, description="0-1.")] = None,
    pinned: Annotated[bool | None, Field(strict=True, description="Never evicted.")] = None,
    expected_version: Annotated[
        int | None,
        Field(strict=True, description="Only at this version (0: create only)."),
    ] = None,
    replace: Annotated[
        bool, Field(strict=True, description="Whole rewrite: left-out fields get defaults.")
    ] = False,
    project: Annotated[str | None, PROJECT_ARGUMENT] = None,
    task: Annotated[str | None, Field(description="A task's working memory.")] = None,
    supersedes: Annotated[
        int | None, Field(strict=True, description="Id of the memory this corrects.")
    ] = None,
    task_agents: Annotated[list[str] | None, Field(description="Agents sharing task.")] = None,
    kind: Annotated[
        str | None,
        Field(description="preference, fact, decision..."),
    ] = None,
    memories: Annotated[
        list[dict[str, Any]] | None,
        Field(description=f"Up to {MAX_BATCH}: objects of these arguments; all stored or none."),
    ] = None,
    from_scope: Annotated[
        str | None,
        one_of(*Scope, optional=True),
        Field(description="Move key's memory from this scope to scope."),
    ] = None,
) -> StoreAnswer:
    """Save what a later session should know: a decision, a preference, a fix that
    worked, a fact about the code. The same key and scope updates it (version +1, history
    kept), changing only the fields given. `similar` lists near-copies: update one instead;
    `conflicts`: ones it may contradict.
    Example: store_memory(key="test-command", value="Run `make test`")"""
    app = await app_of(ctx)
    one = {
        "key": key,
        "value": value,
        "scope": scope,
        "tags": tags,
        "metadata": metadata,
        "ttl_seconds": ttl_seconds,
        "expires_at": expires_at,
        "source": source,
        "confidence": confidence,
        "pinned": pinned,
        "expected_version": expected_version,
        "replace": replace,
        "project": project,
        "task": task,
        "kind": kind,
    }

    async def store() -> StoreAnswer:
        caller = caller_of(app)
        if from_scope is not None:
            given = [
                name
                for name, got in one.items()
                if got != ONE_MEMORY_DEFAULTS[name] and name not in ("key", "scope")
            ]
            if memories is not None or given or key is None:
                wrong = "key" if key is None else given[0] if given else "memories"
                raise InvalidInputError(wrong, "with from_scope, give key and scope only")
            moved = await app.service.change_scope(
                caller, key, v.parse_store_scope(from_scope), _store_scope(scope, None)
            )
            return StoreAnswer.one(StoredMemory.of(*moved))
        if memories is not None:
            given = [name for name, got in one.items() if got != ONE_MEMORY_DEFAULTS[name]]
            if given:
                raise InvalidInputError(
                    given[0], "with memories, give each memory's arguments inside it"
                )
            stored = await app.service.store_batch(caller, batch_requests(memories))
            return StoreAnswer(stored=[StoredMemory.of(*answer) for answer in stored])
        if key is None or value is None:
            raise InvalidInputError("key" if key is None else "value", "is required")
        request = StoreRequest(
            key=key,
            value=value,
            scope=_store_scope(scope, task),
            tags=tags,
            metadata=metadata,
            ttl_seconds=ttl_seconds,
            expires_at=v.parse_expires_at(expires_at),
            source=None if source is None else v.parse_source(source, v.TOOL_SOURCES),
            confidence=confidence,
            pinned=pinned,
            expected_version=expected_version,
            replace=replace,
            project=project,
            task=task,
            supersedes=supersedes,
            task_agents=task_agents,
            kind=kind,
        )
        return StoreAnswer.one(StoredMemory.of(*await app.service.store_and_check(caller, request)))

    return await guard(app, store())


# A single memory's arguments as store_memory leaves them out: with `memories`, each goes
# inside its memory instead.
ONE_MEMORY_DEFAULTS: dict[str, Any] = {
    name: parameter.default
    for name, parameter in inspect.signature(store_memory).parameters.items()
    if name not in ("ctx", "memories", "from_scope")
}


async def memory_search(
    ctx: Context,
    query: Annotated[str, Field(description="Words, names, identifiers or a question.")],
    limit: Annotated[int, Field(strict=True, description="1-50.")] = 10,
    scope: Annotated[str, one_of("all", *Scope)] = "all",
    tags: Annotated[list[str], Field(description="All of these tags.")] = [],  # noqa: B006
    source: Annotated[str | None, SOURCE_FILTER] = None,
    include_expired: Annotated[bool, Field(strict=True)] = False,
    since: Annotated[
        str | None, Field(description="Changed since: ISO time or age (7d, 12h).")
    ] = None,
    until: Annotated[str | None, Field(description="Changed until (as since).")] = None,
    min_score: Annotated[
        float | None, Field(strict=True, description="Drop results below (0-1; try 0.3).")
    ] = None,
    explain: Annotated[bool, Field(strict=True, description="Score parts per result.")] = False,
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
    task and whenever past work may help. Exact keys and identifiers rank first; a narrow
    filter may return fewer or none. Long values are cut: memory-get reads one.
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
    id: Annotated[int | None, Field(strict=True)] = None,
    key: Annotated[str | None, Field(description="Or its key.")] = None,
    scope: Annotated[str | None, one_of(*Scope, optional=True)] = None,
    project: Annotated[str | None, PROJECT_FILTER] = None,
    as_of: Annotated[str | None, AS_OF] = None,
) -> Memory:
    """Read one whole memory with its links, by id or by key (scope or project picks
    among several).
    Example: memory-get(key="deploy-day")"""
    app = await app_of(ctx)

    async def read() -> Memory:
        caller = caller_of(app)
        if (id is None) == (key is None):
            raise InvalidInputError("id", "give id or key, not both or neither")
        if key is None:
            if scope is not None or project is not None:
                raise InvalidInputError("id", "scope and project go with key, not with id")
            record = await app.service.get(caller, id)
        else:
            parsed = None if scope is None else v.parse_store_scope(scope)
            record = await app.service.get_by_key(caller, key, parsed, project)
        record = await app.service.as_of(record, as_of)
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
    key: Annotated[str | None, Field(description="Or the key, with scope.")] = None,
    scope: Annotated[str, one_of(*Scope)] = "agent",
) -> DeleteResult:
    """Delete a memory for good, by id or by key and scope: yours, or (lead) a swarm one.
    Example: memory-delete(id=42)"""
    app = await app_of(ctx)

    async def delete() -> int:
        caller = caller_of(app)
        if (id is None) == (key is None):
            raise InvalidInputError("id", "give id or key (with scope), not both or neither")
        if key is not None:
            return await app.service.deletes.delete_by_key(caller, key, v.parse_store_scope(scope))
        return await app.service.deletes.delete(caller, id)

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
    Example: inject-learning(learning="Run migrations before the API tests",
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
        name=STORE,  # and its alias memory-store (mcp/tool_names.py)
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
        name=INJECT_LEARNING,  # and its alias memory-inject-learning (mcp/tool_names.py)
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
