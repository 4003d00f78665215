"""A search, from the query to its ranked hits: the keyword arm (FTS5 or tsvector, with the
exact key and identifier lookups) and the vector arm (the query embedded while the index
catches up) run at once; their candidates are fused (search/ranking.py), scored with a
prior, exact matches first (search/exact_match.py), and only the results are read whole.
MemoryService.search applies the rules around it; every filter (scope, tags, source,
since/until, expiry) applies before either arm's top-k cut."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Generic

import anyio
import numpy as np

from memory_mcp.checks import validation as v
from memory_mcp.models import (
    Caller,
    KeywordQuery,
    MemoryRecord,
    Ranked,
    SearchRequest,
    Visibility,
)
from memory_mcp.search.exact_match import (
    ExactMatches,
    exact_first,
    exact_lookup,
    exact_matches,
    with_candidates,
)
from memory_mcp.search.expansion import LinkedFrom, linked_neighbours, seeds_of
from memory_mcp.search.hits import RankedHit, SearchResult
from memory_mcp.search.missing_vectors import embed_unembedded, unembedded_notice
from memory_mcp.search.past_versions import with_past_versions
from memory_mcp.search.ports import PreparedT, QueryVectors, ScanT, SearchStore
from memory_mcp.search.ranking import (
    PriorParts,
    Relevance,
    fuse,
    is_unrelated,
    prior_parts,
)
from memory_mcp.search.ranking_config import RankingConfig
from memory_mcp.search.time_cues import TimeCue, find_time_cue, in_range, time_factor, without_cue
from memory_mcp.search.time_filters import parse_time, parse_time_range
from memory_mcp.store.keyword import KEYWORD_COLUMN_WEIGHTS as KEYWORD_COLUMN_WEIGHTS
from memory_mcp.store.keyword import query_terms

if TYPE_CHECKING:
    from memory_mcp.rules.policy import Policy

# Whole records read with the ranking facts, past `limit`: a prior can lift a candidate
# over more relevant ones, and one result not read whole costs another read (~1 ms).
LIKELY_SLACK = 5


@dataclass
class _Candidate:
    """A search's candidate while it is ranked, before its whole record is read."""

    record: Ranked
    score: float
    relevance: Relevance
    prior: PriorParts
    level: int
    via: LinkedFrom | None = None
    time: float | None = None  # the time cue's factor (search/time_cues.py), if applied


async def search(
    store: SearchStore,
    vectors: QueryVectors[ScanT, PreparedT],
    policy: Policy,
    clock: Callable[[], float],
    caller: Caller,
    request: SearchRequest,
    projects: frozenset[str] | None = None,
) -> SearchResult:
    """The memories `caller` may see in `projects` (None: every project it may read)
    that best answer `request` (models.SearchRequest says what each of its fields does),
    ranked."""
    text = v.clean_query(request.query)
    limit = v.clean_limit(request.limit)
    now = clock()
    window = parse_time_range(request.since, request.until, now)
    floor = v.clean_min_score(request.min_score)
    vis = Visibility(
        caller=caller,
        scope=request.scope,
        tags=tuple(v.clean_tags(request.tags or [])),
        source=request.source,
        include_expired=request.include_expired,
        now=now,
        updated_since=window.since,
        updated_until=window.until,
        projects=projects,
        task=None if request.task is None else v.clean_key(request.task, "task"),
        include_archived=request.include_archived,
        include_superseded=request.include_superseded,
        as_of=None if request.as_of is None else parse_time(request.as_of, "as_of", now),
    )
    config = policy.ranking
    pool = max(limit * config.candidate_multiplier, config.min_candidates)

    keyword_hits: list[tuple[int, float]] = []
    # Time in the question ranks by when memories were stated, not by its words; an
    # explicit since/until wins over it.
    cue = None if request.since or request.until else find_time_cue(text, now)
    terms = query_terms(text)
    if cue is not None:
        terms = query_terms(without_cue(text, cue)) or terms
    vector_hits: list[tuple[int, float]] = []
    notices: list[str] = []
    semantic = await vectors.model_ready(policy.search_model_wait_seconds)
    if semantic:
        # What was stored while the model loaded is embedded first, or named: a search
        # never misses a memory by meaning without saying so.
        waiting = await vectors.embed_stored_while_loading()
        if waiting:
            notices.append(
                f"{waiting} memories stored while the embedding model loaded have no "
                "vector yet: they are found by keyword only until it is computed (seconds)"
            )
    query_vectors: list[np.ndarray] = []
    exact: list[ExactMatches] = []
    own_words: set[int] = set()  # keyword hits holding a query word themselves

    records: dict[int, MemoryRecord] = {}  # read whole: the exact candidates
    facts: dict[int, Ranked] = {}  # what ranking needs of the other candidates
    scans: list[ScanT | None] = []
    prepared: list[PreparedT | None] = []
    keyword_vectors: list[Mapping[int, np.ndarray]] = []  # the keyword candidates' vectors

    lookup = exact_lookup(text)
    keyword_query = KeywordQuery(
        terms=tuple(terms),
        limit=pool,
        column_weights=KEYWORD_COLUMN_WEIGHTS,
        key=lookup.key,
        identifiers=lookup.identifiers,
        key_limit=lookup.key_limit,
        identifier_limit=lookup.identifier_limit,
        records_for_holders_up_to=lookup.rare_up_to,
    )

    async def keyword_arm() -> None:
        # One read, with what ranking needs of its finds: afterwards only the vector
        # arm's own finds are left to read.
        finds = await store.keyword_finds(keyword_query, vis)
        keyword_hits.extend(finds.hits)
        exact.append(exact_matches(lookup, finds.holding, finds.exact_ids))
        records.update(finds.records)
        facts.update(finds.facts)
        own_words.update(finds.own_words)
        if semantic:  # read now, while the vector arm computes, not after both arms
            candidates = [memory_id for memory_id, _ in finds.hits]
            candidates += exact[0].candidate_ids
            keyword_vectors.append(await vectors.search.exact_vectors(candidates, vis))

    async def vector_arm() -> None:
        async with anyio.create_task_group() as index:  # catch up while the model embeds
            index.start_soon(vectors.search.catch_up)
            query_vectors.append(await vectors.embed_query(text))
        scans.append(await vectors.search.scan(query_vectors[0], vis))
        # Everything of the vector arm that needs no keyword candidate, beside the
        # keyword arm: a big index's shortlist and its exact vectors.
        prepared.append(await vectors.search.prepare(query_vectors[0], vis, pool, scans[0]))

    # The query embedding (a model thread) and the FTS5 query (a database thread)
    # overlap instead of adding up.
    async with anyio.create_task_group() as arms:
        if semantic:  # first: the query embedding is the longest part
            arms.start_soon(vector_arm)
        arms.start_soon(keyword_arm)
    # Exact keys and identifiers are ranked even if the keyword pool left them out.
    keyword_hits = with_candidates(keyword_hits, exact[0].candidate_ids)
    if semantic:
        query_vector = query_vectors[0]
        # The keyword candidates get their cosine too, so both arms judge each one.
        vector_hits = await vectors.search.nearest(
            query_vector,
            vis,
            pool,
            [memory_id for memory_id, _ in keyword_hits],
            scans[0],
            prepared[0],
            keyword_vectors[0] if keyword_vectors else None,
        )
        # Keyword candidates nobody embedded yet (a note, a hook's or the CLI's memory).
        filled, unembedded = await embed_unembedded(
            store, vectors, vis, query_vector, keyword_hits, vector_hits, records
        )
        vector_hits += filled
        if unembedded:
            notices.append(unembedded_notice(unembedded))
    else:
        notices.append(
            "semantic search is warming up (embedding model loading): "
            "these results come from keyword search only"
        )

    fused = fuse(keyword_hits, vector_hits, config)
    # An exact candidate holds the query in its own key or words (search/exact_match.py).
    own_words.update(exact[0].candidate_ids)
    for memory_id, rel in fused.items():
        rel.own_words = rel.keyword is None or memory_id in own_words
    # Ranking reads a few facts of each candidate; whole records are read for the
    # results only. In the same read as the vector arm's own finds' facts: the whole
    # records of the likely results, the most relevant candidates of either arm not
    # read whole yet (a score is the relevance times a prior of at most 1), so a
    # second read is seldom needed.
    facts.update(records)
    by_relevance = sorted((i for i in fused if i not in records), key=lambda i: -fused[i].relevance)
    likely_count = limit + LIKELY_SLACK
    rest = [i for i in by_relevance[likely_count:] if i not in facts]
    found, likely = await store.rank_facts(rest, by_relevance[:likely_count])
    facts.update(found)
    records.update(likely)
    facts.update(likely)
    matches = exact[0]
    candidates = []
    for memory_id, rel in fused.items():
        fact = facts.get(memory_id)
        if fact is None or is_unrelated(rel):  # deleted meanwhile, or unrelated
            continue
        parts = prior_parts(fact, vis.now, config)
        # Only an exact candidate can match exactly (search/exact_match.py), and the keyword
        # arm read every one of them whole.
        record = records.get(memory_id)
        level = matches.level(record) if record is not None else 0
        candidates.append(_Candidate(fact, rel.relevance * parts.value, rel, parts, level))
    expand = config.expand.on_by_default if request.expand is None else request.expand
    if expand:
        extra = _Expansion(store, vectors, vis, config, query_vectors[0] if semantic else None)
        candidates = await extra.expand(candidates, keyword_hits, vector_hits)
    if cue is not None and cue.anchor is not None:
        cue = await _anchored(store, cue, vis, config)
    applied = cue is not None and _apply_time_cue(candidates, cue)
    ranked = exact_first(candidates, lambda candidate: candidate.level)
    if floor is not None:
        # Scores decrease down the list (exact_first), so this keeps a prefix.
        ranked = [candidate for candidate in ranked if candidate.score >= floor]
    hits = await _whole_hits(store, ranked, records, limit)
    if vis.as_of is not None or vis.include_superseded:
        hits = await with_past_versions(store, hits, vis, terms, limit)
    if request.explain:
        await _name_lenders(store, hits, terms, Visibility(caller, include_expired=True, now=now))
    return SearchResult(hits, notices, semantic, cue, applied)


async def _anchored(
    store: SearchStore, cue: TimeCue, vis: Visibility, config: RankingConfig
) -> TimeCue | None:
    """ "since the release": from when the memory that best matches "release" was
    stated (None: no memory names it, and the query has no time cue)."""
    assert cue.anchor is not None
    words = tuple(query_terms(cue.anchor))
    if not words:
        return None
    query = KeywordQuery(words, 1, KEYWORD_COLUMN_WEIGHTS, None, (), 0, 0, 0)
    finds = await store.keyword_finds(query, vis)
    if not finds.hits:
        return None
    anchor_id = finds.hits[0][0]
    fact = finds.facts.get(anchor_id) or finds.records.get(anchor_id)
    if fact is None:
        facts, _ = await store.rank_facts([anchor_id])
        fact = facts.get(anchor_id)
    return None if fact is None else replace(cue, start=fact.updated_at, end=None)


def _apply_time_cue(candidates: list[_Candidate], cue: TimeCue) -> bool:
    """The time cue's factor on each candidate, if any was stated in its range
    (otherwise the range found nothing and ranking stays as it was)."""
    if cue.start is None and cue.end is None:
        return False
    if not any(in_range(c.record.updated_at, cue) for c in candidates):
        return False
    for candidate in candidates:
        candidate.time = time_factor(candidate.record.updated_at, cue)
        candidate.score *= candidate.time
    return True


async def _name_lenders(
    store: SearchStore, hits: list[RankedHit], terms: list[str], vis: Visibility
) -> None:
    """The neighbours that lent query words to the hits the keyword arm found, those the
    caller may see (any caller who sees a memory sees its lenders: write_context.py)."""
    found = [hit.record.id for hit in hits if hit.parts and hit.parts.keyword is not None]
    lent = await store.context_lenders(found, terms, vis)
    for hit in hits:
        hit.context_from = lent.get(hit.record.id, [])


async def _whole_hits(
    store: SearchStore, ranked: list[_Candidate], records: dict[int, MemoryRecord], limit: int
) -> list[RankedHit]:
    """The first `limit` candidates as hits with their whole records, read now where
    the search has only their facts; one deleted or damaged since is passed over."""
    hits: list[RankedHit] = []
    taken = 0
    while len(hits) < limit and taken < len(ranked):
        batch = ranked[taken : taken + limit - len(hits)]
        taken += len(batch)
        unread = [c.record.id for c in batch if c.record.id not in records]
        records.update(await store.fetch_many(unread))
        for c in batch:
            record = records.get(c.record.id)
            if record is not None:
                hits.append(
                    RankedHit(
                        record,
                        c.score,
                        c.relevance.relevance,
                        "link" if c.via is not None else c.relevance.matched_by,
                        c.relevance,
                        c.prior,
                        c.level,
                        c.via,
                        time_factor=c.time,
                    )
                )
    return hits


@dataclass
class _Expansion(Generic[ScanT, PreparedT]):
    """A search's `expand` step (search/expansion.py), on its ranked candidates."""

    store: SearchStore
    vectors: QueryVectors[ScanT, PreparedT]
    vis: Visibility
    config: RankingConfig
    query_vector: np.ndarray | None

    async def expand(
        self,
        candidates: list[_Candidate],
        keyword_hits: list[tuple[int, float]],
        vector_hits: list[tuple[int, float]],
    ) -> list[_Candidate]:
        settings = self.config.expand
        scored = [(c.record.id, c.score, c.relevance.relevance) for c in candidates]
        seeds = seeds_of(scored, settings)
        if not seeds:
            return candidates
        linked = await linked_neighbours(self.store.links, seeds, self.vis, settings)
        known = {c.record.id: c for c in candidates}
        new_ids = [memory_id for memory_id in linked if memory_id not in known]
        own = await self._own_relevance(new_ids, keyword_hits, vector_hits)
        facts, _ = await self.store.rank_facts(new_ids)
        for memory_id in new_ids:
            fact = facts.get(memory_id)
            if fact is not None:
                parts = prior_parts(fact, self.vis.now, self.config)
                rel = own.get(memory_id) or Relevance(memory_id)
                known[memory_id] = _Candidate(fact, rel.relevance * parts.value, rel, parts, 0)
        for memory_id, via in linked.items():
            candidate = known.get(memory_id)
            if candidate is None or via.relevance <= candidate.relevance.relevance:
                continue
            lifted = replace(candidate.relevance, relevance=via.relevance)
            candidate.relevance = lifted
            candidate.score = via.relevance * candidate.prior.value
            candidate.via = via
        return list(known.values())

    async def _own_relevance(
        self,
        new_ids: list[int],
        keyword_hits: list[tuple[int, float]],
        vector_hits: list[tuple[int, float]],
    ) -> dict[int, Relevance]:
        """The neighbours' own relevance on this search's scale: their cosines, raised to
        the lowest candidate's at least so that the other candidates' scaling (min-max)
        stays exactly as it was."""
        if not new_ids or self.query_vector is None or not vector_hits:
            return {}
        cosines = await self.vectors.search.nearest(self.query_vector, self.vis, 0, new_ids)
        lowest = min(cosine for _, cosine in vector_hits)
        raised = [(memory_id, max(cosine, lowest)) for memory_id, cosine in cosines]
        fused = fuse(keyword_hits, vector_hits + raised, self.config)
        own = {memory_id: fused[memory_id] for memory_id, _ in raised}
        for memory_id, cosine in cosines:
            own[memory_id].cosine = cosine
        return own
