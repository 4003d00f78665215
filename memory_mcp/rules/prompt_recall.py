"""Which memories a prompt recalls (the UserPromptSubmit hook's block, app/reads.py).

By words, not by meaning: the hook runs as a process of its own at every prompt, and
loading the embedding model there costs seconds where the keyword index answers in tens of
milliseconds (docs/lab/capture.md measures both as whole processes). The keyword index's
best hits (BM25) are re-ranked by how much of the prompt each holds, and a hit is injected
only when that share reaches the threshold: the prompt's words found in its own words, each
weighted by its rarity in the project (store/sqlite/fts5.coverage). A prompt about nothing
stored then gets no block: a wrong block costs context and misleads, none costs nothing.
Standard library only."""

from __future__ import annotations

from collections.abc import Sequence

from memory_mcp.models import MemoryRecord, Source

# A pasted log or file is not a question: its first words are enough to find what it is
# about, and each term costs the keyword index a lookup.
MAX_PROMPT_TERMS = 32


# Hits read before the threshold: BM25's best, re-ranked by how much of the prompt each
# holds (in a small store BM25 weighs a word in half the memories at nothing).
CANDIDATES = 50


def recalled_by_prompt(record: MemoryRecord) -> bool:
    """Not a session summary: it lists a whole session's requests, so it holds some words
    of most prompts, and the messages it lists are captured one by one (on one LoCoMo
    conversation, leaving summaries out took the prompts about nothing stored that got
    no block from 13% to 23%, and recall from 0.418 to 0.435, at a threshold of 0.4)."""
    return record.source is not Source.SESSION_SUMMARY


def relevant(
    hits: Sequence[tuple[int, float]], shares: dict[int, float], min_match: float
) -> list[int]:
    """The ids of `hits` ((id, BM25), best first) that hold at least `min_match` of the
    prompt (`shares`: store/sqlite/fts5.coverage), most of it first, then by BM25."""
    order = {memory_id: rank for rank, (memory_id, _) in enumerate(hits)}
    chosen = [i for i, _ in hits if shares.get(i, 0.0) >= min_match]
    return sorted(chosen, key=lambda i: (-shares[i], order[i]))


__all__ = ["CANDIDATES", "MAX_PROMPT_TERMS", "recalled_by_prompt", "relevant"]
