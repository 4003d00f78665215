"""`memory-mcp model prepare` (registered in cli/main.py): export the bundled weights to ONNX
once, from disk (the Makefile runs it at set-up; a server that finds no file exports it in
the background)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_mcp.settings import Settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    from memory_mcp.semantic.onnx_model import locate, prepare

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
