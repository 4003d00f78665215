"""`memory-mcp search | get | list | history | delete | stats`: what the agents remember,
for a person (tables) or a script (`--json`: the MCP tools' result shapes).

Each command acts as one agent, as `serve` does (--agent-id, --role, --session-id, or the
MEMORY_MCP_* variables and the settings file), and goes through MemoryService: it sees,
and may delete, exactly what that agent's tools would. Reading commands never create a
store. Loading this module imports nothing heavy (the handlers do), so `memory-mcp
--version` and the parser stay fast."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memory_mcp.cli import MODEL, MODEL_WAIT_SECONDS, STORE, run_with_app, settings_from

if TYPE_CHECKING:
    import argparse

    from memory_mcp.app import AppContext

AddCommand = Callable[..., "argparse.ArgumentParser"]

SCOPES = ("all", "session", "agent", "swarm", "global")
SOURCES = ("manual", "task_completion", "session_summary", "file_index")
SEARCH_LIMIT = (1, 50)  # validation.MAX_SEARCH_LIMIT (not imported: it pulls in pydantic)


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
        "--limit", "-n", type=_limit, default=10, help="how many results, 1-50 (default 10)"
    )
    search.add_argument("--scope", choices=SCOPES, default="all", help="default: all")
    search.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=[],
        help="only memories with this tag (repeat for several: all must match)",
    )
    search.add_argument("--source", choices=SOURCES, help="only memories from this source")
    search.add_argument(
        "--include-expired", action="store_true", help="also expired (not yet purged) ones"
    )
    _json_flag(search)

    get = command(commands, "get", cmd_get, STORE, help="show one memory whole, as memory-get does")
    get.add_argument("id", type=int, help="the memory's id (from search or list)")
    _json_flag(get)

    delete = command(
        commands,
        "delete",
        cmd_delete,
        STORE,
        help="delete one memory (the agent's own; the lead also swarm memories)",
    )
    delete.add_argument("id", type=int, help="the memory's id")
    _json_flag(delete)

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


def _limit(text: str) -> int:
    import argparse

    low, high = SEARCH_LIMIT
    if not (text.isdigit() and low <= int(text) <= high):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
    return int(text)


# --- handlers


def cmd_search(args: argparse.Namespace) -> int:
    from memory_mcp import cli_tables
    from memory_mcp import validation as v
    from memory_mcp.models import Source
    from memory_mcp.tool_results import SearchHit, SearchResults

    scope = v.parse_scope(args.scope, allow_all=True)
    source = v.parse_source(args.source, tuple(Source)) if args.source else None

    async def job(app: AppContext) -> SearchResults:
        await _wait_for_model(app)
        result = await app.service.search(
            app.caller, args.query, args.limit, scope, args.tags, source, args.include_expired
        )
        max_chars = app.settings.search_value_chars
        return SearchResults(
            results=[SearchHit.of(h.record, h.score, h.matched_by, max_chars) for h in result.hits],
            semantic=result.semantic,
            notices=result.notices or None,
        )

    results = run_with_app(settings_from(args), job, create=False)
    if args.json:
        cli_tables.print_json(results)
    else:
        cli_tables.show_search(results)
    return 0


async def _wait_for_model(app: AppContext) -> None:
    """Give the model its time to load (bounded), as `context --query` does: a person
    waits a few seconds once rather than getting a words-only answer."""
    import anyio

    from memory_mcp.embeddings import EmbeddingUnavailableError

    try:
        with anyio.move_on_after(MODEL_WAIT_SECONDS):
            await app.service.embedder.wait_ready()
    except EmbeddingUnavailableError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)


def cmd_get(args: argparse.Namespace) -> int:
    from memory_mcp import cli_tables
    from memory_mcp.tool_results import Memory

    async def job(app: AppContext) -> Memory:
        # A read counts as memory-get's does (the shown count includes it): written now,
        # as this process has no background worker to write it later.
        record = await app.service.get(app.caller, args.id)
        await app.service.flush_accesses()
        return Memory.of(record, expired=app.service.is_expired(record))

    memory = run_with_app(settings_from(args), job, create=False)
    if args.json:
        cli_tables.print_json(memory)
    else:
        cli_tables.show_memory(memory)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from memory_mcp import cli_tables
    from memory_mcp.tool_results import DeleteResult

    async def job(app: AppContext) -> DeleteResult:
        return DeleteResult(deleted=True, id=await app.service.delete(app.caller, args.id))

    result = run_with_app(settings_from(args), job, create=False)
    if args.json:
        cli_tables.print_json(result)
    else:
        print(f"deleted memory {result.id}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    import dataclasses

    from memory_mcp import cli_tables
    from memory_mcp.memory_stats import VisibleStats, visible_stats

    settings = settings_from(args)

    async def job(app: AppContext) -> VisibleStats:
        return await visible_stats(app.service, app.caller)

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
