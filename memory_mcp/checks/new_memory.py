"""The checks every stored memory passes, whoever writes it (a tool, an import line, a
note, a revert): sizes first, plain JSON, no secrets; flagged if it reads like
instructions. The result is the NewMemory the store upserts."""

from __future__ import annotations

from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.injection import content_flags
from memory_mcp.checks.safety import refuse_secrets_in
from memory_mcp.models import Caller, NewMemory, Scope, Source


def checked_memory(
    caller: Caller,
    max_value_chars: int,
    *,
    key: str,
    value: str,
    scope: Scope,
    source: Source,
    tags: list[str],
    metadata: dict[str, Any],
    confidence: float | None = None,
    pinned: bool = False,
    expires_at: float | None,
    file_path: str | None = None,
    about_agent: str | None = None,
) -> NewMemory:
    """The rules every stored memory passes: sizes, plain JSON, no secrets; flagged if
    it reads like instructions."""
    new = NewMemory(
        key=v.clean_key(key),
        value=v.clean_value(value, max_value_chars),
        scope=scope,
        agent_id=caller.agent_id,
        session_id=caller.session_id if scope is Scope.SESSION else "",
        source=source,
        tags=tags,
        metadata=v.clean_metadata(metadata),
        flags=[],
        confidence=confidence,
        pinned=pinned,
        expires_at=expires_at,
        file_path=file_path,
        about_agent=about_agent,
    )
    # After every size check: scanning and flagging look at bounded text only.
    refuse_secrets_in(
        {"key": new.key, "value": new.value, "tags": new.tags, "metadata": new.metadata}
    )
    new.flags = content_flags(new.key, new.value)
    return new
