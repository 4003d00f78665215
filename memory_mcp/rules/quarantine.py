"""Quarantine: memories stored but not served until the lead or the user approves them.

A memory is the next session's context: text copied from outside, or an agent's guess
that reads like orders to a model, is stored prompt injection waiting for a reader. The
`injection_policy` setting decides what happens to a memory whose text the injection
detector flags (checks/injection.py: instruction-like, remote images, hidden characters)
when it comes from a low-trust source (rules/trust.LOW_TRUST: agent_inferred, recalled,
external), and to every memory from `external`:

- `quarantine` (the default): stored, held. No read serves it — searches (both arms),
  lists, reads by id, the `<memories>` block, the knowledge graph, links, exports — to
  any agent, its writer included (store/visibility.py's condition, the vector index,
  permissions.can_see), until the lead approves it (`memory-mcp quarantine`, the web
  view); approving keeps its history. Storing it again from a trusted source with clean
  text releases it too.
- `reject`: the flagged text from a low-trust source is refused, naming the rule; a clean
  external memory is still held.
- `flag`: stored and served with its flags, as every other source's flagged text is.

Flagged text from the other sources keeps today's rule: stored and served, its flags
shown to every reader."""

from __future__ import annotations

from typing import Literal

from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Source
from memory_mcp.rules.trust import LOW_TRUST

InjectionPolicy = Literal["flag", "quarantine", "reject"]
POLICIES: tuple[InjectionPolicy, ...] = ("flag", "quarantine", "reject")


def held(source: Source, flags: list[str], policy: str) -> bool:
    """Whether a memory of `source` whose text got `flags` is quarantined under `policy`;
    InvalidInputError (naming the rule) where the policy refuses it."""
    flagged = bool(flags) and source in LOW_TRUST
    if policy == "flag":
        return False
    if flagged and policy == "reject":
        raise InvalidInputError(
            "value",
            f"reads like instructions to a model ({', '.join(flags)}) and its source is "
            f"{source.value}: refused by injection_policy=reject (store what it says in "
            "your own words, or ask the user to confirm it as user_stated)",
        )
    return flagged or source is Source.EXTERNAL


__all__ = ["POLICIES", "InjectionPolicy", "held"]
