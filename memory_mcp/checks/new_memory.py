"""The checks every stored memory passes, whoever writes it (a tool, an import line, a
note, a revert): sizes first, plain JSON, no secrets (refused in names, redacted in
data); flagged if it reads like instructions. The result is the NewMemory the store
upserts."""

from __future__ import annotations

from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.injection import content_flags
from memory_mcp.checks.safety import (
    redact_field,
    redact_json,
    refuse_secret_name,
    refuse_secret_names,
)
from memory_mcp.models import EVERY_PROJECT, Caller, NewMemory, Redaction, Scope, Source


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
    project: str = EVERY_PROJECT,
    task: str | None = None,
    archived_at: float | None = None,
    kind: str | None = None,
) -> NewMemory:
    """The rules every stored memory passes: sizes, plain JSON, no secrets (refused in
    the key, tags and metadata keys; redacted in the value and metadata values, see
    safety.py); flagged if it reads like instructions."""
    clean_key = v.clean_key(key)
    clean_value = v.clean_value(value, max_value_chars)
    clean_tags = v.clean_tags(tags)
    clean_metadata = v.clean_metadata(metadata)
    # After every size check, so scanning looks at bounded text only; on the tags as
    # given, before clean_tags lower-cased them.
    refuse_secret_names(clean_key, [tag.strip() for tag in tags])
    if file_path is not None:  # whole: a long path's key keeps only its first characters
        refuse_secret_name(file_path, "file_path", "file_path")
    if task is not None:
        refuse_secret_name(task, "task", "task")
    refuse_secret_name(project, "project", "project")  # a name every reader sees
    redactions: list[Redaction] = []
    safe_metadata = redact_json(clean_metadata, "metadata", redactions)
    safe_value, value_redactions = redact_field(clean_value, "value")
    return NewMemory(
        key=clean_key,
        value=safe_value,
        scope=scope,
        agent_id=caller.agent_id,
        session_id=caller.session_id if scope is Scope.SESSION else "",
        source=source,
        tags=clean_tags,
        metadata=safe_metadata,
        flags=content_flags(clean_key, safe_value),
        confidence=confidence,
        pinned=pinned,
        expires_at=expires_at,
        file_path=file_path,
        about_agent=about_agent,
        redactions=value_redactions + redactions,
        # Notes neither lend nor borrow words (store/write_context.py says why).
        written_session="" if source is Source.FILE_INDEX else caller.session_id,
        project=project,
        task=None if task is None else v.clean_key(task, "task"),
        archived_at=archived_at,
        kind=v.clean_kind(kind),
    )
