"""`memory-mcp model prepare`: export the bundled weights to ONNX once, from disk (the
Makefile runs it at set-up; a server that finds no file exports it in the background)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_mcp.settings import Settings


def add_commands(commands: Any) -> None:
    """Add `model` and its subcommands to the CLI's subparsers."""
    model = commands.add_parser("model", help="prepare the embedding model (ONNX export)")
    kinds = model.add_subparsers(dest="model_command", required=True)
    prepare = kinds.add_parser(
        "prepare", help="export the bundled all-MiniLM-L6-v2 to ONNX unless already done"
    )
    prepare.add_argument("--force", action="store_true", help="export again even if present")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from memory_mcp.onnx_model import locate, prepare

    before = locate(settings.data_dir, settings.model_dir).found
    try:
        path = prepare(settings.data_dir, settings.model_dir, force=args.force)
    except OSError as exc:
        print(f"memory-mcp: cannot prepare the embedding model: {exc}", file=sys.stderr)
        return 1
    state = "already prepared" if path == before and not args.force else "exported"
    print(f"{state}: {path}", file=sys.stderr)
    print(path)
    return 0
