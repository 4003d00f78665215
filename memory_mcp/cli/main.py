"""`memory-mcp`: serve, import, export, purge, index, context, hook, doctor, model, and
for people search, get, list, history, delete, stats (cli/browse.py), projects
(cli/project_commands.py).
Errors become one line on stderr and exit 1 (a hook always exits 0).

Every command is registered in `build_parser` the same way: `_command(...)` adds the
subparser, its settings flags (derived from `Settings.model_fields`) and its handler
(`set_defaults(handler=...)`), then the command's own arguments. A handler takes the
parsed arguments and returns the exit code; the ones that need the store run their work
through `run_with_app`. Imports of the store, the model and the MCP SDK happen inside
the handlers, and `--version` is answered before the parser (and pydantic) is built.
The benchmarks are no command of the installed package: they are a project of their own in
a clone (bench/, `make bench`). Over 500 lines: the one parser every command is declared
in; what a command does at length lives in its own module (cli/browse.py, cli/imports.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memory_mcp import __version__
from memory_mcp.cli.common import (
    ALL,
    LIMITS,
    MODEL,
    NOTE_LIMITS,
    NOTES,
    STORE,
    add_setting_flags,
    flag_overrides,
    settings_from,
    whole_store_unless_named,
)
from memory_mcp.cli.launch import cmd_hook, cmd_serve, cmd_ui
from memory_mcp.limits import (
    BLOCK_ITEMS_MAX,
    BLOCK_TOKENS_MAX,
    DEFAULT_BLOCK_TOKENS,
    MAX_BLOCK_ITEMS,
    MODEL_WAIT_SECONDS,
)

if TYPE_CHECKING:
    import argparse

    from memory_mcp.app.context import AppContext

T = TypeVar("T")
Handler = Callable[["argparse.Namespace"], int]

SERVERS = ("serve", "ui")  # they log at INFO without -v
# importers.FORMATS' names (not imported: the readers pull in pydantic)
IMPORT_FORMATS = ("jsonl", "memory-json", "mcp-memory-service")


def serve_flags(argv: list[str]) -> dict[str, Any]:
    """The settings that `memory-mcp serve ARGV` would take from its flags."""
    return flag_overrides(build_parser().parse_args(["serve", *argv]))


# --- the commands' handlers (the bigger ones live in cli/note_commands.py, imports.py,
# doctor.py, model_commands.py, imported when the command runs)


def cmd_import(args: argparse.Namespace) -> int:
    from memory_mcp.cli import imports as cli_import

    foreign = args.file_format != "jsonl"
    if args.scope is not None and not foreign:
        print(
            "memory-mcp: --scope is for --from memory-json or mcp-memory-service (each JSONL "
            "line names its own scope)",
            file=sys.stderr,
        )
        return 2
    chosen = (args.skip_invalid, args.file_format, args.scope or "agent", args.keep_owners)
    return cli_import.cmd_import(settings_from(args), args.file, *chosen)


def cmd_export(args: argparse.Namespace) -> int:
    from memory_mcp.transfer.jsonl import export_lines

    if args.everyone and args.agent_id is not None:
        print("memory-mcp: export takes --all or --agent-id, not both", file=sys.stderr)
        return 2
    output: Path | None = args.output
    everyone: bool = args.everyone
    if args.to == "memory-json":
        if everyone:
            print(
                "memory-mcp: --to memory-json writes one agent's graph: not with --all",
                file=sys.stderr,
            )
            return 2
        from memory_mcp.app.root import run_with_app

        return run_with_app(
            settings_from(args), lambda app: _export_graph(app, args.scope, output), create=False
        )

    settings = settings_from(args)

    async def job(app: AppContext) -> int:
        service = app.service
        project = whole_store_unless_named(settings)
        records = (
            service.all_records() if everyone else service.visible_records(app.caller, project)
        )
        if output is None:
            count = await export_lines(records)
        else:
            with output.open("w", encoding="utf-8") as handle:
                count = await export_lines(records, handle)
        noun = "memory" if count == 1 else "memories"
        whose = "of every agent" if everyone else f"that agent {app.caller.agent_id!r} may see"
        # A backup of the whole store by default, even inside a repository whose list and
        # search show its project: said, so nobody takes it for this project's alone.
        where = "in every project" if project == "*" else f"in project {project} and *"
        hint = " (--project NAME: one project's)" if project == "*" and not everyone else ""
        print(f"exported {count} {noun} {whose}, {where}{hint}", file=sys.stderr)
        return 0

    from memory_mcp.app.root import run_with_app

    return run_with_app(settings, job, create=False)  # reading never creates one


async def _export_graph(app: AppContext, scope: str, output: Path | None) -> int:
    """The entities and relations `app.caller` may see in `scope`, in the reference
    knowledge-graph server's file format (it loads the file as its memory.jsonl)."""
    from memory_mcp.graph.profile import KnowledgeGraph
    from memory_mcp.models import Scope

    graph = await KnowledgeGraph(app.service, app.caller, Scope(scope)).read_graph()
    text = "\n".join(graph.file_lines())
    if output is None:
        print(text)
    else:
        output.write_text(text + "\n", encoding="utf-8")
    print(
        f"exported {len(graph.entities)} entities and {len(graph.relations)} relations "
        f"({scope} scope) as memory-json",
        file=sys.stderr,
    )
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    async def job(app: AppContext) -> int:
        purged = await app.service.purge_expired()
        print(f"purged {purged} expired memories", file=sys.stderr)
        return 0

    from memory_mcp.app.root import run_with_app

    return run_with_app(settings_from(args), job)


def cmd_index(args: argparse.Namespace) -> int:
    from memory_mcp.cli import note_commands as cli_notes

    return cli_notes.cmd_index(settings_from(args), args.path)


def cmd_context(args: argparse.Namespace) -> int:
    from memory_mcp.cli import note_commands as cli_notes

    return cli_notes.cmd_context(settings_from(args), args.query, args.limit, args.max_tokens)


def cmd_doctor(args: argparse.Namespace) -> int:
    from memory_mcp.cli import doctor as cli_doctor

    return cli_doctor.run(flag_overrides(args), args.mcp_config, args.hooks_config, serve_flags)


def cmd_model(args: argparse.Namespace) -> int:
    from memory_mcp.cli import model_commands as cli_model

    return cli_model.run(args, settings_from(args))


def cmd_token(args: argparse.Namespace) -> int:
    from memory_mcp.cli import token_commands as cli_token

    return cli_token.run(args, settings_from(args))


def cmd_copy(args: argparse.Namespace) -> int:
    from memory_mcp.cli import copy as cli_copy

    return cli_copy.run(args)


def cmd_setup(args: argparse.Namespace) -> int:
    from memory_mcp.cli import client_setup

    return client_setup.run(args)


def _whole_number(text: str, most: int) -> int:
    import argparse

    try:
        number = int(text)
    except ValueError:
        number = 0
    if not 1 <= number <= most:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from 1 to {most}")
    return number


def context_limit(text: str) -> int:
    return _whole_number(text, BLOCK_ITEMS_MAX)


def context_tokens(text: str) -> int:
    return _whole_number(text, BLOCK_TOKENS_MAX)


# --- registration


def _command(
    commands: Any,
    name: str,
    handler: Handler,
    settings: Sequence[str] | None = (),
    **parser_options: Any,
) -> argparse.ArgumentParser:
    """Add one command: its parser, its settings flags and its handler."""
    parser: argparse.ArgumentParser = commands.add_parser(name, **parser_options)
    parser.set_defaults(handler=handler)
    if name != "hook":  # a hook logs nothing
        parser.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            help="log what happens on stderr (the servers always do)",
        )
    if settings is None or settings:
        add_setting_flags(parser, settings)
    return parser


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="memory-mcp", description="A durable, searchable memory for AI agents (MCP)."
    )
    parser.add_argument("--version", action="version", version=f"memory-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    _command(commands, "serve", cmd_serve, ALL, help="run the MCP server (stdio)")

    imp = _command(
        commands,
        "import",
        cmd_import,
        STORE + MODEL + LIMITS,  # the rest from env and the settings file, as always
        help="import memories from a JSONL export or another memory server's file",
    )
    imp.add_argument("file", type=Path)
    imp.add_argument(
        "--from",
        dest="file_format",
        choices=IMPORT_FORMATS,
        default="jsonl",
        help="the file's format: jsonl (memory-mcp export, the default), memory-json (the "
        "reference MCP memory server's memory.json: entities and relations) or "
        "mcp-memory-service (its JSON export)",
    )
    imp.add_argument(
        "--scope",
        choices=("agent", "swarm", "session"),
        help="scope of the memories a memory-json or mcp-memory-service file makes "
        "(default agent: the importing agent's own)",
    )
    imp.add_argument(
        "--skip-invalid",
        action="store_true",
        help="store the valid lines and skip the bad ones (still listed on stderr; exit 0). "
        "Without it one bad line means nothing is stored (exit 1)",
    )
    imp.add_argument(
        "--keep-owners",
        action="store_true",
        help="keep the owner each line names (agent_id), as in `export --all`: restoring "
        "or moving a whole store. Without it the memories are the importing agent's "
        "(--agent-id): another agent's swarm memories are left out (counted) and its "
        "private ones are bad lines",
    )

    exp = _command(
        commands,
        "export",
        cmd_export,
        STORE,
        help="write the memories an agent may see as JSONL",
        description="Write, one JSON line each, the memories the agent (--agent-id, "
        "--session-id) may see: its own of every scope and every swarm memory, the same "
        "rules as the tools. --all writes every agent's memories instead.",
    )
    exp.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    exp.add_argument(
        "--to",
        choices=("jsonl", "memory-json"),
        default="jsonl",
        help="jsonl (the default: every memory, for import) or memory-json (the knowledge "
        "graph of one scope, entities and relations, as the reference memory server's file)",
    )
    exp.add_argument(
        "--scope",
        choices=("agent", "session", "swarm"),
        default="agent",
        help="with --to memory-json: the graph's scope (as import --from memory-json --scope)",
    )
    exp.add_argument(
        "--all",
        dest="everyone",
        action="store_true",
        help="an operator's command: every memory of every agent, private ones included "
        "(not with --agent-id)",
    )

    _command(commands, "purge", cmd_purge, STORE, help="delete expired memories now")

    index = _command(
        commands,
        "index",
        cmd_index,
        STORE + NOTES + NOTE_LIMITS,
        help="index one note now (or remove it if it is gone), or reconcile a folder",
    )
    index.add_argument("path", type=Path, help="a note inside a memory folder, or the folder")

    context = _command(
        commands,
        "context",
        cmd_context,
        STORE + NOTES + MODEL,
        help="print the <memories> block a session starts with",
    )
    context.add_argument(
        "--query",
        "-q",
        help="the memories best matching this (by words and by meaning), instead. Loads the "
        f"embedding model first: a few seconds, at most {MODEL_WAIT_SECONDS:g} s, after which "
        "it searches by words only and says so",
    )
    context.add_argument(
        "--limit",
        type=context_limit,
        help=f"at most this many memories (1-{BLOCK_ITEMS_MAX}; default the setting "
        f"context_max_items, {MAX_BLOCK_ITEMS})",
    )
    context.add_argument(
        "--max-tokens",
        type=context_tokens,
        help="the block's budget in tokens, filled with whole memories by priority; those "
        "that did not fit are named in a <more> line (default the setting "
        f"context_max_tokens, {DEFAULT_BLOCK_TOKENS:,})",
    )

    from memory_mcp.cli import browse as cli_browse  # search, get, list, history, delete, stats

    cli_browse.add_commands(commands, _command)

    from memory_mcp.cli import project_commands as cli_projects  # projects, projects move

    cli_projects.add_commands(commands, _command)

    from memory_mcp.cli import trust_commands as cli_trust  # decay, quarantine

    cli_trust.add_commands(commands, _command)

    hook = _command(
        commands,
        "hook",
        cmd_hook,
        help="run a Claude Code hook (JSON on stdin); see hooks/ and the README",
    )
    hook.add_argument(
        "event",
        help="post-tool-use, session-start, user-prompt, session-end, pre-compact or stop",
    )

    doctor = _command(
        commands,
        "doctor",
        cmd_doctor,
        ALL,
        help="show the server's and the hooks' effective configuration, check the store "
        "and the model, flag mismatches (reads only)",
    )
    doctor.add_argument(
        "--hooks-config",
        type=Path,
        help="a Claude Code settings file with the hooks: use the MEMORY_MCP_* variables "
        "its hook commands set (default: ./.claude/settings.json, else "
        "~/.claude/settings.json, when present)",
    )
    doctor.add_argument(
        "--mcp-config",
        type=Path,
        help="an MCP client config (.mcp.json, claude_desktop_config.json): use the flags "
        "and env it gives the memory server (default: ./.mcp.json when present)",
    )

    token = _command(commands, "token", cmd_token, help="bearer tokens for the HTTP transports")
    from memory_mcp.cli import token_commands as cli_token

    cli_token.add_arguments(token)

    ui = _command(
        commands,
        "ui",
        cmd_ui,
        ("db", "data_dir", "host", "allowed_hosts", *MODEL),
        help="a read-only web view of the memories, for the agent of a token (browse, search)",
        description="Serve the web view at http://HOST:PORT/ui/ (127.0.0.1 by default; "
        "beyond loopback only once the store has a token). Each page shows what the agent "
        "of the token given (Authorization header, or the login form) may see.",
    )
    ui.add_argument("--port", type=int, default=8766, help="port (default 8766)")

    copy = _command(
        commands,
        "copy",
        cmd_copy,
        help="copy a whole store to another database (SQLite <-> PostgreSQL)",
        description="Copy every memory, version, history entry, vector and token of one "
        "store into another (a SQLite file or a postgresql+asyncpg:// URL), in one "
        "transaction, and check every table's count. The target must be empty unless "
        "--replace is given.",
    )
    from memory_mcp.cli import copy as cli_copy

    cli_copy.add_arguments(copy)

    setup = _command(
        commands,
        "setup",
        cmd_setup,
        help="connect Claude Code, Claude Desktop, Cursor, VS Code or Codex: write its MCP "
        "config (and Claude Code's hooks) with this install's paths, and the settings file",
    )
    from memory_mcp.cli import client_setup

    client_setup.add_arguments(setup)

    model = _command(
        commands,
        "model",
        cmd_model,
        ("data_dir", "model_dir"),
        help="check the embedding model's graph (or build one from the weights)",
    )
    kinds = model.add_subparsers(dest="model_command", required=True)
    prepare = kinds.add_parser(
        "prepare",
        help="check the bundled all-MiniLM-L6-v2 graph; with --model-dir, build one there "
        "from the weights unless already done",
    )
    prepare.add_argument(
        "--force", action="store_true", help="build the graph from the weights even if present"
    )
    return parser


def _setup_logging(verbose: bool) -> None:
    """The servers log what they do (INFO); the other commands print their own answers and
    log only warnings and errors unless -v (no "model loaded" or httpx request lines)."""
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("torch").setLevel(logging.WARNING)  # its exit-time cache statistics


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:  # without building the parser: no pydantic to import
        print(f"memory-mcp {__version__}")
        return 0
    args = build_parser().parse_args(argv)
    if args.command == "hook":  # before anything that could exit non-zero: hooks exit 0
        return int(args.handler(args))
    _setup_logging(args.command in SERVERS or args.verbose)
    from pydantic import ValidationError

    from memory_mcp.errors import MemoryMcpError

    try:
        return int(args.handler(args))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        print(f"memory-mcp: bad configuration: {problems}", file=sys.stderr)
        return 2
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
