"""How `memory-mcp import` writes a checked file: batches of lines, each batch one
transaction, then the file's texts embedded a batch at a time.

A process killed at any moment (kill -9 included) leaves whole batches: SQLite commits a
transaction entirely or not at all, and a memory's row, tags and full-text entry are in
the same transaction. Running the import again skips every line stored unchanged (same
identity, same content) without writing, writes the rest, and embeds only the texts
that have no vector yet (vectors are kept by content hash)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from memory_mcp.semantic.embeddings import EmbeddingUnavailableError
from memory_mcp.transfer.jsonl import PreparedLine

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService

# Lines per transaction: large enough that the commit (an fsync with synchronous=full)
# costs little per line, small enough that a server waiting for the write lock waits
# well under a second, and that Ctrl-C is answered within one batch.
BATCH_LINES = 500
# Texts per model call: the ONNX embedder cuts a call into length-sorted chunks run on
# every embedding thread, so a larger call pads less and keeps all cores busy.
EMBED_BATCH_TEXTS = 256


@dataclass
class ImportReport:
    """Counts so far: read while an import runs, so an interrupted one can say where it was."""

    stored: int = 0
    unchanged: int = 0
    embedded: int = 0
    # Lines the store refused while writing, for reasons no line can show on its own
    # (a swarm key that another agent took after the whole-file check): named, never
    # silent, and nothing of them is written.
    refused: list[str] = field(default_factory=list)
    refused_lines: set[int] = field(default_factory=set)


Progress = Callable[[int], None]


def _never() -> bool:
    return False


async def ownership_problems(service: MemoryService, lines: list[PreparedLine]) -> list[str]:
    """One message per line the store would refuse because the memory is (or will be, by
    an earlier line) another agent's swarm memory: part of the whole-file check."""
    refused = await service.ownership_refusals([(line.caller, line.memory) for line in lines])
    return [f"{lines[index].where}: {reason}" for index, reason in sorted(refused.items())]


async def write_batches(
    service: MemoryService,
    lines: list[PreparedLine],
    report: ImportReport,
    progress: Progress | None = None,
    stop: Callable[[], bool] = _never,
    batch_lines: int = BATCH_LINES,
) -> bool:
    """Write checked lines, `batch_lines` per transaction; False if `stop()` said to
    stop (checked between two batches)."""
    for start in range(0, len(lines), batch_lines):
        if stop():
            return False
        batch = lines[start : start + batch_lines]
        outcome = await service.write_batch(
            [(line.caller, line.memory, line.written_at) for line in batch]
        )
        report.stored += outcome.created + outcome.updated
        report.unchanged += outcome.unchanged
        for index, reason in outcome.refused:
            report.refused.append(f"{batch[index].where}: {reason}")
            report.refused_lines.add(batch[index].number)
        if progress:
            progress(len(batch))
    return True


def texts_to_embed(lines: list[PreparedLine], report: ImportReport) -> list[str]:
    """The distinct texts of the stored lines (refused ones left out), in file order."""
    return list(
        dict.fromkeys(
            line.memory.value for line in lines if line.number not in report.refused_lines
        )
    )


async def embed_batches(
    service: MemoryService,
    texts: list[str],
    report: ImportReport,
    progress: Progress | None = None,
    stop: Callable[[], bool] = _never,
    batch_texts: int = EMBED_BATCH_TEXTS,
) -> bool:
    """Embed those of `texts` without a vector, a batch per model call: searchable by
    meaning when this returns True; False if `stop()` said to stop (between batches).
    Nothing to embed: the model is not even waited for."""
    if not texts:
        return True
    while not service.embedder.is_ready():
        if stop():
            return False
        with anyio.move_on_after(0.2):
            await service.embedder.wait_ready()
    for start in range(0, len(texts), batch_texts):
        if stop():
            return False
        batch = texts[start : start + batch_texts]
        report.embedded += await service.vectors.embed_texts(batch)
        if progress:
            progress(len(batch))
    return True


async def load_model_quietly(service: MemoryService) -> None:
    """Start loading the model while the rows are written; a failure is reported by the
    embedding step, which waits for the model again."""
    try:
        await service.embedder.wait_ready()
    except EmbeddingUnavailableError:
        pass
