"""Keyword candidates with no vector yet, embedded before they are ranked.

A memory is written without a vector where no model runs beside the write: a note indexed
by `memory-mcp index` or the watcher (notes are left to the background worker), a hook's
memory, a store made while the model loaded. A server's background worker embeds them
within seconds; the CLI has no worker, so its `search` and `context --query` would rank
them without their meaning forever. So a search embeds those of its keyword candidates that
have none (the best BM25 first, within a bound: one short model call), saves their vectors
for every later search, and asks the vector backend for their cosines like any other
candidate's. The ones past the bound are ranked on their words alone
(search/arm_mix.py) and the search says how many there were."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from memory_mcp.models import MemoryRecord, Visibility
from memory_mcp.search.ports import PreparedT, QueryVectors, ScanT, SearchStore

log = logging.getLogger(__name__)

# At most this many texts and characters embedded by one search: short memories cost about
# 10 ms each, a 2,000-character note chunk with its passages about 100 ms on this model.
FILL_TEXTS = 32
FILL_CHARS = 12_000


async def embed_unembedded(
    store: SearchStore,
    vectors: QueryVectors[ScanT, PreparedT],
    vis: Visibility,
    query: np.ndarray,
    keyword_hits: list[tuple[int, float]],
    vector_hits: list[tuple[int, float]],
    records: Mapping[int, MemoryRecord],
) -> tuple[list[tuple[int, float]], int]:
    """The (id, cosine) of the keyword candidates the vector arm had no vector for, once
    the first of them are embedded; and how many are still without one. `keyword_hits`
    best first; `records`: those of them already read whole."""
    judged = {memory_id for memory_id, _ in vector_hits}
    missing = [memory_id for memory_id, _ in keyword_hits if memory_id not in judged]
    if not missing:
        return [], 0
    unread = [memory_id for memory_id in missing if memory_id not in records]
    read = {**{i: records[i] for i in missing if i in records}, **await store.fetch_many(unread)}
    texts: list[str] = []
    chars = 0
    for memory_id in missing:
        record = read.get(memory_id)
        if record is None:  # deleted meanwhile
            continue
        # The first always fits (a long memory is one model call), unless FILL_TEXTS is 0.
        if len(texts) >= FILL_TEXTS or (texts and chars + len(record.value) > FILL_CHARS):
            break
        texts.append(record.value)
        chars += len(record.value)
    try:
        if texts:
            await vectors.embed_texts(texts)
        await vectors.search.catch_up()
        found = await vectors.search.nearest(query, vis, 0, missing)
    except Exception:  # the search goes on with their words; the worker embeds them later
        log.exception("embedding a search's keyword candidates failed")
        return [], len(missing)
    return found, len(missing) - len(found)


def unembedded_notice(count: int) -> str:
    """What a search says of the keyword candidates it could not embed in time."""
    some = (
        "1 memory matching the query's words has"
        if count == 1
        else (f"{count} memories matching the query's words have")
    )
    return (
        f"{some} no vector yet: ranked by their words alone (a server embeds them in the "
        "background; searching again embeds more)"
    )


# What a command with no background worker embeds of the whole store before it searches
# (the CLI's `search` and `context --query`: Vectors.embed_a_few_pending).
CATCH_UP_TEXTS = 64
CATCH_UP_CHARS = 16_000
PENDING_NOTICE = (
    "some memories have no vector yet (notes just indexed, hooks' memories): they are "
    "found by their words only until embedded; each search embeds a few, a running "
    "server all of them"
)


__all__ = [
    "CATCH_UP_CHARS",
    "CATCH_UP_TEXTS",
    "FILL_CHARS",
    "FILL_TEXTS",
    "PENDING_NOTICE",
    "embed_unembedded",
    "unembedded_notice",
]
