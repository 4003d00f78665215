"""The tools' names: one style, `memory-<verb>` (kebab case, one `memory-` prefix), so the
tools sort together in a client's list and read as one family. The spec mixed two styles
(`store_memory` beside `memory-search`); most of its names were already `memory-*`, so the
odd ones were renamed:

    store_memory      -> memory-store
    inject-learning   -> memory-inject-learning

The old names stay for one release as aliases: the same tool, the same arguments and
results. They answer when called, but tools/list shows them (with a description that
starts "Deprecated alias of ...") only with `legacy_tool_names`: listed, they cost every
session their whole description again. Remove them in the release after (docs/TOOLS.md).

`LEAD_ONLY` tools are offered only to the lead: tools/list leaves them out for a worker
(sdk_patches.filter_tool_list), and calling one anyway is refused by the service."""

from __future__ import annotations

# Old name -> current name.
DEPRECATED_ALIASES: dict[str, str] = {
    "store_memory": "memory-store",
    "inject-learning": "memory-inject-learning",
}
LEAD_ONLY = frozenset({"memory-inject-learning", "inject-learning"})


def aliases_of(name: str) -> list[str]:
    """The deprecated names that still call the tool `name`."""
    return [alias for alias, current in DEPRECATED_ALIASES.items() if current == name]


def alias_description(alias: str, name: str, description: str) -> str:
    """The description an alias is listed with: the tool's own, after a warning that a
    model and a person both read first."""
    return (
        f"Deprecated alias of `{name}` (the old name, kept for one release): call `{name}` "
        f"instead; `{alias}` takes the same arguments and returns the same result.\n\n"
        f"{description}"
    )


__all__ = ["DEPRECATED_ALIASES", "LEAD_ONLY", "alias_description", "aliases_of"]
