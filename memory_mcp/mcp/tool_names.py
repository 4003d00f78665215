"""The tools' names. The five the product was specified with are the names tools/list shows:
`store_memory`, `memory-search`, `memory-get`, `memory-delete` and `inject-learning` (an agent
whose prompt says "call store_memory" must find that tool in the list). The others follow
the `memory-<verb>` style of the specified three (`memory-list`, `memory-link`, ...).

One release called the two odd ones `memory-store` and `memory-inject-learning`; clients
configured with those names keep working: an alias answers like its tool (the same
arguments and results), but tools/list shows it only with `legacy_tool_names` (listed, an
alias costs every session its tool's whole description again).

`LEAD_ONLY` tools are offered only to the lead: tools/list leaves them out for a worker
(sdk_patches.filter_tool_list), and calling one anyway is refused by the service."""

from __future__ import annotations

STORE = "store_memory"
INJECT_LEARNING = "inject-learning"

# Alias -> the tool it calls: the names of the release that renamed the two.
ALIASES: dict[str, str] = {
    "memory-store": STORE,
    "memory-inject-learning": INJECT_LEARNING,
}
LEAD_ONLY = frozenset({INJECT_LEARNING, "memory-inject-learning"})


def unlisted(lead: bool, list_aliases: bool) -> frozenset[str]:
    """The registered names tools/list leaves out: the aliases unless `list_aliases`, and
    the lead-only tools unless the caller is the `lead` (the one rule: the server's list
    and the Claude Desktop bundle's manifest, packaging/mcpb.py, both ask it)."""
    hidden = frozenset() if list_aliases else frozenset(ALIASES)
    return hidden if lead else hidden | LEAD_ONLY


def aliases_of(name: str) -> list[str]:
    """The other names that also call the tool `name`."""
    return [alias for alias, current in ALIASES.items() if current == name]


def alias_description(alias: str, name: str, description: str) -> str:
    """The description an alias is listed with (only with `legacy_tool_names`): the tool's
    own, after a line that names the tool it calls."""
    return (
        f"Alias of `{name}` (the name of an earlier release): `{alias}` takes the same "
        f"arguments and returns the same result.\n\n{description}"
    )


__all__ = [
    "ALIASES",
    "INJECT_LEARNING",
    "LEAD_ONLY",
    "STORE",
    "alias_description",
    "aliases_of",
    "unlisted",
]
