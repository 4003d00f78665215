"""memory-search's `expand`: the memories linked to a search's strong hits join its
candidates. A neighbour is ranked by the same score as every candidate (relevance x
prior); its relevance is the larger of its own (its cosine to the query, scaled like the
other candidates', and its words if the keyword arm found it) and what the link lends it:
`decay` x the relevance of the hit it is linked to. Only links whose both ends the caller
may see are followed (the far end passes the search's own filters in the same SQL), and
at most `fan_out` of each hit's links each way, newest first.

Whether it is on by default, and these numbers: measured on the LoCoMo development split
(docs/RETRIEVAL.md, "Links")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from memory_mcp.models import Link, Visibility
from memory_mcp.search.ranking_config import ExpandConfig


class CurrentLinks(Protocol):
    """What expansion takes of the store's links (store/link_rows.py, LinkStore)."""

    async def current(
        self,
        memory_ids: Sequence[int],
        direction: Literal["out", "in"],
        vis: Visibility,
        per_memory: int,
    ) -> list[Link]: ...


@dataclass(frozen=True)
class LinkedFrom:
    """Why a candidate came in (or rose) through a link: the seed it is linked to, the
    relation, the link's direction seen from the seed, and the relevance it lent."""

    seed_id: int
    relation: str
    direction: Literal["out", "in"]
    relevance: float


def seeds_of(scored: list[tuple[int, float, float]], config: ExpandConfig) -> dict[int, float]:
    """(id, score, relevance) of the candidates -> the seeds' relevance by id."""
    ranked = sorted(scored, key=lambda item: -item[1])
    if not ranked or ranked[0][1] <= 0.0:
        return {}
    floor = config.seed_share * ranked[0][1]
    return {i: relevance for i, score, relevance in ranked[: config.seeds] if score >= floor}


async def linked_neighbours(
    links: CurrentLinks, seeds: dict[int, float], vis: Visibility, config: ExpandConfig
) -> dict[int, LinkedFrom]:
    """The memories linked to the seeds that `vis` shows, each with the best relevance a
    link lends it (a seed linked to another seed may lift it too)."""
    found: dict[int, LinkedFrom] = {}
    for direction in ("out", "in"):
        for link in await links.current(list(seeds), direction, vis, config.fan_out):
            seed, far = (
                (link.source_id, link.target_id)
                if direction == "out"
                else (link.target_id, link.source_id)
            )
            lent = config.decay * seeds[seed]
            if far not in found or lent > found[far].relevance:
                found[far] = LinkedFrom(seed, link.relation, direction, lent)
    return found


__all__ = ["CurrentLinks", "LinkedFrom", "linked_neighbours", "seeds_of"]
