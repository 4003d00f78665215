"""The CLI's file-notes commands: `index`, `context` and `hook`, and the memory-folder
flags. Only `context --query` loads the embedding model (to search by meaning, as the MCP
prompt does); the others exit in well under a second, and the server's embedding worker
embeds whatever they wrote."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import anyio

from memory_mcp.settings import Settings

MAX_BLOCK_ITEMS = 12  # memories_block.MAX_ITEMS (not imported: it pulls in the service)
MODEL_WAIT_SECONDS = 60.0  # `context --query`: the model loads in ~5-15 s here

# argparse dest -> Settings field; each also has a MEMORY_MCP_* variable.
NOTES_FLAGS = {"memory_dir": "memory_dir", "shared_memory_dir": "shared_memory_dir"}


def add_folder_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-dir",
        type=Path,
        help="personal notes folder, indexed for this agent (env MEMORY_MCP_MEMORY_DIR; "
        "default /workspace/personal/memory if it exists, else <data dir>/memory)",
    )
    parser.add_argument(
        "--shared-memory-dir",
        type=Path,
        help="shared notes folder, indexed for every agent (env MEMORY_MCP_SHARED_MEMORY_DIR)",
    )


def add_watch_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-watch",
        dest="watch",
        action="store_false",
        default=None,
        help="do not watch or index the memory folders (env MEMORY_MCP_WATCH=false)",
    )


def context_limit(text: str) -> int:
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_BLOCK_ITEMS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number from 1 to {MAX_BLOCK_ITEMS}"
        )
    return limit


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    store_flags: Callable[[argparse.ArgumentParser], None],
) -> None:
    """`store_flags` is cli._store_flags (passed in: this module must not import cli)."""
    index = commands.add_parser(
        "index", help="index one note now (or remove it if it is gone), or reconcile a folder"
    )
    store_flags(index)
    add_folder_flags(index)
    index.add_argument("path", type=Path, help="a note inside a memory folder, or the folder")

    context = commands.add_parser(
        "context", help="print the <memories> block a session starts with"
    )
    store_flags(context)
    add_folder_flags(context)
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

    hook = commands.add_parser(
        "hook", help="run a Claude Code hook (JSON on stdin); see hooks/ and the README"
    )
    hook.add_argument("event", help="post-tool-use, session-start, session-end or stop")


def cmd_index(settings: Settings, path: Path) -> int:
    from memory_mcp.app import AppContext, open_app
    from memory_mcp.notes.paths import canonical, folder_of

    async def job(app: AppContext) -> int:
        target = canonical(path)
        if target is not None and target.is_dir():
            root = next((f for f in app.notes.folders if f.root == target), None)
            found = folder_of(target, app.notes.folders)
            folder = root or (found[0] if found else None)
            if folder is None:
                print(f"memory-mcp: {path} is not inside a memory folder", file=sys.stderr)
                return 1
            report = await app.notes.reconcile(folder, under=None if root else target)
            print(
                f"{target}: {report.indexed} notes indexed, {report.unchanged} unchanged, "
                f"{report.removed} removed, {len(report.skipped)} skipped",
                file=sys.stderr,
            )
            return 0
        note = app.notes.locate(path)
        if note is None:
            folders = ", ".join(f"{f.label} {f.root}" for f in app.notes.folders)
            print(
                f"memory-mcp: {path} is not a note (.md, .markdown, .txt) inside a memory "
                f"folder ({folders})",
                file=sys.stderr,
            )
            return 1
        outcome = await app.notes.index(note)
        print(outcome.describe(), file=sys.stderr)
        return 0

    async def runner() -> int:
        async with open_app(settings, background=False) as app:
            return await job(app)

    return anyio.run(runner)


def cmd_context(settings: Settings, query: str | None, limit: int) -> int:
    """Never creates a store. With a query, search the way the MCP prompt does: wait
    (bounded) for the model, then hybrid search; memories a server has not embedded yet
    are found by their words."""
    from memory_mcp.app import open_app
    from memory_mcp.embeddings import EmbeddingUnavailableError
    from memory_mcp.errors import StoreMissingError
    from memory_mcp.memories_block import MAX_ITEMS, BlockLimits, memories_block

    limits = BlockLimits(max_items=min(limit, MAX_ITEMS))

    async def runner() -> str:
        async with open_app(settings, background=False, create=False) as app:
            if query and query.strip():
                problem = f"the embedding model is not ready after {MODEL_WAIT_SECONDS:g} s"
                try:
                    with anyio.move_on_after(MODEL_WAIT_SECONDS):
                        await app.service.embedder.wait_ready()
                except EmbeddingUnavailableError as exc:
                    problem = str(exc)
                if not app.service.embedder.is_ready():
                    print(f"memory-mcp: {problem}; matching by words only", file=sys.stderr)
            return await memories_block(app.service, app.caller, query, limits)

    try:
        block = anyio.run(runner)
    except StoreMissingError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return 1
    if block:
        print(block)
    return 0


def cmd_hook(event: str) -> int:
    from memory_mcp.hooks.runner import main

    return main([event])
