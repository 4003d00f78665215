"""A learning, as memory-inject-learning stores it: a swarm memory the lead owns, keyed by
its category and its normalised text (so injecting it twice is one memory), tagged with its
category. Who may write it is rules/permissions.py's (`learning:` keys are the lead's); the
write is MemoryService.inject_learning's."""

from __future__ import annotations

import hashlib
from typing import Any

from memory_mcp.checks import validation as v
from memory_mcp.checks.safety import redact_field, refuse_secret_name
from memory_mcp.errors import PermissionDeniedError
from memory_mcp.models import Caller, LearningCategory, Redaction, Scope, StoreRequest


def learning_request(
    caller: Caller,
    learning: str,
    category: LearningCategory,
    agent_id: str | None,
    project: str | None,
    max_value_chars: int,
) -> tuple[StoreRequest, list[Redaction]]:
    """The store of `learning` the lead `caller` asks for (refused for a worker), and the
    redactions made in its text. `agent_id`: the agent it is about, kept as about_agent."""
    if not caller.is_lead:
        raise PermissionDeniedError(
            f"memory-inject-learning is for the lead agent; {caller.agent_id!r} is a "
            "worker (store what you learned with memory-store, or ask the lead)"
        )
    text, redactions = redact_field(
        v.clean_value(learning, max_value_chars, field="learning"), "learning"
    )
    target = None if agent_id in (None, "") else v.clean_key(agent_id, "agent_id")
    if target is not None:  # kept as the learning's about_agent, shown to every agent
        refuse_secret_name(target, "agent_id", "agent_id")
    normalised = " ".join(text.lower().split())
    digest = hashlib.sha256(f"{category.value}\x1f{normalised}".encode()).hexdigest()[:16]
    metadata: dict[str, Any] = {"injected_by": caller.agent_id, "category": category.value}
    request = StoreRequest(
        key=f"learning:{category.value}:{digest}",
        value=text,
        scope=Scope.SWARM,
        tags=[category.value, "learning"],
        metadata=metadata,
        about_agent=target,
        project=project,
    )
    return request, redactions


__all__ = ["learning_request"]
