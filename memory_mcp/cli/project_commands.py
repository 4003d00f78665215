"""`memory-mcp projects`: the projects of the store with their memories, and `projects move`:
memories moved into a project (for example the session summaries whose recorded `cwd`
lies in a repository), through MemoryService like every change, so the one decision is
asked for each (rules/permissions.py) and ids, versions and links are kept."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_mcp.cli.common import STORE, settings_from

if TYPE_CHECKING:
    import argparse

    from memory_mcp.app.context import AppContext
    from memory_mcp.models import MemoryRecord

SOURCES = ("manual", "task_completion", "session_summary", "file_index")


def add_commands(commands: Any, command: Any) -> None:
    """Register `projects` (and its `move`) with cli.build_parser's `_command`."""
    projects = command(
        commands,
        "projects",
        cmd_projects,
        STORE,
        help="list the projects with how many memories each holds (* holds everywhere)",
        description="The projects of the memories the agent may read, each with its count; "
        "`*` holds the memories read from every project. `projects move --to NAME` moves "
        "memories into a project.",
    )
    projects.add_argument(
        "verb",
        nargs="?",
        choices=("move",),
        help="move: move the memories every selector given picks (at least one) to the "
        "project --to, all or none, ids, versions and links kept",
    )
    projects.add_argument("--json", action="store_true", help="print JSON: {project: count}")
    move = projects.add_argument_group("move")
    move.add_argument("--to", help="the project to move them to (or *)")
    move.add_argument("--id", dest="ids", type=int, action="append", default=[], help="a memory id")
    move.add_argument("--key", dest="keys", action="append", default=[], help="a key")
    move.add_argument(
        "--tag", dest="tags", action="append", default=[], help="a tag (all must match)"
    )
    move.add_argument("--source", choices=SOURCES, help="memories from this source")
    move.add_argument(
        "--cwd-under",
        type=Path,
        help="session summaries whose recorded working folder (metadata cwd) is in PATH",
    )
    move.add_argument("--dry-run", action="store_true", help="only list what would move")


def cmd_projects(args: argparse.Namespace) -> int:
    from memory_mcp.app.root import run_with_app

    if args.verb == "move":
        return _move(args)
    from memory_mcp.cli import tables as cli_tables

    async def job(app: AppContext) -> tuple[dict[str, int], str | None]:
        return await app.service.tasks.project_counts(app.caller), app.caller.project

    counts, current = run_with_app(settings_from(args), job, create=False)
    if args.json:
        cli_tables.print_json(counts)
    else:
        cli_tables.show_projects(counts, current)
    return 0


def _move(args: argparse.Namespace) -> int:
    from memory_mcp.app.root import run_with_app
    from memory_mcp.errors import InvalidInputError

    if args.to is None:
        raise InvalidInputError("to", "give the project to move them to: --to NAME")
    if not (args.ids or args.keys or args.tags or args.source or args.cwd_under):
        raise InvalidInputError(
            "selector", "give at least one of --id, --key, --tag, --source, --cwd-under"
        )
    under = None if args.cwd_under is None else args.cwd_under.expanduser().resolve()

    async def job(app: AppContext) -> tuple[list[MemoryRecord], list[int]]:
        chosen = [
            record
            async for record in app.service.visible_records(app.caller, "*")
            if _selected(record, args, under)
        ]
        placed = await app.service.tasks.move_to_project(
            app.caller, chosen, args.to, dry_run=args.dry_run
        )
        return chosen, placed.moved

    chosen, moved = run_with_app(settings_from(args), job, create=False)
    verb = "would move" if args.dry_run else "moved"
    for record in chosen:
        if record.id in moved:
            print(f"{record.id}\t{record.project} -> {args.to}\t{record.key}")
    print(f"{verb} {len(moved)} memories to project {args.to}", file=sys.stderr)
    return 0


def _selected(record: MemoryRecord, args: argparse.Namespace, under: Path | None) -> bool:
    """Whether every selector given picks `record`."""
    if args.ids and record.id not in args.ids:
        return False
    if args.keys and record.key not in args.keys:
        return False
    if args.tags and not set(args.tags) <= set(record.tags):
        return False
    if args.source and record.source.value != args.source:
        return False
    if under is not None:
        cwd = record.metadata.get("cwd")
        if record.source.value != "session_summary" or not isinstance(cwd, str):
            return False
        try:
            Path(cwd).expanduser().resolve().relative_to(under)
        except (ValueError, OSError):
            return False
    return True
