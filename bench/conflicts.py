"""Precision and recall of memory-store's `conflicts` (rules/conflicts.py) on labelled
pairs, through the product's path: one store holding an agent's 40 distinct session
memories (bench/data/near_duplicates.json's `session`, the background the similar check
compares against), and for each pair the first memory stored, then the second through
`store_and_check`; a pair is named when the second's `conflicts` names the first. Both
are deleted before the next pair. The real model (ONNX), vectors cached by text.

Pairs (label: conflict or not):
- agent-style, bench/data/near_duplicates.json (issue 39): corrections (conflicts),
  paraphrases, related facts and repeats (not);
- agent-style, bench/data/conflict_pairs.json (issue 49): conflicts (another number,
  date, value, a negation) and compatible pairs (the same subject, another fact);
- beam-dev: each knowledge-update and contradiction-resolution question with two or more
  evidence messages gives a pair (conflict): from its first and last evidence message,
  the sentence sharing most words with the question (extracted, not hand-picked: some
  such pairs are not a plain contradiction); and each information-extraction question
  with two or more gives one the same way (not a conflict).

    python -m bench.conflicts [--beam ../shared/bench-data/beam-dev] [--json FILE]

It also prints the rules alone (difference(), no similar check) to tell which part
decides."""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

from bench.settings import store_settings
from bench.vector_cache import CachingEmbedder
from memory_mcp.app.root import open_app
from memory_mcp.models import StoreRequest
from memory_mcp.rules.conflicts import difference
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.semantic.onnx_model import ensure_in_child
from memory_mcp.store.keyword import query_terms

DATA = Path(__file__).parent / "data"
BEAM = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "beam-dev"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

Pair = tuple[str, str, bool, str]  # old, new, is a conflict, source


def agent_pairs() -> list[Pair]:
    near = json.loads((DATA / "near_duplicates.json").read_text())
    mine = json.loads((DATA / "conflict_pairs.json").read_text())
    pairs: list[Pair] = []
    pairs += [(a, b, True, "issue39 correction") for a, b in near["correction"]]
    for group in ("paraphrase", "related", "repeat"):
        pairs += [(a, b, False, f"issue39 {group}") for a, b in near[group] if a != b]
    pairs += [(a, b, True, "issue49 conflict") for a, b in mine["conflict"]]
    pairs += [(a, b, False, "issue49 compatible") for a, b in mine["compatible"]]
    return pairs


def _best_sentence(text: str, question: str) -> str | None:
    wanted = set(query_terms(question))
    best, score = None, 0
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not 20 <= len(sentence) <= 400 or "`" in sentence or "{" in sentence:
            continue
        shared = len(wanted & set(query_terms(sentence)))
        if shared > score:
            best, score = sentence, shared
    return best


def beam_pairs(folder: Path) -> list[Pair]:
    pairs: list[Pair] = []
    for path in sorted(folder.glob("*.json")):
        chat = json.loads(path.read_text())
        turns = {turn["id"]: turn["text"] for turn in chat["turns"]}
        for question in chat["questions"]:
            category = question["category"]
            if category not in ("knowledge_update", "contradiction_resolution"):
                if category != "information_extraction":
                    continue
            evidence = [e for e in question["evidence"] if e in turns]
            if len(evidence) < 2:
                continue
            first = _best_sentence(turns[evidence[0]], question["q"])
            last = _best_sentence(turns[evidence[-1]], question["q"])
            if first and last and first != last:
                conflict = category != "information_extraction"
                pairs.append((first, last, conflict, f"beam {category}"))
    return pairs


async def named(pairs: list[Pair], cache: Path) -> list[bool]:
    """Whether memory-store's `conflicts` names the first of each pair."""
    background = json.loads((DATA / "near_duplicates.json").read_text())["session"]
    found = []
    with tempfile.TemporaryDirectory() as folder:
        model = OnnxEmbedder(lambda: ensure_in_child(Path(folder)))
        model.start()
        embedder = CachingEmbedder(model, cache)
        async with open_app(store_settings(Path(folder)), embedder, background=False) as app:
            service, caller = app.service, app.caller
            await embedder.wait_ready()
            for number, text in enumerate(background):
                await service.store_memory(caller, StoreRequest(f"session-{number}", text))
            for number, (old, new, _, _) in enumerate(pairs):
                first = await service.store_memory(caller, StoreRequest(f"old-{number}", old))
                second, check = await service.store_and_check(
                    caller, StoreRequest(f"new-{number}", new)
                )
                found.append(any(c.id == first.record.id for c in check.conflicts))
                await service.deletes.delete(caller, second.record.id)
                await service.deletes.delete(caller, first.record.id)
        embedder.save()
    return found


def scores(pairs: list[Pair], said: list[bool]) -> dict[str, Any]:
    def pr(rows: list[tuple[bool, bool]]) -> dict[str, Any]:
        tp = sum(1 for truth, guess in rows if truth and guess)
        fp = sum(1 for truth, guess in rows if not truth and guess)
        fn = sum(1 for truth, guess in rows if truth and not guess)
        return {
            "pairs": len(rows),
            "conflicts": tp + fn,
            "named": tp + fp,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        }

    by_source: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for (_, _, truth, source), guess in zip(pairs, said, strict=True):
        by_source[source].append((truth, guess))
        by_source["agent" if not source.startswith("beam") else "beam"].append((truth, guess))
        by_source["all"].append((truth, guess))
    return {source: pr(rows) for source, rows in sorted(by_source.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.conflicts", description=__doc__)
    parser.add_argument("--beam", type=Path, default=BEAM)
    parser.add_argument("--cache", type=Path, default=Path("bench/results/lab"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pairs = agent_pairs() + (beam_pairs(args.beam) if args.beam.is_dir() else [])
    product = scores(pairs, anyio.run(named, pairs, args.cache))
    rules = scores(pairs, [difference(old, new) is not None for old, new, _, _ in pairs])
    result = {"product": product, "rules_alone": rules}
    for title, table in result.items():
        print(f"\n{title}: source, pairs, conflicts, named, precision, recall")
        for source, row in table.items():
            print(
                f"  {source:32} {row['pairs']:4} {row['conflicts']:4} {row['named']:4} "
                f"{row['precision']!s:>6} {row['recall']!s:>6}"
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
