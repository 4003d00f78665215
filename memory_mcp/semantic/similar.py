"""Near-duplicates at write time: the memories a new one closely resembles, so the agent
that stores it can update one of them instead of adding a copy. Nothing is merged or
dropped: the write is done as asked, and `store_memory` reports what is similar.

Similar means standing out: the memory's vector and another's have a cosine of at least
SIMILAR_MIN_COSINE, and that cosine is at least SIMILAR_MIN_MARGIN above the background,
the mean cosine of the next BACKGROUND nearest memories (none: 0), among the memories the
writer can see (its own, its session's, the swarm's; never another agent's private ones)
in the new memory's project and `*` (and, for a task's working memory, its task's),
expired and archived ones left out. A cosine alone does not tell a repeat from a neighbour
in a store whose memories all sound alike: LoCoMo's chat turns ("Speaker: text", small
talk on a few topics) are 0.72 from their nearest earlier turn at the median, and a 0.60
threshold named a near-duplicate on 644 of 680 stores (`bench store`). A repeat stands out from
the rest of its neighbours; a chat turn rarely does. Measured with bench/near_duplicates.py
(the new memory's whole-text vector, as a store answers with it, against stored vectors),
pairs stored among 40 distinct memories of one agent's session
(bench/data/near_duplicates.json):

    margin over the background  min    p5     median
    repeat (20)                 0.569  0.573  0.649    all named
    paraphrase (40)             0.327  0.351  0.519    all named
    correction (20)             0.210  0.314  0.588    all named
    related (30)                0.023  0.030  0.179    3 of 30 named
    chat turns, cosine >= 0.60  p50 0.045, p95 0.149, p99 0.227

Named on 0.8-2.5 % of the stores of each dev conversation (LoCoMo, 2,755 turns; 95 % with
the cosine alone), on none of the session's 40 distinct memories, and on every repeat,
paraphrase and correction (the same subject with a changed fact: the case where updating
matters most). At a margin of 0.15 the chat rate is 6.8 % on one conversation; the
weakest correction stands out by 0.21. A false alarm costs the agent a glance and every
answer its tokens; a miss costs a duplicate. The price of the margin: a paraphrase stored
among many memories that are themselves close to it (a cluster of notes on one subject)
stands out less, and may not be named.

Cost: the new memory's vector is the one the write just computed (store_memory embeds
before it returns when the model is loaded), read back by its content hash; then one
nearest-neighbour scan, the same as a search's vector arm (a few milliseconds at 100k
memories), and one read of the few similar memories' keys. The memory-store tool runs it
through `store_and_check`: the index is caught up while the model runs and the check runs
beside the vector's save, so of its cost only the scan and the keys' read are on the
store's path. While the model is still
loading, a new text has no vector yet: the check is skipped and the result says so
(`checked` false) rather than answering "nothing similar"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp.models import EVERY_PROJECT, Caller, MemoryRecord, Visibility
from memory_mcp.semantic.similar_check import SimilarCheck, SimilarMemory

if TYPE_CHECKING:  # types only: the service hands in its own
    from memory_mcp.semantic.vectors import Vectors
    from memory_mcp.store.repository import MemoryStore

SIMILAR_MIN_COSINE = 0.60
SIMILAR_MIN_MARGIN = 0.20
BACKGROUND = 4  # the nearest memories after the first whose mean is the background
MAX_SIMILAR = 5


async def find_similar(
    vectors: Vectors, store: MemoryStore, caller: Caller, record: MemoryRecord, now: float
) -> SimilarCheck:
    """The memories `caller` can see that resemble `record` (not itself), most similar
    first, at most MAX_SIMILAR."""
    vector = await vectors.memory_vector(record)
    if vector is None:
        return SimilarCheck(checked=False)
    await vectors.search.catch_up()  # other processes' recent writes count too
    vis = Visibility(
        caller=caller,
        now=now,
        projects=frozenset({record.project, EVERY_PROJECT}),
        task=record.task,
    )
    nearest = await vectors.search.nearest(vector, vis, max(MAX_SIMILAR, BACKGROUND + 1) + 1)
    others = [(memory_id, cosine) for memory_id, cosine in nearest if memory_id != record.id]
    behind = [cosine for _, cosine in others[1 : BACKGROUND + 1]]
    background = sum(behind) / len(behind) if behind else 0.0
    close = [
        (memory_id, cosine)
        for memory_id, cosine in others
        if cosine >= SIMILAR_MIN_COSINE and cosine - background >= SIMILAR_MIN_MARGIN
    ][:MAX_SIMILAR]
    records = await store.fetch_many([memory_id for memory_id, _ in close])
    return SimilarCheck(
        [
            SimilarMemory(memory_id, records[memory_id].key, round(min(cosine, 1.0), 4))
            for memory_id, cosine in close
            if memory_id in records
        ]
    )


__all__ = ["BACKGROUND", "MAX_SIMILAR", "SIMILAR_MIN_COSINE", "SIMILAR_MIN_MARGIN", "find_similar"]
