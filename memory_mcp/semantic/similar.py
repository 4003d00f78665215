"""Near-duplicates at write time: the memories a new one closely resembles, so the agent
that stores it can update one of them instead of adding a copy. Nothing is merged or
dropped: the write is done as asked, and `store_memory` reports what is similar.

Similar means a cosine similarity of the two memories' stored vectors (all-MiniLM-L6-v2,
passages recipe: the same vectors the search uses) of at least SIMILAR_MIN_COSINE, among
the memories the writer can see (its own, its session's, the swarm's; never another
agent's private ones) in the new memory's project and `*` (and, for a task's working
memory, its task's), expired and archived ones left out. Measured with bench/near_duplicates.py on
bench/data/near_duplicates.json (docs/RETRIEVAL.md, near-duplicates):

    pairs          n    min    p5     median  p95    max      share >= 0.60
    paraphrase     40   0.603  0.620  0.832   0.945  0.959    1.00
    correction     20   0.600  0.657  0.944   0.983  0.989    1.00
    same topic     30   0.185  0.215  0.424   0.592  0.607    0.03
    unrelated     780  -0.083 -0.026  0.094   0.264  0.469    0.00

At 0.60 every paraphrase and every correction (the same subject with a changed fact: the
case where updating matters most) is reported, one same-topic pair in thirty and no
unrelated pair; at 0.65 a paraphrase in fifteen is missed. A false alarm costs the agent a
glance; a miss costs a duplicate.

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
    nearest = await vectors.search.nearest(vector, vis, MAX_SIMILAR + 1)
    close = [
        (memory_id, cosine)
        for memory_id, cosine in nearest
        if memory_id != record.id and cosine >= SIMILAR_MIN_COSINE
    ][:MAX_SIMILAR]
    records = await store.fetch_many([memory_id for memory_id, _ in close])
    return SimilarCheck(
        [
            SimilarMemory(memory_id, records[memory_id].key, round(min(cosine, 1.0), 4))
            for memory_id, cosine in close
            if memory_id in records
        ]
    )


__all__ = ["MAX_SIMILAR", "SIMILAR_MIN_COSINE", "find_similar"]
