"""`memory-mcp`: serve, import, export, purge, index, context, hook. Errors become one line
on stderr and exit 1 (a hook always exits 0)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from memory_mcp import __version__, cli_doctor, cli_model, cli_notes, cli_token
from memory_mcp.errors import MemoryMcpError
from memory_mcp.settings import Settings

if TYPE_CHECKING:  # imported where used: `--version` and hooks load no store, model or SDK
    from memory_mcp.app import AppContext

log = logging.getLogger("memory_mcp")

# argparse dest -> Settings field; every one also has a MEMORY_MCP_* variable.
_STORE_FLAGS = {"db": "db", "agent_id": "agent_id", "role": "role", "session_id": "session_id"}


def _store_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help="SQLite file or SQLAlchemy URL (env MEMORY_MCP_DB)")
    parser.add_argument("--agent-id", help="this agent's id (env MEMORY_MCP_AGENT_ID)")
    parser.add_argument("--role", choices=["worker", "lead"], help="env MEMORY_MCP_ROLE")
    parser.add_argument("--session-id", help="default: a new id per process")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-mcp", description="A durable, searchable memory for AI agents (MCP)."
    )
    parser.add_argument("--version", action="version", version=f"memory-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the MCP server (stdio)")
    _store_flags(serve)
    serve.add_argument(
        "--transport",
        choices=["stdio", "streamable-http", "sse"],
        help="env MEMORY_MCP_TRANSPORT; default stdio (one agent); the HTTP transports serve "
        "many agents, each with a token (`memory-mcp token add`)",
    )
    serve.add_argument("--host", help="HTTP: address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP: port (default 8765)")
    serve.add_argument(
        "--allowed-hosts",
        nargs="+",
        help="HTTP: host names clients use, for the Host/Origin check (env "
        'MEMORY_MCP_ALLOWED_HOSTS=\'["a","b"]\')',
    )
    cli_notes.add_folder_flags(serve)
    cli_notes.add_watch_flag(serve)
    serve.add_argument(
        "--embedder",
        choices=["onnx", "sentence-transformers"],
        help="embedding runtime (env MEMORY_MCP_EMBEDDER; default onnx)",
    )

    imp = commands.add_parser("import", help="import memories from a JSONL file")
    _store_flags(imp)
    imp.add_argument("file", type=Path)
    imp.add_argument(
        "--skip-invalid",
        action="store_true",
        help="store the valid lines and skip the bad ones (still listed on stderr; exit 0). "
        "Without it one bad line means nothing is stored (exit 1)",
    )

    exp = commands.add_parser(
        "export",
        help="write the memories an agent may see as JSONL",
        description="Write, one JSON line each, the memories the agent (--agent-id, "
        "--session-id) may see: its own of every scope and every swarm memory, the same "
        "rules as the tools. --all writes every agent's memories instead.",
    )
    _store_flags(exp)
    exp.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
    exp.add_argument(
        "--all",
        dest="everyone",
        action="store_true",
        help="an operator's command: every memory of every agent, private ones included "
        "(not with --agent-id)",
    )

    purge = commands.add_parser("purge", help="delete expired memories now")
    _store_flags(purge)
    cli_notes.add_commands(commands, _store_flags)
    cli_doctor.add_command(commands, _store_flags, cli_notes.add_folder_flags)
    _add_bench(commands)
    cli_model.add_commands(commands)
    cli_token.add_commands(commands, _store_flags)
    return parser


REPO_ROOT = Path(__file__).resolve().parent.parent


def _add_bench(commands: Any) -> None:
    """`bench` comes from the repository's bench/ folder, next to memory_mcp/ in a clone
    (editable install); it is not part of the installed package."""
    if (REPO_ROOT / "bench" / "command.py").is_file():
        if str(REPO_ROOT) not in sys.path:
            sys.path.insert(0, str(REPO_ROOT))
        from bench import command

        command.add_commands(commands)
    else:
        commands.add_parser("bench", help="benchmarks: run from a clone of the repository")


def flag_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (they win over env and the settings file)."""
    overrides: dict[str, Any] = {}
    flags = {
        **_STORE_FLAGS,
        **cli_notes.NOTES_FLAGS,
        "transport": "transport",
        "host": "host",
        "port": "port",
        "allowed_hosts": "allowed_hosts",
        "watch": "watch",
        "embedder": "embedder",
    }
    for dest, name in flags.items():
        value = getattr(args, dest, None)
        if value is not None:
            overrides[name] = value
    return overrides


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings(**flag_overrides(args))


def serve_flags(argv: list[str]) -> dict[str, Any]:
    """The settings that `memory-mcp serve ARGV` would take from its flags."""
    return flag_overrides(build_parser().parse_args(["serve", *argv]))


def _setup_logging(verbose: bool = False) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("torch").setLevel(logging.WARNING)  # its exit-time cache statistics


def _run_with_app(
    settings: Settings,
    job: Callable[[AppContext], Awaitable[int]],
    background: bool = False,
    create: bool = True,
) -> int:
    from memory_mcp.app import open_app

    async def runner() -> int:
        async with open_app(settings, background=background, create=create) as app:
            return await job(app)

    return anyio.run(runner)


def cmd_serve(settings: Settings) -> int:
    if settings.transport != "stdio":
        from memory_mcp.http_server import serve_http

        try:
            anyio.run(serve_http, settings)
        except KeyboardInterrupt:
            return 130
        return 0
    from memory_mcp.mcp_server import build_server, serve_stdio

    log.info(
        "memory-mcp %s serving agent %r (%s), session %s, store %s",
        __version__,
        settings.agent_id,
        settings.role.value,
        settings.session_id,
        settings.database_url,
    )
    _run_with_app(settings, _store_opens)  # a bad --db is one line on stderr, not a crash
    try:
        anyio.run(serve_stdio, build_server(settings))
    except KeyboardInterrupt:  # Ctrl-C: everything has been closed by now
        log.info("stopped (Ctrl-C)")
        return 130
    return 0


async def _store_opens(_app: AppContext) -> int:
    return 0


def cmd_export(settings: Settings, output: Path | None, everyone: bool = False) -> int:
    from memory_mcp.jsonl import export_lines

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

    return _run_with_app(settings, job, create=False)  # reading never creates a store


def cmd_purge(settings: Settings) -> int:
    async def job(app: AppContext) -> int:
        purged = await app.service.purge_expired()
        print(f"purged {purged} expired memories", file=sys.stderr)
        return 0

    return _run_with_app(settings, job)


def _run_bench(args: argparse.Namespace) -> int:
    if not hasattr(args, "bench"):
        print(
            "memory-mcp: the benchmarks are not installed with the package; run them from a "
            "clone of the repository (bench/, see bench/README.md)",
            file=sys.stderr,
        )
        return 2
    from bench import command

    return command.run(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "hook":  # before anything that could exit non-zero: hooks exit 0
        return cli_notes.cmd_hook(args.event)
    _setup_logging()
    try:
        if args.command == "bench":  # its own stores in temporary or --workdir folders
            return _run_bench(args)
        if args.command == "doctor":
            return cli_doctor.run(
                flag_overrides(args), args.mcp_config, args.hooks_config, serve_flags
            )
        settings = settings_from(args)
        if args.command == "serve":
            return cmd_serve(settings)
        if args.command == "import":
            from memory_mcp import cli_import

            return cli_import.cmd_import(settings, args.file, args.skip_invalid)
        if args.command == "export":
            if args.everyone and args.agent_id is not None:
                print("memory-mcp: export takes --all or --agent-id, not both", file=sys.stderr)
                return 2
            return cmd_export(settings, args.output, args.everyone)
        if args.command == "purge":
            return cmd_purge(settings)
        if args.command == "index":
            return cli_notes.cmd_index(settings, args.path)
        if args.command == "context":
            return cli_notes.cmd_context(settings, args.query, args.limit)
        if args.command == "model":
            return cli_model.run(args, settings)
        if args.command == "token":
            return cli_token.run(args, settings)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        print(f"memory-mcp: bad configuration: {problems}", file=sys.stderr)
        return 2
    except MemoryMcpError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
