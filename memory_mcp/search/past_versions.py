"""A search's past: with `as_of`, each hit as the version that was current then; with
`include_superseded` or `as_of`, the replaced versions holding the query's words join
the hits, marked (`valid_to`: when they stopped holding; rules/validity.py).

A replaced version has no keyword index or vector of its own (only the current version
is indexed: what every default search pays for), so it is found by a substring test of
the query's words over the history of the memories the search may show, and scored by
the share of the words it holds at HISTORY_WEIGHT: below a current memory that holds
them all as strongly, above one that holds none."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from memory_mcp.models import MemoryRecord, PastVersion, Source, Visibility
from memory_mcp.search.hits import RankedHit
from memory_mcp.search.ports import SearchStore

HISTORY_WEIGHT = 0.5


def as_version(record: MemoryRecord, version: PastVersion) -> MemoryRecord:
    """`record` as it read in `version`, its window closed when the next replaced it."""
    ended = version.replaced_at
    if record.valid_to is not None:
        ended = min(ended, record.valid_to)
    try:
        source = Source(version.source)
    except ValueError:
        source = record.source
    return replace(
        record,
        value=version.value,
        version=version.version,
        tags=_json_or(version.tags, []),
        metadata=_json_or(version.metadata, {}),
        source=source,
        updated_by=version.updated_by or record.agent_id,
        updated_at=version.written_at,
        valid_to=ended,
    )


async def with_past_versions(
    store: SearchStore, hits: list[RankedHit], vis: Visibility, terms: list[str], limit: int
) -> list[RankedHit]:
    """`hits` as of `vis.as_of` (if given), with the replaced versions that hold query
    words, best first, `limit` of them."""
    if vis.as_of is not None:
        changed = [hit.record.id for hit in hits if hit.record.updated_at > vis.as_of]
        versions = await store.versions_at(changed, vis.as_of)
        for hit in hits:
            version = versions.get(hit.record.id)
            if version is not None:
                hit.record = as_version(hit.record, version)
    found = await store.past_versions_holding(terms, vis, limit)
    shown = {(hit.record.id, hit.record.version) for hit in hits}
    wanted = [v for v in found if (v.memory_id, v.version) not in shown]
    known = {hit.record.id: hit.record for hit in hits}
    known.update(await store.fetch_many([v.memory_id for v in wanted if v.memory_id not in known]))
    for version in wanted:
        record = known.get(version.memory_id)
        if record is None:
            continue
        text = version.value.lower()
        share = sum(term in text for term in terms) / len(terms)
        score = HISTORY_WEIGHT * share
        hits.append(RankedHit(as_version(record, version), score, score, "history"))
    hits.sort(key=lambda hit: -hit.score)
    return hits[:limit]


def _json_or(text: Any, default: Any) -> Any:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


__all__ = ["HISTORY_WEIGHT", "as_version", "with_past_versions"]
