"""`memory-mcp model prepare` (registered in cli/main.py): check the model package's built
graph, or build one from the weights where it is not the one to run (`--model-dir`,
`--force`; semantic/onnx_model.py). The Makefile runs it at set-up."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory_mcp.settings import Settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    from memory_mcp.semantic.onnx_model import prepare, prepared

    before = prepared(settings.data_dir, settings.model_dir)
    try:
        path = prepare(settings.data_dir, settings.model_dir, force=args.force)
    except OSError as exc:
        print(f"memory-mcp: cannot prepare the embedding model: {exc}", file=sys.stderr)
        return 1
    state = "already prepared" if path == before and not args.force else "exported"
    print(f"{state}: {path}", file=sys.stderr)
    print(path)
    return 0
