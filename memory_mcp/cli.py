"""`memory-mcp`: serve, import, export, purge, index, context, hook, doctor, bench, model,
and for people search, get, list, history, delete, stats (cli_browse).
Errors become one line on stderr and exit 1 (a hook always exits 0).

Every command is registered in `build_parser` the same way: `_command(...)` adds the
subparser, its settings flags (derived from `Settings.model_fields`) and its handler
(`set_defaults(handler=...)`), then the command's own arguments. A handler takes the
parsed arguments and returns the exit code; the ones that need the store run their work
through `run_with_app`. Imports of the store, the model and the MCP SDK happen inside
the handlers, and `--version` is answered before the parser (and pydantic) is built."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memory_mcp import __version__

if TYPE_CHECKING:
    import argparse

    from memory_mcp.app import AppContext
    from memory_mcp.settings import Settings

T = TypeVar("T")
Handler = Callable[["argparse.Namespace"], int]

REPO_ROOT = Path(__file__).resolve().parent.parent  # bench/ lies here in a clone

# Which settings each command takes as flags (each also has a MEMORY_MCP_* variable and a
# settings-file key). ALL (None) is every field of Settings: serve, import and doctor,
# whose behaviour any setting can change.
STORE = ("db", "data_dir", "agent_id", "role", "session_id")
NOTES = ("memory_dir", "shared_memory_dir")
NOTE_LIMITS = ("note_max_bytes", "note_max_chunks", "note_allow_hardlinks")
MODEL = ("embedder", "model_dir")
ALL = None
# The hooks' team-server settings are not flags: the hooks get none, and a token on a
# command line shows in `ps` (MEMORY_MCP_URL / MEMORY_MCP_TOKEN, or the settings file).
NOT_FLAGS = ("url", "token")

# importers.FORMATS' names (not imported: the readers pull in pydantic)
IMPORT_FORMATS = ("jsonl", "memory-json", "mcp-memory-service")
MAX_BLOCK_ITEMS = 12  # memories_block.MAX_ITEMS (not imported: it pulls in the service)
MODEL_WAIT_SECONDS = 60.0  # `context --query`: the model loads in ~5-15 s here

# Help for the flags a person reaches for most; the others say which variable they set.
FLAG_HELP = {
    "db": "SQLite file or SQLAlchemy URL",
    "agent_id": "this agent's id",
    "session_id": "default: a new id per process",
    "data_dir": "where the default store and the model export live "
    "(default $XDG_DATA_HOME/memory-mcp)",
    "memory_dir": "personal notes folder, indexed for this agent (default "
    "/workspace/personal/memory if it exists, else <data dir>/memory; a team server "
    "indexes none unless named)",
    "shared_memory_dir": "shared notes folder, indexed for every agent",
    "watch": "watch and index the memory folders (--no-watch: do not)",
    "embedder": "embedding runtime (default onnx)",
    "model_dir": "where the ONNX export lives (default <venv>/share/memory-mcp)",
    "transport": "default stdio (one agent); the HTTP transports serve many agents, each "
    "with a token (`memory-mcp token add`)",
    "host": "HTTP: address to listen on (default 127.0.0.1)",
    "port": "HTTP: port (default 8765)",
    "allowed_hosts": "HTTP: host names clients use, for the Host/Origin check "
    '(env as JSON: \'["a","b"]\')',
}


def _flag_kind(annotation: Any) -> dict[str, Any]:
    """argparse keywords for a Settings field's type: choices for a Literal or an enum,
    --x/--no-x for a bool, else a converter (pydantic validates the value afterwards)."""
    import enum
    import types
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]  # X | None
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is typing.Literal:
        return {"choices": list(typing.get_args(annotation))}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"choices": [member.value for member in annotation]}
    if annotation is bool:
        import argparse

        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(annotation) is list:
        return {"nargs": "+"}
    if annotation in (int, float, Path):
        return {"type": annotation, "metavar": annotation.__name__.upper()}
    return {}


def add_setting_flags(parser: argparse.ArgumentParser, names: Sequence[str] | None) -> None:
    """One flag per setting (`--agent-id` for agent_id); default None = not given, so env,
    the settings file and the defaults still apply."""
    from memory_mcp.settings import ENV_PREFIX, Settings

    group = parser.add_argument_group("settings (flags > MEMORY_MCP_* env > settings file)")
    every = [name for name in Settings.model_fields if name not in NOT_FLAGS]
    for name in names if names is not None else every:
        field = Settings.model_fields[name]
        env = f"env {ENV_PREFIX}{name.upper()}"
        about = FLAG_HELP.get(name) or field.description
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            default=None,
            help=f"{about} ({env})" if about else env,
            **_flag_kind(field.annotation),
        )


def flag_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (they win over env and the settings file)."""
    from memory_mcp.settings import Settings

    given = ((name, getattr(args, name, None)) for name in Settings.model_fields)
    return {name: value for name, value in given if value is not None}


def settings_from(args: argparse.Namespace) -> Settings:
    from memory_mcp.settings import Settings

    return Settings(**flag_overrides(args))


def serve_flags(argv: list[str]) -> dict[str, Any]:
    """The settings that `memory-mcp serve ARGV` would take from its flags."""
    return flag_overrides(build_parser().parse_args(["serve", *argv]))


def run_with_app(
    settings: Settings,
    job: Callable[[AppContext], Awaitable[T]],
    background: bool = False,
    create: bool = True,
) -> T:
    """Open the app (store, service, caller) for one command, run `job`, close it."""
    import anyio

    from memory_mcp.app import open_app

    async def runner() -> T:
        async with open_app(settings, background=background, create=create) as app:
            return await job(app)

    return anyio.run(runner)


# --- the commands' handlers (the bigger ones live in cli_notes, cli_import, cli_doctor,
# cli_model and bench/, imported when the command runs)


def cmd_serve(args: argparse.Namespace) -> int:
    import logging

    import anyio

    settings = settings_from(args)
    if settings.transport != "stdio":
        from memory_mcp.http_server import serve_http

        try:
            anyio.run(serve_http, settings)
        except KeyboardInterrupt:
            return 130
        return 0
    from memory_mcp.app_opening import HandshakeGate
    from memory_mcp.mcp_server import build_server, serve_stdio
    from memory_mcp.startup_check import check_store_opens

    logging.getLogger("memory_mcp").info(
        "memory-mcp %s serving agent %r (%s), session %s, store %s",
        __version__,
        settings.agent_id,
        settings.role.value,
        settings.session_id,
        settings.database_url,
    )
    check_store_opens(settings)  # a bad --db is one line on stderr, not a crash
    handshake = HandshakeGate()  # the store opens once the client has its answer
    try:
        anyio.run(serve_stdio, build_server(settings, handshake=handshake), handshake)
    except KeyboardInterrupt:  # Ctrl-C: everything has been closed by now
        logging.getLogger("memory_mcp").info("stopped (Ctrl-C)")
        return 130
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from memory_mcp import cli_import

    foreign = args.file_format != "jsonl"
    if args.scope is not None and not foreign:
        print(
            "memory-mcp: --scope is for --from memory-json or mcp-memory-service (each JSONL "
            "line names its own scope)",
            file=sys.stderr,
        )
        return 2
    return cli_import.cmd_import(
        settings_from(args), args.file, args.skip_invalid, args.file_format, args.scope or "agent"
    )


def cmd_export(args: argparse.Namespace) -> int:
    from memory_mcp.jsonl import export_lines

    if args.everyone and args.agent_id is not None:
        print("memory-mcp: export takes --all or --agent-id, not both", file=sys.stderr)
        return 2
    output: Path | None = args.output
    everyone: bool = args.everyone

    async def job(app: AppContext) -> int:
        service = app.service
        records = service.all_records() if everyone else service.visible_records(app.caller)
        if output is None:
            count = await export_lines(records)
        else:
            with output.open("w", encoding="utf-8") as handle:
                count = await export_lines(records, handle)
        whose = "every agent's" if everyone else f"agent {app.caller.agent_id!r}'s visible"
        print(f"exported {count} memories ({whose})", file=sys.stderr)
        return 0

    return run_with_app(settings_from(args), job, create=False)  # reading never creates one


def cmd_purge(args: argparse.Namespace) -> int:
    async def job(app: AppContext) -> int:
        purged = await app.service.purge_expired()
        print(f"purged {purged} expired memories", file=sys.stderr)
        return 0

    return run_with_app(settings_from(args), job)


def cmd_index(args: argparse.Namespace) -> int:
    from memory_mcp import cli_notes

    return cli_notes.cmd_index(settings_from(args), args.path)


def cmd_context(args: argparse.Namespace) -> int:
    from memory_mcp import cli_notes

    return cli_notes.cmd_context(settings_from(args), args.query, args.limit)


def cmd_hook(args: argparse.Namespace) -> int:
    from memory_mcp.hooks.runner import main

    return main([args.event])


def cmd_doctor(args: argparse.Namespace) -> int:
    from memory_mcp import cli_doctor

    return cli_doctor.run(flag_overrides(args), args.mcp_config, args.hooks_config, serve_flags)


def cmd_model(args: argparse.Namespace) -> int:
    from memory_mcp import cli_model

    return cli_model.run(args, settings_from(args))


def cmd_token(args: argparse.Namespace) -> int:
    from memory_mcp import cli_token

    return cli_token.run(args, settings_from(args))


def cmd_ui(args: argparse.Namespace) -> int:
    import anyio

    from memory_mcp.web.server import serve_ui

    try:
        anyio.run(serve_ui, settings_from(args), args.port)
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_copy(args: argparse.Namespace) -> int:
    from memory_mcp import cli_copy

    return cli_copy.run(args)


def cmd_bench(args: argparse.Namespace) -> int:
    """Its own stores in temporary or --workdir folders, its own settings (bench/)."""
    if not hasattr(args, "bench"):
        print(
            "memory-mcp: the benchmarks are not installed with the package; run them from a "
            "clone of the repository (bench/, see bench/README.md)",
            file=sys.stderr,
        )
        return 2
    from bench import command

    return command.run(args)


def context_limit(text: str) -> int:
    import argparse

    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_BLOCK_ITEMS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number from 1 to {MAX_BLOCK_ITEMS}"
        )
    return limit


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
        ALL,
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
        default=MAX_BLOCK_ITEMS,
        help=f"at most this many memories (1-{MAX_BLOCK_ITEMS}, default {MAX_BLOCK_ITEMS})",
    )

    from memory_mcp import cli_browse  # search, get, list, history, delete, stats

    cli_browse.add_commands(commands, _command)

    hook = _command(
        commands,
        "hook",
        cmd_hook,
        help="run a Claude Code hook (JSON on stdin); see hooks/ and the README",
    )
    hook.add_argument("event", help="post-tool-use, session-start, session-end or stop")

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
    from memory_mcp import cli_token

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
    from memory_mcp import cli_copy

    cli_copy.add_arguments(copy)

    bench = _command(
        commands, "bench", cmd_bench, help="measure retrieval quality and search latency"
    )
    if (REPO_ROOT / "bench" / "command.py").is_file():  # a clone, installed editable
        if str(REPO_ROOT) not in sys.path:
            sys.path.insert(0, str(REPO_ROOT))
        from bench import command

        command.add_arguments(bench)

    model = _command(
        commands,
        "model",
        cmd_model,
        ("data_dir", "model_dir"),
        help="prepare the embedding model (ONNX export)",
    )
    kinds = model.add_subparsers(dest="model_command", required=True)
    prepare = kinds.add_parser(
        "prepare", help="export the bundled all-MiniLM-L6-v2 to ONNX unless already done"
    )
    prepare.add_argument("--force", action="store_true", help="export again even if present")
    return parser


def _setup_logging() -> None:
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
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
    _setup_logging()
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
