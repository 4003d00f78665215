"""`memory-mcp token add|list|revoke`: the bearer tokens agents use to reach an HTTP server.
A new token is printed once, alone on the last line of stdout; the store keeps its hash."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from memory_mcp.app import AppContext
    from memory_mcp.settings import Settings


def add_arguments(token: argparse.ArgumentParser) -> None:
    """`token`'s subcommands (the command is registered in cli/main.py)."""
    kinds = token.add_subparsers(dest="token_command", required=True)
    add = kinds.add_parser("add", help="create a token for an agent (printed once)")
    add.add_argument("agent", metavar="AGENT_ID")
    add.add_argument("--role", choices=["worker", "lead"], default="worker")
    add.add_argument(
        "--oauth-code",
        action="store_true",
        help="a one-time code to sign in on the OAuth page instead (single use, 10 minutes)",
    )
    add.add_argument("--db", help="SQLite file or SQLAlchemy URL (env MEMORY_MCP_DB)")
    listing = kinds.add_parser("list", help="agents, roles, created, last used (never tokens)")
    listing.add_argument("--db", help="SQLite file or SQLAlchemy URL (env MEMORY_MCP_DB)")
    revoke = kinds.add_parser(
        "revoke", help="refuse every token (and OAuth grant) of an agent from now on"
    )
    revoke.add_argument("agent", metavar="AGENT_ID")
    revoke.add_argument("--db", help="SQLite file or SQLAlchemy URL (env MEMORY_MCP_DB)")


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def run(args: argparse.Namespace, settings: Settings) -> int:
    from memory_mcp.app import open_app

    async def job(app: AppContext) -> int:
        if args.token_command == "add" and args.oauth_code:
            code = await app.oauth.add_login_code(args.agent, args.role)
            print(
                f"one-time sign-in code for agent {args.agent!r} ({args.role}): paste it on "
                "the page your client opens; it works once, within 10 minutes",
                file=sys.stderr,
            )
            print(code, flush=True)
            return 0
        if args.token_command == "add":
            token = await app.tokens.issue(args.agent, args.role)
            print(
                f"token for agent {args.agent!r} ({args.role}); it is shown only now: "
                "put it in the client's Authorization header (Bearer ...)",
                file=sys.stderr,
            )
            print(token, flush=True)
            return 0
        if args.token_command == "revoke":
            count = await app.tokens.revoke(args.agent)
            count += await app.oauth.revoke_agent(args.agent)  # its OAuth grants and codes
            if not count:
                print(f"memory-mcp: agent {args.agent!r} has no tokens", file=sys.stderr)
                return 1
            print(
                f"revoked {count} token(s), grant(s) and code(s) of agent {args.agent!r}",
                file=sys.stderr,
            )
            return 0
        rows = await app.tokens.listing()
        print("agent\trole\tcreated\tlast used")
        for row in rows:
            print(f"{row.agent_id}\t{row.role}\t{_when(row.created_at)}\t{_when(row.last_used_at)}")
        return 0

    async def runner() -> int:
        create = args.token_command == "add"  # list and revoke never create a store
        async with open_app(settings, background=False, create=create) as app:
            return await job(app)

    return anyio.run(runner)
