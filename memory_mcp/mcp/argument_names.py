"""A tool call's arguments checked by name, before their values: an argument the tool does
not take is refused (the SDK would drop it silently, and a misspelt `text` for `value`
became "invalid value: is required"), and every required argument that is missing is
named. The answer lists what the tool takes and, for an unknown name, what was probably
meant: a hint for a known mix-up, a synonym the tool takes, or a near spelling."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

# Words models reach for, and the arguments they mean (the first one the tool takes).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "text": ("value", "query", "learning"),
    "content": ("value", "learning"),
    "contents": ("value", "learning"),
    "memory": ("value", "learning"),
    "data": ("value",),
    "body": ("value",),
    "note": ("value", "learning"),
    "lesson": ("learning",),
    "name": ("key",),
    "key": ("id",),  # on a tool that takes no key: memory-history, memory-revert
    "title": ("key",),
    "q": ("query",),
    "search": ("query",),
    "question": ("query",),
    "k": ("limit",),
    "n": ("limit",),
    "top_k": ("limit",),
    "max_results": ("limit",),
    "count": ("limit",),
    "tag": ("tags",),
    "labels": ("tags",),
    "memory_id": ("id",),
    "memoryid": ("id",),
    "ttl": ("ttl_seconds",),
    "expires": ("expires_at", "ttl_seconds"),
    "expiry": ("expires_at", "ttl_seconds"),
    "agent": ("agent_id",),
    "agentid": ("agent_id",),
    "type": ("category",),
    "kind": ("category",),
    "older": ("older_than",),
}
# Mix-ups a synonym cannot fix: what to do instead.
READ_BY_ID = "It takes a memory's id; memory-get reads one by its key (with its id)."
HINTS: dict[tuple[str, str], str] = {
    ("memory-history", "key"): READ_BY_ID,
    ("memory-revert", "key"): READ_BY_ID,
    ("*", "agent_id"): "Who you are comes from the server (its --agent-id, or your token), "
    "never from an argument.",
    ("*", "session_id"): "The session is the connection's own, never an argument.",
}
SHOWN_NAME_CHARS = 60


def argument_problems(
    tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> str | None:
    """What is wrong with the arguments' names for a tool with this input schema, in one
    message; None when every name is known and every required one is given."""
    accepted: Sequence[str] = list(schema.get("properties") or {})
    required = [name for name in schema.get("required") or [] if name in accepted]
    unknown = [name for name in arguments if name not in accepted]
    missing = [name for name in required if name not in arguments]
    if not unknown and not missing:
        return None
    clauses = [_unknown(tool, name, accepted, missing) for name in unknown]
    if missing:
        plural = "s" if len(missing) > 1 else ""
        clauses.append(f"missing required argument{plural} {', '.join(map(repr, missing))}")
    takes = ", ".join(f"{name} (required)" if name in required else name for name in accepted)
    return f"{'; '.join(clauses)}. {tool} takes: {takes or 'no arguments'}"


def _unknown(tool: str, name: str, accepted: Sequence[str], missing: Sequence[str]) -> str:
    shown = repr(name[:SHOWN_NAME_CHARS] + ("…" if len(name) > SHOWN_NAME_CHARS else ""))
    meant = _meant(name, accepted, missing)
    hint = HINTS.get((tool, name)) or (None if meant else HINTS.get(("*", name)))
    parts = [f"did you mean {meant!r}?"] if meant else []
    if hint:
        parts.append(hint)
    return f"unknown argument {shown}" + (f" ({' '.join(parts)})" if parts else "")


def _meant(name: str, accepted: Sequence[str], missing: Sequence[str]) -> str | None:
    """The accepted name most likely meant: a missing required one first."""
    folded = name.lower().replace("-", "_")
    candidates = [c for c in SYNONYMS.get(folded.replace("_", ""), ()) if c in accepted]
    candidates += [c for c in SYNONYMS.get(folded, ()) if c in accepted]
    if folded in accepted:  # a case or hyphen slip: Key, older-than
        candidates.insert(0, folded)
    # Letters swapped (tgas: tags, not task, which difflib rates the same).
    candidates += [c for c in accepted if sorted(c) == sorted(folded)]
    candidates += difflib.get_close_matches(folded, accepted, n=3, cutoff=0.7)
    for candidate in candidates:
        if candidate in missing:
            return candidate
    return candidates[0] if candidates else None


__all__ = ["argument_problems"]
