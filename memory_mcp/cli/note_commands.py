"""The CLI's file-notes commands, `index` and `context` (registered in cli/main.py). Only
`context --query` loads the embedding model (to search by meaning, as the MCP prompt
does); the other exits in well under a second, and the server's embedding worker embeds
whatever it wrote."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from memory_mcp.limits import MODEL_WAIT_SECONDS

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.rules.memories_block import BlockLimits
    from memory_mcp.settings import Settings


def cmd_index(settings: Settings, path: Path) -> int:
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

    from memory_mcp.app.root import run_with_app

    return run_with_app(settings, job)


def cmd_context(
    settings: Settings, query: str | None, limit: int | None, max_tokens: int | None = None
) -> int:
    """Never creates a store. Without a query, on a SQLite file, the block is read on the
    standard library (app/reads.py). With a query, search the way the MCP prompt does:
    wait (bounded) for the model, then hybrid search; memories a server has not embedded
    yet are found by their words. `limit`, `max_tokens`: None, the settings'."""
    from dataclasses import replace

    from memory_mcp.app.reads import block_limits
    from memory_mcp.errors import StoreMissingError

    limits = block_limits(settings, max_tokens)
    if limit is not None:
        limits = replace(limits, max_items=limit)
    try:
        block = _context_block(settings, query, limits)
    except StoreMissingError as exc:
        print(f"memory-mcp: {exc}", file=sys.stderr)
        return 1
    if block:
        print(block)
    return 0


def _context_block(settings: Settings, query: str | None, limits: BlockLimits) -> str:
    if not (query and query.strip()):
        from memory_mcp.app import reads

        block = reads.memories_block(settings, limits)
        if block is not None:
            return block
    import anyio

    from memory_mcp.app.root import run_with_app
    from memory_mcp.cli.browse import catch_up_a_little
    from memory_mcp.errors import EmbeddingUnavailableError
    from memory_mcp.rules.memories_block import memories_block

    async def job(app: AppContext) -> str:
        if query and query.strip():
            problem = f"the embedding model is not ready after {MODEL_WAIT_SECONDS:g} s"
            try:
                with anyio.move_on_after(MODEL_WAIT_SECONDS):
                    await app.service.embedder.wait_ready()
            except EmbeddingUnavailableError as exc:
                problem = str(exc)
            if not app.service.embedder.is_ready():
                print(f"memory-mcp: {problem}; matching by words only", file=sys.stderr)
            for notice in await catch_up_a_little(app):
                print(f"memory-mcp: {notice}", file=sys.stderr)
        return await memories_block(app.service, app.caller, query, limits)

    return run_with_app(settings, job, create=False)
