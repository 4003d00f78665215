"""`memory-mcp search | get | list | history | store | delete | stats`: what the agents
remember, for a person (tables) or a script (`--json`: the MCP tools' result shapes).

Each command acts as one agent, as `serve` does (--agent-id, --role, --session-id, or the
MEMORY_MCP_* variables and the settings file), and goes through MemoryService: it sees,
and may delete, exactly what that agent's tools would. Reading commands never create a
store. With `--url`, search, get, list, history, store and delete ask a running team server
instead, as the agent of the token in MEMORY_MCP_TOKEN (its tools, so its rules).
Loading this module imports nothing heavy (the handlers do), so `memory-mcp --version`
and the parser stay fast. Over 500 lines: seven commands that share one way of acting as
an agent (here or on a team server) and of printing a result; each command is short."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from memory_mcp.cli.common import MODEL, STORE, settings_from, whole_store_unless_named
from memory_mcp.limits import MODEL_WAIT_SECONDS

if TYPE_CHECKING:
    import argparse

    from pydantic import BaseModel

    from memory_mcp.app.context import AppContext
    from memory_mcp.results.memories import Memory
    from memory_mcp.settings import Settings

    Shape = TypeVar("Shape", bound=BaseModel)

AddCommand = Callable[..., "argparse.ArgumentParser"]

SCOPES = ("all", "session", "agent", "swarm", "global")
SOURCES = ("manual", "task_completion", "session_summary", "file_index")
SEARCH_LIMIT = (1, 50)  # validation.MAX_SEARCH_LIMIT (not imported: it pulls in pydantic)
LIST_LIMIT = (1, 100)  # browsing.MAX_LIST_LIMIT
HISTORY_LIMIT = (1, 500)  # browsing.MAX_HISTORY_LIMIT


def add_commands(commands: Any, command: AddCommand) -> None:
    """Register the commands with cli.build_parser's `_command` (passed as `command`)."""
    search = command(
        commands,
        "search",
        cmd_search,
        STORE + MODEL,
        help="search memories by meaning and words, as memory-search does",
        description="Hybrid search (words and meaning) over the memories the agent may see. "
        "Loads the embedding model first (a few seconds); if it is not ready within "
        f"{MODEL_WAIT_SECONDS:g} s the search uses words only and says so.",
    )
    search.add_argument("query", help="words, names or identifiers, or a question")
    search.add_argument(
        "--limit",
        "-n",
        type=_bounded(*SEARCH_LIMIT),
        default=10,
        help="how many results, 1-50 (default 10)",
    )
    _filter_flags(search)
    search.add_argument(
        "--include-expired", action="store_true", help="also expired (not yet purged) ones"
    )
    _time_flags(search, "changed (created or updated)")
    search.add_argument(
        "--min-score",
        type=float,
        help="leave out results scoring below this (0-1; scores compare results within one "
        "search, so keep it low: 0.2-0.4)",
    )
    search.add_argument(
        "--explain",
        action="store_true",
        help="say why each result ranks where it does (its score's parts; with --json, "
        "memory-search's `explain`)",
    )
    _json_flag(search)
    _url_flag(search)

    get = command(commands, "get", cmd_get, STORE, help="show one memory whole, as memory-get does")
    get.add_argument("id", type=int, help="the memory's id (from search or list)")
    _json_flag(get)
    _url_flag(get)

    store = command(
        commands,
        "store",
        cmd_store,
        STORE + MODEL,
        help="store one memory, or update the one with its key, as store_memory does",
        description="An upsert on the key (and scope): an update changes only what the "
        "command gives (--tag, --metadata, --pinned...) and keeps the rest, unless --replace.",
    )
    store.add_argument("key", help="a short unique name, e.g. deploy-preference")
    store.add_argument("value", help="what to remember (plain text)")
    store.add_argument("--scope", choices=SCOPES[1:], default="agent", help="default: agent")
    store.add_argument("--tag", dest="tags", action="append", help="a label (repeat for several)")
    store.add_argument("--metadata", help='a JSON object, e.g. \'{"ticket": "ABC-1"}\'')
    store.add_argument("--source", choices=SOURCES[:3], help="default manual (for a new one)")
    store.add_argument("--confidence", type=float, help="0-1, how sure you are")
    store.add_argument("--kind", help="what it is: preference, fact, decision, strategy...")
    store.add_argument(
        "--pinned", action=_boolean_flag(), help="never evicted (--no-pinned: unpin)"
    )
    store.add_argument("--ttl-seconds", type=float, help="expire after this many seconds")
    store.add_argument(
        "--expires-at", help='expire at this ISO 8601 time ("never": remove an expiry)'
    )
    store.add_argument(
        "--replace",
        action="store_true",
        help="rewrite the whole memory: what the command leaves out gets its default",
    )
    _json_flag(store)
    _url_flag(store)

    delete = command(
        commands,
        "delete",
        cmd_delete,
        STORE,
        help="delete one memory (the agent's own; the lead also swarm memories)",
    )
    delete.add_argument("id", type=int, help="the memory's id")
    _json_flag(delete)
    _url_flag(delete)

    listing = command(
        commands,
        "list",
        cmd_list,
        STORE,
        help="browse memories without a query, newest first, a page at a time",
        description="The memories the agent may see, newest first (by last update, or by "
        "creation with --order created), as memory-list lists them. At the end it prints "
        "the --cursor that shows the next page.",
    )
    listing.add_argument(
        "--limit", "-n", type=_bounded(*LIST_LIMIT), default=20, help="per page, 1-100 (default 20)"
    )
    _filter_flags(listing)
    listing.add_argument("--owner", help="only memories owned by this agent")
    _time_flags(listing, "updated (or created)")
    listing.add_argument(
        "--order", choices=("updated", "created"), default="updated", help="default: updated"
    )
    listing.add_argument("--cursor", help="the next page: the cursor the previous page printed")
    listing.add_argument(
        "--include-expired", action="store_true", help="also expired (not yet purged) ones"
    )
    _json_flag(listing)
    _url_flag(listing)

    history = command(
        commands,
        "history",
        cmd_history,
        STORE,
        help="the versions of a memory (newest 50; --before pages back): value, who wrote it, when",
    )
    history.add_argument("id", type=int, help="the memory's id")
    history.add_argument(
        "--limit",
        "-n",
        type=_bounded(*HISTORY_LIMIT),
        default=50,
        help="the newest this many versions, 1-500 (default 50)",
    )
    history.add_argument(
        "--before", type=int, help="only versions older than this one (what `earlier:` printed)"
    )
    _json_flag(history)
    _url_flag(history)

    stats = command(
        commands,
        "stats",
        cmd_stats,
        STORE + MODEL,
        help="counts per scope, source and agent; database size; model; embedded share",
        description="What the agent may see: counts per scope, source and owner, expired "
        "ones, the share of texts searchable by meaning, the embedding model, and the size "
        "of the database file.",
    )
    _json_flag(stats)


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print JSON (the MCP tool's result shape)"
    )


def _filter_flags(parser: argparse.ArgumentParser) -> None:
    """search's and list's filters, as memory-search and memory-list take them."""
    parser.add_argument("--scope", choices=SCOPES, default="all", help="default: all")
    parser.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        help="only memories with this tag (repeat for several: all must match)",
    )
    parser.add_argument("--source", choices=SOURCES, help="only memories from this source")
    parser.add_argument("--task", help="also this task's working memories")
    parser.add_argument(
        "--include-archived", action="store_true", help="also completed tasks' memories"
    )
    parser.add_argument(
        "--include-superseded",
        action="store_true",
        help="also memories a correction closed (and, searching, replaced versions)",
    )
    parser.add_argument("--as-of", help="what held then: an ISO date-time or an age such as 30d")


def _time_flags(parser: argparse.ArgumentParser, changed: str) -> None:
    parser.add_argument(
        "--since",
        help=f"only memories {changed} since: an ISO date-time or an age such as 7d, 12h, 2w",
    )
    parser.add_argument("--until", help=f"only memories {changed} until then")


def _bounded(low: int, high: int) -> Callable[[str], int]:
    def whole_number(text: str) -> int:
        import argparse

        if not (text.isdigit() and low <= int(text) <= high):
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
        return int(text)

    return whole_number


def _url_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        help="ask a running team server (its MCP URL, .../mcp or .../sse) instead of "
        "opening a database, as the agent of the token in MEMORY_MCP_TOKEN",
    )


# --- handlers: each builds the tool's result shape, locally or from the team server


def cmd_search(args: argparse.Namespace) -> int:
    from memory_mcp.checks import validation as v
    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.models import SearchRequest, Source
    from memory_mcp.results.explanations import ScoreExplanation
    from memory_mcp.results.memories import SearchHit, SearchResults

    scope = v.parse_scope(args.scope, allow_all=True)
    source = v.parse_source(args.source, tuple(Source)) if args.source else None
    explain: bool = args.explain
    request = SearchRequest(
        args.query,
        limit=args.limit,
        scope=scope,
        tags=args.tags,
        source=source,
        include_expired=args.include_expired,
        since=args.since,
        until=args.until,
        min_score=args.min_score,
        task=args.task,
        include_archived=args.include_archived,
        explain=explain,
        include_superseded=args.include_superseded,
        as_of=args.as_of,
    )

    async def job(app: AppContext) -> SearchResults:
        await _wait_for_model(app)
        waiting = await catch_up_a_little(app)
        result = await app.service.search(app.caller, request)
        result.notices += waiting
        max_chars = app.settings.search_value_chars
        hits = [
            SearchHit.of(
                *(h.record, h.score, h.matched_by, max_chars),
                ScoreExplanation.of(h) if explain else None,
                app.service.trust_marks(h.record),
            )
            for h in result.hits
        ]
        return SearchResults(results=hits, semantic=result.semantic, notices=result.notices or None)

    arguments = {
        "query": args.query,
        "limit": args.limit,
        "scope": args.scope,
        "tags": args.tags,
        "source": args.source,
        "include_expired": args.include_expired,
        "since": args.since,
        "until": args.until,
        "min_score": args.min_score,
        "explain": explain,
        "task": args.task,
        "include_archived": args.include_archived,
        "include_superseded": args.include_superseded,
        "as_of": args.as_of,
    }
    results = _answer(args, job, "memory-search", arguments, SearchResults)
    _show(args, results, cli_tables.show_search)
    return 0


async def _wait_for_model(app: AppContext) -> None:
    """Give the model its time to load (bounded), as `context --query` does: a person
    waits a few seconds once rather than getting a words-only answer."""
    import anyio

    from memory_mcp.semantic.embeddings import EmbeddingUnavailableError

    try:
        with anyio.move_on_after(MODEL_WAIT_SECONDS):
            await app.service.embedder.wait_ready()
    except EmbeddingUnavailableError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)


async def catch_up_a_little(app: AppContext) -> list[str]:
    """No background worker embeds what a note's indexing or a hook wrote here: a search
    embeds a few such texts first (search/missing_vectors.py), and says if more wait."""
    from memory_mcp.search import missing_vectors as missing

    if not app.service.embedder.is_ready():
        return []  # the search says it is by words only
    vectors = app.service.vectors
    if await vectors.embed_a_few_pending(missing.CATCH_UP_TEXTS, missing.CATCH_UP_CHARS):
        return [missing.PENDING_NOTICE]
    return []


def cmd_get(args: argparse.Namespace) -> int:
    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.results.memories import Memory

    async def job(app: AppContext) -> Memory:
        # A read counts as memory-get's does (the shown count includes it): written now,
        # as this process has no background worker to write it later.
        record = await app.service.get(app.caller, args.id)
        await app.service.flush_accesses()
        marks = app.service.trust_marks(record)
        return Memory.of(record, expired=app.service.is_expired(record), marks=marks)

    memory = _read_locally(args, _get_memory) or _answer(
        args, job, "memory-get", {"id": args.id}, Memory
    )
    _show(args, memory, cli_tables.show_memory)
    return 0


def _get_memory(settings: Settings, args: argparse.Namespace) -> Memory | None:
    """`get` on the standard library's sqlite3 (app/reads.py), or None where it cannot."""
    import time

    from memory_mcp.app import reads
    from memory_mcp.results.memories import Memory

    record = reads.get_memory(settings, args.id)
    if record is None:
        return None
    now = time.time()
    return Memory.of(
        record, expired=record.expired(now), marks=reads.marks_of(settings, record, now)
    )


def cmd_list(args: argparse.Namespace) -> int:
    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.results.memories import ListedMemory, MemoryList
    from memory_mcp.rules.browsing import ListFilters

    async def job(app: AppContext) -> MemoryList:
        filters = ListFilters.parse(
            now=app.service.clock(),
            scope=args.scope,
            tags=args.tags,
            source=args.source,
            agent_id=args.owner,
            since=args.since,
            until=args.until,
            include_expired=args.include_expired,
            task=args.task,
            include_archived=args.include_archived,
            include_superseded=args.include_superseded,
            as_of=args.as_of,
        )
        page = await app.service.list_memories(
            app.caller, filters, args.order, args.cursor, args.limit
        )
        max_chars = app.settings.search_value_chars
        return MemoryList(
            memories=[
                ListedMemory.of(record, max_chars, app.service.trust_marks(record))
                for record in page.records
            ],
            next_cursor=page.next_cursor,
        )

    arguments = {
        "scope": args.scope,
        "tags": args.tags,
        "source": args.source,
        "agent_id": args.owner,
        "since": args.since,
        "until": args.until,
        "order": args.order,
        "cursor": args.cursor,
        "limit": args.limit,
        "include_expired": args.include_expired,
        "task": args.task,
        "include_archived": args.include_archived,
        "include_superseded": args.include_superseded,
        "as_of": args.as_of,
    }
    page = _answer(args, job, "memory-list", arguments, MemoryList)
    _show(args, page, cli_tables.show_list)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.results.memories import MemoryHistory, Version, trust_fields

    async def job(app: AppContext) -> MemoryHistory:
        page = await app.service.history(app.caller, args.id, args.limit, args.before)
        # Whole values: a person asked for this one memory (the tool cuts them).
        versions = [Version.of(entry, None) for entry in page.versions]
        return MemoryHistory(
            id=args.id, versions=versions, earlier=page.earlier, **trust_fields(page.marks)
        )

    arguments = {"id": args.id, "limit": args.limit, "before": args.before}
    history = _answer(args, job, "memory-history", arguments, MemoryHistory)
    _show(args, history, cli_tables.show_history)
    return 0


def cmd_store(args: argparse.Namespace) -> int:
    import json

    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.errors import InvalidInputError
    from memory_mcp.results.memories import StoredMemory

    try:
        metadata = None if args.metadata is None else json.loads(args.metadata)
    except json.JSONDecodeError as exc:
        raise InvalidInputError("metadata", f"is not JSON: {exc}") from None
    given = {
        "tags": args.tags,
        "metadata": metadata,
        "source": args.source,
        "confidence": args.confidence,
        "kind": args.kind,
        "pinned": args.pinned,
        "ttl_seconds": args.ttl_seconds,
        "expires_at": args.expires_at,
    }
    arguments = {
        "key": args.key,
        "value": args.value,
        "scope": args.scope,
        **{name: value for name, value in given.items() if value is not None},
        **({"replace": True} if args.replace else {}),
    }

    async def job(app: AppContext) -> StoredMemory:
        from memory_mcp.checks import validation as v
        from memory_mcp.models import StoreRequest

        await _wait_for_model(app)
        request = StoreRequest(
            key=args.key,
            value=args.value,
            scope=v.parse_store_scope(args.scope),
            tags=args.tags,
            metadata=metadata,
            ttl_seconds=args.ttl_seconds,
            expires_at=v.parse_expires_at(args.expires_at),
            source=None if args.source is None else v.parse_source(args.source, v.TOOL_SOURCES),
            confidence=args.confidence,
            kind=args.kind,
            pinned=args.pinned,
            replace=args.replace,
        )
        return StoredMemory.of(*await app.service.store_and_check(app.caller, request))

    result = _answer(args, job, "store_memory", arguments, StoredMemory, create=True)
    if args.json:
        cli_tables.print_json(result)
        return 0
    done = "stored" if result.created else "updated"
    print(f"{done} memory {result.id} ({result.key!r}, {result.scope}, version {result.version})")
    for secret in result.redacted or []:
        print(
            f"  {secret.field}: {secret.kind} redacted (characters {secret.start + 1}-{secret.end})"
        )
    for similar in result.similar:
        print(f"  similar: memory {similar.id} ({similar.key!r}, {similar.score:.2f})")
    return 0


def _boolean_flag() -> Any:
    import argparse

    return argparse.BooleanOptionalAction


def cmd_delete(args: argparse.Namespace) -> int:
    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.results.memories import DeleteResult

    async def job(app: AppContext) -> DeleteResult:
        return DeleteResult(deleted=True, id=await app.service.deletes.delete(app.caller, args.id))

    result = _answer(args, job, "memory-delete", {"id": args.id}, DeleteResult)
    if args.json:
        cli_tables.print_json(result)
    else:
        print(f"deleted memory {result.id}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    import dataclasses

    from memory_mcp.cli import tables as cli_tables
    from memory_mcp.rules.stats import VisibleStats, visible_stats

    settings = settings_from(args)

    async def job(app: AppContext) -> VisibleStats:
        return await visible_stats(app.service, app.caller, whole_store_unless_named(settings))

    from memory_mcp.app.root import run_with_app

    stats = run_with_app(settings, job, create=False)
    db_size = _file_size(settings.database_file)
    if args.json:
        data = dataclasses.asdict(stats)
        data["embedded_share"] = round(stats.embedded_share, 4)
        data["db_bytes"] = db_size
        cli_tables.print_json(data)
    else:
        cli_tables.show_stats(stats, db_size)
    return 0


def _file_size(path: Any) -> int | None:
    """A SQLite store's size on disk, its write-ahead log included; None for a server
    database (PostgreSQL)."""
    from pathlib import Path

    if path is None:
        return None
    files: Sequence[Path] = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
    return sum(f.stat().st_size for f in files if f.exists())


# --- where the answer comes from: the database, or a team server's tool


def _answer(
    args: argparse.Namespace,
    local: Callable[[AppContext], Awaitable[Shape]],
    tool: str,
    arguments: dict[str, Any],
    shape: type[Shape],
    create: bool = False,
) -> Shape:
    """`create`: a command that writes may create the store (the others never do)."""
    settings = settings_from(args)
    server = _team_server(args, settings)
    if server is None:
        from memory_mcp.app.root import run_with_app

        return run_with_app(settings, local, create=create)
    if settings.project is not None and tool in ("memory-search", "memory-list"):
        arguments = {**arguments, "project": settings.project}  # the command's --project
    return shape.model_validate(_ask_team_server(server, tool, arguments))


def _read_locally(
    args: argparse.Namespace, read: Callable[[Settings, argparse.Namespace], Shape | None]
) -> Shape | None:
    """`read`'s answer from a SQLite file on the standard library (app/reads.py), without
    opening the app; None with --url, or where those reads cannot serve the store."""
    settings = settings_from(args)
    if _team_server(args, settings) is not None:
        return None
    return read(settings, args)


def _show(args: argparse.Namespace, result: Shape, table: Callable[[Shape], None]) -> None:
    from memory_mcp.cli import tables as cli_tables

    if args.json:
        cli_tables.print_json(result)
    else:
        table(result)


def _team_server(args: argparse.Namespace, settings: Settings) -> tuple[str, str] | None:
    """(url, token) when `--url` asks a running team server instead of a database file;
    the token only from MEMORY_MCP_TOKEN or the settings file (a flag would show in ps)."""
    if getattr(args, "url", None) is None:
        return None
    return settings.team_server  # with a url and no token: refused, naming MEMORY_MCP_TOKEN


def _ask_team_server(server: tuple[str, str], tool: str, arguments: dict[str, Any]) -> Any:
    """One tool call on the team server, as the token's agent: its structured result."""
    from memory_mcp.app import team_client as team

    async def job(client: Any) -> dict[str, Any]:
        return await team.call(client, tool, arguments)

    return team.run_remote(server, job)
