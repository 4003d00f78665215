"""`memory-mcp token add|list|revoke`: the bearer tokens agents use to reach an HTTP server.
A new token is printed once, alone on the last line of stdout; the store keeps its hash.

An agent has one token unless the operator asks for another (`add --another`): a second
`add` by mistake would leave an unknown token valid, and `list` could not tell the two
apart. Each token has an id, which `list` shows and `revoke --id` takes.

`add --oauth-code` makes a one-time code for the OAuth sign-in page instead (no token);
`revoke AGENT` also ends the agent's OAuth grants (auth/oauth.py). A grant signed in with
one token ends with that token, so `revoke --id` ends those too."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.settings import Settings
    from memory_mcp.store.token_rows import TokenRow

DB_HELP = "SQLite file or SQLAlchemy URL (env MEMORY_MCP_DB)"


def add_arguments(token: argparse.ArgumentParser) -> None:
    """`token`'s subcommands (the command is registered in cli/main.py)."""
    kinds = token.add_subparsers(dest="token_command", required=True)
    add = kinds.add_parser("add", help="create a token for an agent (printed once)")
    add.add_argument("agent", metavar="AGENT_ID")
    add.add_argument("--role", choices=["worker", "lead"], default="worker")
    add.add_argument(
        "--another",
        action="store_true",
        help="add a token for an agent that has one already (both stay valid)",
    )
    add.add_argument(
        "--project",
        dest="projects",
        action="append",
        metavar="NAME",
        help="a project it may read and write (repeat for several; it reads * too). "
        "None given: every project",
    )
    add.add_argument(
        "--oauth-code",
        action="store_true",
        help="a one-time code to sign in on the OAuth page instead (single use, 10 minutes)",
    )
    add.add_argument("--db", help=DB_HELP)
    listing = kinds.add_parser("list", help="ids, agents, roles, created, last used (never tokens)")
    listing.add_argument("--json", action="store_true", help="print JSON, one object a token")
    listing.add_argument("--db", help=DB_HELP)
    revoke = kinds.add_parser(
        "revoke",
        help="refuse every token (and OAuth grant) of an agent, or one token by its id, "
        "from now on",
    )
    revoke.add_argument("agent", metavar="AGENT_ID", nargs="?")
    revoke.add_argument("--id", type=int, help="only this token (the id `token list` shows)")
    revoke.add_argument("--db", help=DB_HELP)


def _when(seconds: float | None) -> str | None:
    return None if seconds is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _shown(row: TokenRow) -> dict[str, object]:
    return {
        "id": row.id,
        "agent_id": row.agent_id,
        "role": row.role,
        "created_at": _when(row.created_at),
        "last_used_at": _when(row.last_used_at),
        "projects": row.projects,
    }


async def _add(app: AppContext, args: argparse.Namespace) -> int:
    if args.oauth_code:  # no token: an agent may have several codes beside its token
        code = await app.oauth.add_login_code(args.agent, args.role, args.projects)
        print(
            f"one-time sign-in code for agent {args.agent!r} ({args.role}): paste it on "
            "the page your client opens; it works once, within 10 minutes",
            file=sys.stderr,
        )
        print(code, flush=True)
        return 0
    held = [row.id for row in await app.tokens.listing() if row.agent_id == args.agent.strip()]
    if held and not args.another:
        ids = ", ".join(map(str, held))
        print(
            f"memory-mcp: agent {args.agent!r} already has a token (id {ids}); give "
            f"--another for a second one, or `token revoke --id {held[0]}` first",
            file=sys.stderr,
        )
        return 1
    token = await app.tokens.issue(args.agent, args.role, args.projects)
    granted = ", ".join(args.projects) if args.projects else "every project"
    print(
        f"token for agent {args.agent!r} ({args.role}, {granted}); it is shown only now: "
        "put it in the client's Authorization header (Bearer ...)",
        file=sys.stderr,
    )
    print(token, flush=True)
    return 0


async def _revoke(app: AppContext, args: argparse.Namespace) -> int:
    if args.id is not None:
        if not await app.tokens.revoke_one(args.id):
            print(f"memory-mcp: no token has id {args.id}", file=sys.stderr)
            return 1
        print(f"revoked token {args.id}", file=sys.stderr)
        return 0
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


async def _list(app: AppContext, args: argparse.Namespace) -> int:
    rows = [_shown(row) for row in await app.tokens.listing()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("id\tagent\trole\tcreated\tlast used\tprojects")
    for row in rows:
        projects = row.pop("projects")
        shown = ", ".join(projects) if isinstance(projects, list) else "every project"
        print("\t".join(str(value or "never") for value in row.values()) + f"\t{shown}")
    return 0


def run(args: argparse.Namespace, settings: Settings) -> int:
    import anyio  # here: every command's parser loads this module

    from memory_mcp.app.root import open_app

    if args.token_command == "revoke" and (args.agent is None) == (args.id is None):
        print("memory-mcp: token revoke takes an AGENT_ID or --id, one of them", file=sys.stderr)
        return 2
    job = {"add": _add, "revoke": _revoke, "list": _list}[args.token_command]

    async def runner() -> int:
        create = args.token_command == "add"  # list and revoke never create a store
        async with open_app(settings, background=False, create=create) as app:
            return await job(app, args)

    return anyio.run(runner)
