"""`memory-mcp decay` and `memory-mcp quarantine`: the trust rules' two chores, for a person.

`decay` archives the unconfirmed inferences whose confidence has faded under the floor
(rules/decay.py; the server does it on its own every `purge_interval_seconds`), and with
`--dry-run` only lists them. `quarantine` lists the memories held for approval
(rules/quarantine.py), and `quarantine approve ID` / `quarantine discard ID` serve or
delete one: the lead's, so run it as the lead (`--role lead`); a worker is refused."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from memory_mcp.cli.common import STORE, settings_from

if TYPE_CHECKING:
    import argparse

    from memory_mcp.app.context import AppContext
    from memory_mcp.models import MemoryRecord
    from memory_mcp.rules.decay import Faded

# What changes which memories decay and when.
TRUST = ("source_confidence", "confidence_decay_per_day", "confidence_floor")


def add_commands(commands: Any, command: Any) -> None:
    """Register `decay` and `quarantine` with cli.build_parser's `_command`."""
    decay = command(
        commands,
        "decay",
        cmd_decay,
        STORE + TRUST,
        help="archive unconfirmed inferences whose confidence fell under the floor",
        description="agent_inferred and recalled memories lose confidence each day until "
        "confirmed (stored again, best as user_stated); under --confidence-floor they are "
        "archived: kept, with their history, found with include_archived, back when stored "
        "again. Pinned ones never decay. The server does this on its own.",
    )
    decay.add_argument("--dry-run", action="store_true", help="only list what would be archived")
    decay.add_argument("--json", action="store_true", help="print JSON")
    quarantine = command(
        commands,
        "quarantine",
        cmd_quarantine,
        STORE,
        help="list the memories held for approval; approve or discard one (the lead)",
        description="External text, and low-trust text that reads like instructions, is "
        "stored but served to no one until approved (injection_policy). Acting as the lead "
        "(--role lead): list them, `approve ID` to serve one (its history kept), `discard "
        "ID` to delete it.",
    )
    quarantine.add_argument("verb", nargs="?", choices=("approve", "discard"))
    quarantine.add_argument("id", nargs="?", type=int, help="the memory's id")
    quarantine.add_argument("--json", action="store_true", help="print JSON")


def cmd_decay(args: argparse.Namespace) -> int:
    from memory_mcp.app.root import run_with_app

    async def job(app: AppContext) -> list[Faded]:
        return await app.service.decay(dry_run=args.dry_run)

    faded = run_with_app(settings_from(args), job)
    if args.json:
        rows = [{**_row(f.record), "confidence": round(f.confidence, 4)} for f in faded]
        print(json.dumps({"dry_run": args.dry_run, "archived": rows}, indent=2))
        return 0
    done = "would archive" if args.dry_run else "archived"
    print(f"{done} {len(faded)} unconfirmed memories under the confidence floor", file=sys.stderr)
    for f in faded:
        row = _row(f.record)
        print(
            f"{row['id']}\t{row['key']}\t{row['source']}\tconfidence {f.confidence:.2f}\t"
            f"owner {row['agent_id']}\tlast written {row['updated_at']}"
        )
    return 0


def cmd_quarantine(args: argparse.Namespace) -> int:
    from memory_mcp.app.root import run_with_app
    from memory_mcp.errors import InvalidInputError

    if args.verb is not None and args.id is None:
        raise InvalidInputError("id", f"`quarantine {args.verb}` needs the memory's id")

    async def job(app: AppContext) -> list[MemoryRecord]:
        if args.verb == "approve":
            return [await app.service.quarantine.approve(app.caller, args.id)]
        if args.verb == "discard":
            return [await app.service.quarantine.discard(app.caller, args.id)]
        return await app.service.quarantine.held(app.caller)

    records = run_with_app(settings_from(args), job)
    if args.json:
        print(json.dumps([{**_row(r), "value": r.value} for r in records], indent=2))
        return 0
    if args.verb is not None:
        done = "approved: served from now on" if args.verb == "approve" else "discarded"
        print(f"memory {records[0].id} ({records[0].key!r}) {done}", file=sys.stderr)
        return 0
    print(f"{len(records)} memories held for approval", file=sys.stderr)
    from memory_mcp.checks.text_safety import strip_terminal_controls

    for r in records:
        row = _row(r)
        flags = ",".join(r.flags) or "-"
        value = " ".join(strip_terminal_controls(r.value[:200]).split())
        print(
            f"{row['id']}\t{row['key']}\t{row['source']}\tflags {flags}\t"
            f"owner {row['agent_id']}\t{value}"
        )
    return 0


def _row(record: MemoryRecord) -> dict[str, Any]:
    from memory_mcp.checks.text_safety import strip_terminal_controls
    from memory_mcp.checks.validation import iso

    return {
        "id": record.id,
        "key": strip_terminal_controls(record.key),
        "source": record.source.value,
        "agent_id": record.agent_id,
        "scope": record.scope.value,
        "updated_at": iso(record.updated_at),
    }
