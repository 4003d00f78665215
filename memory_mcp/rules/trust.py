"""How far a memory can be trusted: its confidence, and the marks a reader sees.

A memory's source says where it came from; the provenance levels (`user_stated` 1.0,
`tool_verified` 0.9, `agent_inferred` 0.6, `recalled` 0.5, `external` 0.3) are the agent-
memory design's, beside the sources that say how a memory was written (`manual`,
`task_completion`, `session_summary`, `file_index`). A memory stored without a confidence
has its source's (`TrustPolicy.default_confidence`), read here, never written: a changed
default applies to every such memory at once.

Unconfirmed inferences lose confidence as they age (`decaying` sources, `decay_per_day`
since the memory was last written; pinned ones never): the confidence a reader sees and
ranking uses is the decayed one, and rules/decay.py archives those under the floor.
Writing a memory again (its value, or its source: "confirming" it) starts its age anew.

The marks every read shows (search, get, list, history, the `<memories>` block, the CLI,
the web view):
- `stale`: older than `stale_after_days` and under `stale_below` confidence: review it,
  do not use it silently; `stale_reason` says both numbers;
- `needs_verification`: under `verify_below` confidence: verify it before acting on it.

Standard library only: the hooks' fast path (app/reads.py) renders the block with it."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_mcp.models import MemoryRecord, Source

DAY = 86_400.0

# The sources that say how a memory was written, not how it is known, keep full confidence:
# they rank and read as they did before there were provenance levels.
DEFAULT_CONFIDENCE: dict[Source, float] = {
    Source.MANUAL: 1.0,
    Source.TASK_COMPLETION: 1.0,
    Source.SESSION_SUMMARY: 1.0,
    Source.FILE_INDEX: 1.0,
    Source.USER_STATED: 1.0,
    Source.TOOL_VERIFIED: 0.9,
    Source.AGENT_INFERRED: 0.6,
    Source.RECALLED: 0.5,
    Source.EXTERNAL: 0.3,
}
# The sources whose memories lose confidence until confirmed.
DECAYING = frozenset({Source.AGENT_INFERRED, Source.RECALLED})
# The sources whose memories a quarantine applies to when their text gives orders
# (rules/quarantine.py); `external` is held whatever it says.
LOW_TRUST = frozenset({Source.AGENT_INFERRED, Source.RECALLED, Source.EXTERNAL})


@dataclass(frozen=True)
class TrustPolicy:
    """The knobs (Settings: source_confidence, stale_after_days, stale_below_confidence,
    verify_below_confidence, confidence_decay_per_day, confidence_floor)."""

    default_confidence: dict[Source, float] = field(
        default_factory=lambda: dict(DEFAULT_CONFIDENCE)
    )
    stale_after_days: float = 7.0
    stale_below: float = 0.8
    verify_below: float = 0.7
    decay_per_day: float = 0.01
    floor: float = 0.3
    decaying: frozenset[Source] = DECAYING

    def stated(self, source: Source, confidence: float | None) -> float:
        """The confidence a memory was stored with: its own, else its source's."""
        if confidence is not None:
            return confidence
        return self.default_confidence.get(source, 0.5)

    def confidence(
        self,
        source: Source,
        confidence: float | None,
        pinned: bool,
        updated_at: float,
        now: float,
    ) -> float:
        """The confidence a reader sees now: the stored one less its decay (a decaying
        source, not pinned, by the days since it was last written), never below 0."""
        stated = self.stated(source, confidence)
        if source not in self.decaying or pinned or self.decay_per_day <= 0:
            return stated
        days = max(now - updated_at, 0.0) / DAY
        return max(stated - self.decay_per_day * days, 0.0)

    def below_floor(
        self, source: Source, confidence: float | None, pinned: bool, updated_at: float, now: float
    ) -> bool:
        """Whether decay has taken it under the floor (rules/decay.py archives it)."""
        if source not in self.decaying or pinned:
            return False
        return self.confidence(source, confidence, pinned, updated_at, now) < self.floor


@dataclass(frozen=True)
class TrustMarks:
    """What a reader is told about a memory's trust (empty marks are left out)."""

    confidence: float
    stale: bool = False
    stale_reason: str | None = None
    needs_verification: bool = False


def marks(
    policy: TrustPolicy,
    source: Source,
    confidence: float | None,
    pinned: bool,
    updated_at: float,
    now: float,
) -> TrustMarks:
    """The marks of a memory of `source`, stored with `confidence` (None: its source's),
    last written at `updated_at`, read at `now`."""
    seen = policy.confidence(source, confidence, pinned, updated_at, now)
    age_days = max(now - updated_at, 0.0) / DAY
    stale = age_days > policy.stale_after_days and seen < policy.stale_below
    reason = None
    if stale:
        reason = (
            f"not confirmed for {int(age_days)} days (over {policy.stale_after_days:g}) "
            f"at confidence {seen:.2f} (under {policy.stale_below:g}): review before use"
        )
    return TrustMarks(round(seen, 4), stale, reason, seen < policy.verify_below)


def marks_of(policy: TrustPolicy, record: MemoryRecord, now: float) -> TrustMarks:
    """`marks` of a record read at `now`."""
    return marks(policy, record.source, record.confidence, record.pinned, record.updated_at, now)


def trust_factor(confidence: float, weight: float) -> float:
    """Ranking's trust term, in (0, 1]: 1 at full confidence, 1 - weight at none. Small
    (RankingConfig.trust_weight), so relevance still leads: of two memories equally
    relevant, the better attested ranks first."""
    return 1.0 - weight * (1.0 - min(max(confidence, 0.0), 1.0))


__all__ = [
    "DECAYING",
    "DEFAULT_CONFIDENCE",
    "LOW_TRUST",
    "TrustMarks",
    "TrustPolicy",
    "marks",
    "marks_of",
    "trust_factor",
]
