"""Confidence decay: unconfirmed inferences fade, and under a floor they are archived.

An `agent_inferred` or `recalled` memory loses `decay_per_day` of confidence for every day
since it was last written (rules/trust.py computes the confidence a reader sees; nothing
is written while it fades). Once under `floor` it is archived: kept, with its history,
in exports and behind `include_archived`, but no longer served by default. Pinned memories
never decay. Storing it again (confirming it, best as `user_stated` or `tool_verified`)
gives it back its source's confidence and brings an archived one back.

The server runs it with the expiry purge (app/root.py's purge_worker, every
`purge_interval_seconds`); `memory-mcp decay --dry-run` lists what would go."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.models import MemoryRecord
from memory_mcp.rules.trust import TrustPolicy

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore


@dataclass(frozen=True)
class Faded:
    """A memory decay archives (or would): its confidence as read at that time."""

    record: MemoryRecord
    confidence: float


def below_floor(records: Iterable[MemoryRecord], trust: TrustPolicy, now: float) -> list[Faded]:
    """Those of `records` whose confidence has decayed under the floor by `now`, lowest
    confidence first (then oldest)."""
    faded = [
        Faded(r, trust.confidence(r.source, r.confidence, r.pinned, r.updated_at, now))
        for r in records
        if trust.below_floor(r.source, r.confidence, r.pinned, r.updated_at, now)
    ]
    faded.sort(key=lambda f: (f.confidence, f.record.updated_at, f.record.id))
    return faded


async def archive_faded(
    store: MemoryStore, trust: TrustPolicy, now: float, *, dry_run: bool = False
) -> list[Faded]:
    """Archive every agent's unconfirmed guesses that faded under the floor by `now`
    (MemoryService.decay); `dry_run`: only say which."""
    faded = below_floor(await store.unconfirmed(trust.decaying), trust, now)
    if not dry_run:
        await store.archive([f.record.id for f in faded], now)
    return faded


__all__ = ["Faded", "archive_faded", "below_floor"]
