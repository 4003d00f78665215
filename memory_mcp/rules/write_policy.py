"""Write criteria: which kinds of memory an agent's store keeps (off unless turned on).

Not everything an agent observes deserves to be stored long-term. With `write_policy` on,
a store_memory call (the tool, or `memory-mcp store`) must say its `kind`, and the policy
table decides: kinds it lists as true are stored, kinds it lists as false are refused, and
kinds it does not list are refused too (default deny), the error naming the rule. The
table is the agent-memory design's (`WRITE_KINDS`: preferences, facts, decisions,
strategies, verified tool results, summaries and notes are kept; intermediate reasoning,
failed tool calls and speculative inferences are not), changed per kind by the
`write_kinds` setting ({"conversation": false, "hypothesis": true}).

Off by default: a plain key/value store keeps what it is given. A lead turns it on for its
workers in their settings (MEMORY_MCP_WRITE_POLICY=true, or `write_policy = true` in the
settings file the workers' servers read; on a team server, for every agent it serves).
Imports, notes, the hooks' session summaries and the knowledge-graph profile are not an
agent's observations and are not judged."""

from __future__ import annotations

from collections.abc import Mapping

from memory_mcp.errors import InvalidInputError

WRITE_KINDS: dict[str, bool] = {
    "preference": True,
    "fact": True,
    "decision": True,
    "strategy": True,
    "tool_result": True,
    "session_summary": True,
    "conversation": True,
    "note": True,
    "intermediate_reasoning": False,
    "failed_tool_call": False,
    "speculative_inference": False,
}


def write_kinds(overrides: Mapping[str, bool]) -> dict[str, bool]:
    """The policy table: the built-in one, with the settings' `write_kinds` over it."""
    return {**WRITE_KINDS, **overrides}


def check_kind(kind: str | None, table: Mapping[str, bool] | None) -> None:
    """Refuse a write the policy does not keep (InvalidInputError naming `kind` and the
    rule); `table` None: the policy is off, everything is kept."""
    if table is None:
        return
    kept = sorted(name for name, keep in table.items() if keep)
    if kind is None:
        raise InvalidInputError(
            "kind",
            "the write policy is on: say what kind of memory this is "
            f"({', '.join(kept)}); a write without one is refused (default deny)",
        )
    if kind not in table:
        raise InvalidInputError(
            "kind",
            f"{kind!r} is not in the write policy, which refuses kinds it does not list "
            f"(default deny); it keeps {', '.join(kept)}",
        )
    if not table[kind]:
        raise InvalidInputError(
            "kind",
            f"not stored: the write policy refuses {kind!r} (write_kinds: {kind} = false); "
            "keep only what is worth knowing in a later session",
        )


__all__ = ["WRITE_KINDS", "check_kind", "write_kinds"]
