"""An experiment for issue 26 (a cheaper store), kept because its answer was no:
`python -m bench.late_chunking DIR [--recipe late|passages]`.

A memory's vector is normalise(whole text + each passage), every passage a model pass of
its own (semantic/passages.py): ~2.4x the model time of the whole text alone, the largest
part of a store. "Late chunking" takes each passage's vector from the whole text's one
pass instead: the mean of the output vectors of the passage's tokens and of the context
label's (the label is part of every passage in the recipe), each normalised, summed as
before. Same one vector per memory, one model pass.

Prints the model time per memory both ways on the last conversation's first 300 turns,
then LoCoMo recall through the product's search with the chosen recipe. Measured
2026-11-25 on the development split (load average 10-12): the model's CPU per turn
24-28 -> 10 ms, but R@5 / R@10 0.581 / 0.673 against 0.635 / 0.716 with the passages
recipe: the separate passes are what the passages' recall is made of."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

import memory_mcp.semantic.vectors as vectors_module
from bench.locomo import load_conversations, run_locomo
from bench.settings import BenchSettings
from memory_mcp.app.root import embedder_from
from memory_mcp.semantic import passages


def passage_spans(text: str) -> tuple[int, list[tuple[int, int]]]:
    """(where the context label ends, the characters each passage's sentences span);
    no spans when the text is one passage. Mirrors passages.passages."""
    label, body = passages.context_label(text)
    base = len(text) - len(body)
    budget = max(passages.PASSAGE_CHARS, len(body) // passages.MAX_PASSAGES + 1)
    groups: list[list[int]] = []  # [start, end, length as passages.passages joins it]
    cursor = 0
    for piece in passages._pieces(body):
        at = max(body.find(piece, cursor), cursor)
        cursor = at + len(piece)
        if groups and groups[-1][2] + 1 + len(piece) <= budget:
            groups[-1][1:] = [base + cursor, groups[-1][2] + 1 + len(piece)]
        else:
            groups.append([base + at, base + cursor, len(piece)])
    if len(groups) <= 1:
        return (base if label else 0), []
    return (base if label else 0), [(g[0], g[1]) for g in groups]


def late_vectors(embedder: Any, texts: list[str]) -> np.ndarray:
    """One pass per text (OnnxEmbedder's session and tokenizer), passages pooled from it."""
    encodings = embedder._tokenizer.encode_batch(texts)
    inputs = {
        name: np.array([getattr(e, field) for e in encodings], dtype=np.int64)
        for name, field in (
            ("input_ids", "ids"),
            ("attention_mask", "attention_mask"),
            ("token_type_ids", "type_ids"),
        )
    }
    (hidden,) = embedder._session.run(["last_hidden_state"], inputs)
    out = np.zeros((len(texts), hidden.shape[2]), dtype=np.float32)
    for row, (text, encoding) in enumerate(zip(texts, encodings, strict=True)):
        real = np.asarray(encoding.attention_mask, dtype=bool)
        whole = hidden[row][real].mean(axis=0)
        total = whole / np.linalg.norm(whole)
        label_end, spans = passage_spans(text)
        ordinary = ~np.asarray(encoding.special_tokens_mask, dtype=bool) & real
        for start, end in spans:
            pick = [
                i
                for i, (a, b) in enumerate(encoding.offsets)
                if ordinary[i] and ((a < end and b > start) or 0 < b <= label_end)
            ]
            if pick:
                vector = hidden[row][pick].mean(axis=0)
                total = total + vector / np.linalg.norm(vector)
        out[row] = total / np.linalg.norm(total)
    return out


async def main(directory: Path, recipe: str) -> None:
    embedder: Any = embedder_from(BenchSettings(embedder="onnx"))
    await embedder.wait_ready()
    conversations = load_conversations(directory)
    texts = [turn.value for turn in conversations[-1].turns[:300]]
    ways: dict[str, Callable[[str], Any]] = {
        "passages": lambda t: embedder.encode(passages.passages(t)),
        "late": lambda t: late_vectors(embedder, [t]),
    }
    for name, embed in ways.items():
        wall, cpu = [], []
        for text in texts:
            began, began_cpu = time.perf_counter(), time.process_time()
            embed(text)
            wall.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        print(
            f"{name}: model per memory p50 {statistics.median(wall) * 1e3:.1f} ms, CPU "
            f"{statistics.median(cpu) * 1e3:.1f} ms (load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    if recipe == "late":

        async def late(embedder: Any, texts: list[str], call_chars: int | None = None) -> Any:
            return await anyio.to_thread.run_sync(late_vectors, embedder, texts)

        vectors_module.embed_memories = late  # type: ignore[attr-defined]
    summary = (await run_locomo(conversations, embedder)).summary()
    print(f"{recipe}: {summary['overall']} (load {os.getloadavg()})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.late_chunking")
    parser.add_argument("dir", type=Path, help="a folder of LoCoMo conversation files")
    parser.add_argument("--recipe", choices=["late", "passages"], default="late")
    args = parser.parse_args()
    anyio.run(main, args.dir, args.recipe)
