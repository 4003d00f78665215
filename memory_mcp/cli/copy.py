"""`memory-mcp copy --from DB --to DB [--replace]`: move a whole store between SQLite and
PostgreSQL (memory_mcp/store/table_copy.py does the copying and the count check)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(copy: argparse.ArgumentParser) -> None:
    copy.add_argument(
        "--from", dest="source", required=True, help="the store to read: SQLite file or URL"
    )
    copy.add_argument(
        "--to", dest="target", required=True, help="the store to write: SQLite file or URL"
    )
    copy.add_argument(
        "--replace",
        action="store_true",
        help="empty a target that holds anything first (without it such a target is refused)",
    )


def run(args: argparse.Namespace) -> int:
    import anyio

    from memory_mcp.app.startup import prepare_store_location
    from memory_mcp.settings import Settings
    from memory_mcp.store.table_copy import copy_store

    data_dir = Path.cwd()  # unused: both stores are named
    source = Settings(db=args.source, data_dir=data_dir)
    target = Settings(db=args.target, data_dir=data_dir)
    prepare_store_location(source, create=False)  # a missing source is an error, not empty
    prepare_store_location(target, create=True)
    report = anyio.run(copy_store, source.database_url, target.database_url, args.replace)
    if report.replaced:
        emptied = ", ".join(f"{n} {t}" for t, n in report.replaced.items() if n)
        print(f"replaced what the target held: {emptied}", file=sys.stderr)
    print("table\trows")
    for table, count in report.counts.items():
        print(f"{table}\t{count}")
    print("counts checked: the target holds what the source held", file=sys.stderr)
    return 0
