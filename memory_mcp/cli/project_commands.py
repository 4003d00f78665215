"""`memory-mcp projects`: the projects of the store with their memories; `memory-mcp tasks`:
the tasks of the current project (ids, working and archived memories, writers); and
`projects move`:
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
        help="move: move the memories every selector given picks (at least one), in the "
        "current project or --from's, to the project --to; ids and links kept, the move "
        "a new version in each memory's history",
    )
    projects.add_argument("--json", action="store_true", help="print JSON: {project: count}")
    move = projects.add_argument_group("move")
    move.add_argument("--to", help="the project to move them to (or *)")
    move.add_argument(
        "--from",
        dest="from_project",
        help="the project to choose them in (or *); default: the current project "
        "(--project, or the git work tree's)",
    )
    move.add_argument(
        "--every-project",
        action="store_true",
        help="choose them in every project (the selectors reach every repository's memories)",
    )
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
    move.add_argument(
        "--all",
        dest="every_memory",
        action="store_true",
        help="every memory of the project it moves from (a project renamed: --from OLD)",
    )
    move.add_argument("--dry-run", action="store_true", help="only list what would move")

    tasks = command(
        commands,
        "tasks",
        cmd_tasks,
        STORE,
        help="list the tasks of the current project: working and archived memories, writers",
        description="Each task id of the current project (--project, or the git work tree's; "
        "outside any, every project) with its working memories, its archived ones (a "
        "completed task's: memory-search/memory-list find them with include_archived) and "
        "the agents that wrote in it.",
    )
    tasks.add_argument("--agent", help="only the tasks this agent wrote in")
    tasks.add_argument("--json", action="store_true", help="print JSON: a list of tasks")


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
    for line in left_behind(counts, current):
        print(line, file=sys.stderr)
    return 0


def left_behind(counts: dict[str, int], current: str | None) -> list[str]:
    """Memories under a name this work tree had before (without an origin remote, or
    without the remote's host): a line for each, with the command that moves them (they
    are out of this project's sight)."""
    from memory_mcp.rules.projects import earlier_names, project_of_work_tree, work_tree_of

    tree = work_tree_of(Path.cwd())
    if tree is None or current is None or current != project_of_work_tree(tree):
        return []  # no work tree, or a project named by a setting
    return [
        f"{counts[earlier]} memories are in project {earlier}, this work tree's name {why}: "
        f"memory-mcp projects move --from {earlier} --to {current} --all"
        for earlier, why in earlier_names(tree)
        if counts.get(earlier)
    ]


def cmd_tasks(args: argparse.Namespace) -> int:
    import json

    from memory_mcp.app.root import run_with_app

    async def job(app: AppContext) -> list[dict[str, Any]]:
        tasks: dict[tuple[str, str], dict[str, Any]] = {}
        async for record in app.service.visible_records(app.caller):
            if record.task is None:
                continue
            entry = tasks.setdefault(
                (record.project, record.task),
                {
                    "project": record.project,
                    "task": record.task,
                    "working": 0,
                    "archived": 0,
                    "agents": set(),
                },  # fmt: skip
            )
            entry["archived" if record.archived_at is not None else "working"] += 1
            entry["agents"] |= {record.agent_id, record.updated_by}
        found = [
            {**entry, "agents": sorted(entry["agents"])}
            for _, entry in sorted(tasks.items())
            if args.agent is None or args.agent in entry["agents"]
        ]
        return found

    found = run_with_app(settings_from(args), job, create=False)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    from memory_mcp.checks.text_safety import strip_terminal_controls as shown

    for entry in found:  # ids and names are the writers' text: shown inert
        print(
            f"{shown(entry['task'])}\t{shown(entry['project'])}\t{entry['working']} working\t"
            f"{entry['archived']} archived\t{shown(', '.join(entry['agents']))}"
        )
    if not found:
        print("no tasks", file=sys.stderr)
    return 0


def _move(args: argparse.Namespace) -> int:
    from memory_mcp.app.root import run_with_app
    from memory_mcp.errors import InvalidInputError

    if args.to is None:
        raise InvalidInputError("to", "give the project to move them to: --to NAME")
    if not (args.ids or args.keys or args.tags or args.source or args.cwd_under):
        if not args.every_memory:
            raise InvalidInputError(
                "selector", "give at least one of --id, --key, --tag, --source, --cwd-under, --all"
            )
    if args.every_project and args.from_project is not None:
        raise InvalidInputError("from", "give --from NAME or --every-project, not both")
    under = None if args.cwd_under is None else args.cwd_under.expanduser().resolve()

    async def job(app: AppContext) -> tuple[list[MemoryRecord], list[int], str]:
        source = _source_project(args, app.caller.project)
        matching = [
            record
            async for record in app.service.visible_records(app.caller, "*")
            if _selected(record, args, under)
        ]
        chosen = [r for r in matching if source is None or r.project == source]
        if not chosen and matching:
            raise InvalidInputError("from", _elsewhere(matching, source))
        placed = await app.service.tasks.move_to_project(
            app.caller, chosen, args.to, dry_run=args.dry_run
        )
        return chosen, placed.moved, "every project" if source is None else f"project {source}"

    chosen, moved, where = run_with_app(settings_from(args), job, create=False)
    verb = "would move" if args.dry_run else "moved"
    for record in chosen:
        if record.id in moved:
            print(f"{record.id}\t{record.project} -> {args.to}\t{record.key}")
    print(f"{verb} {len(moved)} memories of {where} to project {args.to}", file=sys.stderr)
    return 0


def _source_project(args: argparse.Namespace, current: str | None) -> str | None:
    """The one project a move chooses in (None: every project, asked for by name or
    implied by ids alone, which are explicit). A selector run outside any project with
    neither `--from` nor `--every-project` is refused: it would reach every repository."""
    from memory_mcp.errors import InvalidInputError
    from memory_mcp.rules.projects import ProjectNameError, check_project

    if args.every_project:
        return None
    if args.from_project is not None:
        try:
            return check_project(args.from_project.strip())
        except ProjectNameError as exc:
            raise InvalidInputError("from", str(exc)) from None
    only_ids = not (args.keys or args.tags or args.source or args.cwd_under or args.every_memory)
    if only_ids:
        return None
    if current is None:
        raise InvalidInputError(
            "from",
            "this folder is in no project, so --key/--tag/--source/--cwd-under/--all would choose "
            "in every project: name the one to move from (--from NAME, or --from '*'), or "
            "say --every-project",
        )
    return current


def _elsewhere(matching: list[MemoryRecord], source: str | None) -> str:
    """Why nothing was chosen though the selectors match: the projects that hold them."""
    counts: dict[str, int] = {}
    for record in matching:
        counts[record.project] = counts.get(record.project, 0) + 1
    held = ", ".join(f"{count} in {project!r}" for project, count in sorted(counts.items()))
    return (
        f"nothing in project {source!r} matches; {held} do: name that project with --from "
        "(or --every-project)"
    )


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
