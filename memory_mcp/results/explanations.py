"""Why a search result ranks where it does (memory-search's `explain`): the parts of its
score, and for a result a link brought in, which link."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp.results.base import ToolResult

if TYPE_CHECKING:  # annotations only: nothing more to import before the handshake
    from memory_mcp.search.hits import RankedHit


class LinkVia(ToolResult):
    """The link that brought a result into an expanded search (or lifted it): to result
    `id` (a strong hit of the query), `relation`, `direction` seen from that hit ("out":
    the hit links to this result), and the relevance it lent (replacing a lower own one)."""

    id: int
    relation: str
    direction: str
    lent: float

    @classmethod
    def of(cls, hit: RankedHit) -> LinkVia | None:
        via = hit.via
        if via is None:
            return None
        return cls(
            id=via.seed_id,
            relation=via.relation,
            direction=via.direction,
            lent=round(via.relevance, 4),
        )


class ContextLender(ToolResult):
    """A memory of a result's context (the 3 memories written just before it and the 4
    just after it in its session, store/write_context.py) that holds query words."""

    id: int
    key: str


class ScoreExplanation(ToolResult):
    """Why a result is where it is: the parts of its score (search/ranking.py,
    search/exact_match.py).

        relevance = search_confidence * (0.7 * vector + 0.3 * keyword)   (default weights)
        prior     = recency * access * source_quality * trust
        score     = relevance * prior, then exact matches first:
                    (level + that) / (top level + 1), level 2 = exact key, 1 = identifier

    `keyword` and `vector` are scaled within this search (1.0: the best candidate);
    `bm25` and `cosine` are the raw arm scores; null: that arm did not find it.
    `confidence`: the memory's, as read now (its own, else its source's, less an
    unconfirmed inference's decay); `trust`: the factor it gives (1 at full confidence).
    `via` (expand): the link to a strong hit that lent it its relevance.
    `context_from`: the memories of its context (the 3 memories written just before it
    and the 4 just after it in its session) whose words hold query words; with
    matched_by "context" its own words hold none. `time`: the factor of the query's time
    expression (1.0: stated in its range; the search's `time_cue`)."""

    omitted_when_empty = frozenset({"via", "context_from", "time"})

    keyword: float | None
    bm25: float | None
    vector: float | None
    cosine: float | None
    search_confidence: float
    relevance: float
    recency: float
    access: float
    source_quality: float
    confidence: float
    trust: float
    pinned: bool
    prior: float
    exact: str | None  # "key": its key is the query; "identifier": holds one verbatim
    why: str
    via: LinkVia | None = None
    context_from: list[ContextLender] | None = None
    time: float | None = None

    @classmethod
    def of(cls, hit: RankedHit) -> ScoreExplanation | None:
        rel, prior = hit.parts, hit.prior
        if rel is None or prior is None:
            return None
        exact = {2: "key", 1: "identifier"}.get(hit.exact_level)
        return cls(
            keyword=_rounded(rel.keyword),
            bm25=_rounded(rel.bm25),
            vector=_rounded(rel.vector),
            cosine=_rounded(rel.cosine),
            search_confidence=round(rel.search_confidence, 4),
            relevance=round(rel.relevance, 4),
            recency=round(prior.recency, 4),
            access=round(prior.access, 4),
            source_quality=round(prior.source_quality, 4),
            confidence=round(prior.confidence, 4),
            trust=round(prior.trust, 4),
            pinned=hit.record.pinned,
            prior=round(prior.value, 4),
            exact=exact,
            why=_why(hit, exact),
            via=LinkVia.of(hit),
            context_from=[ContextLender(id=i, key=key) for i, key in hit.context_from],
            time=hit.time_factor,
        )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _why(hit: RankedHit, exact: str | None) -> str:
    """One line a model or a person can read: what found it, and what weighed on it."""
    rel, prior, record = hit.parts, hit.prior, hit.record
    assert rel is not None and prior is not None
    reasons = []
    if exact == "key":
        reasons.append("its key is the query (exact matches come first)")
    elif exact == "identifier":
        reasons.append("it holds an identifier of the query word for word (ranked first)")
    if hit.via is not None:
        via = hit.via
        arrow = (
            f"{via.seed_id} -[{via.relation}]-> it"
            if via.direction == "out"
            else (f"it -[{via.relation}]-> {via.seed_id}")
        )
        reasons.append(f"linked to a strong hit ({arrow}): relevance {via.relevance:.2f}")
    lenders = ", ".join(str(memory_id) for memory_id, _ in hit.context_from)
    if rel.keyword is not None and not rel.own_words:
        reasons.append(
            "query words only in its context (the 3 memories written just before it "
            f"and the 4 just after it in its session)"
            f"{f' ({lenders})' if lenders else ''}, not in itself "
            f"(keyword {rel.keyword:.2f} of this search's best)"
        )
    elif rel.keyword is not None:
        lent = f"; also in its context ({lenders})" if lenders else ""
        reasons.append(f"query words (keyword {rel.keyword:.2f} of this search's best){lent}")
    if rel.cosine is not None:
        reasons.append(f"meaning (cosine {rel.cosine:.2f})")
    if rel.search_confidence < 1.0:
        reasons.append(f"no query word anywhere: scaled by {rel.search_confidence:.2f}")
    if record.pinned:
        reasons.append("pinned: no decay")
    elif prior.recency < 0.995:
        reasons.append(f"age: recency x{prior.recency:.2f}")
    if hit.time_factor is not None:
        inside = hit.time_factor == 1.0
        reasons.append(
            "stated in the query's time range"
            if inside
            else f"stated outside the query's time range: x{hit.time_factor:.2f}"
        )
    reasons.append(f"source {record.source.value}: x{prior.source_quality:.2f}")
    if prior.trust < 1.0:
        reasons.append(f"confidence {prior.confidence:.2f}: trust x{prior.trust:.3f}")
    if record.access_count:
        reasons.append(f"read {record.access_count} times: x{prior.access:.2f}")
    return "; ".join(reasons)
