"""The agent this machine has been until `memory-mcp setup` writes its first settings file,
and the memories only that agent sees (`setup`, and `doctor` after a setup that named
another agent).

Before any setup, the CLI, Claude Desktop and a hand-configured Claude Code are agent
`default` (or MEMORY_MCP_AGENT_ID's): the memories they stored in scope `agent` are that
agent's alone. A settings file naming another agent (the client's name, `claude-code`)
would leave every one of them out of sight at once, and `list` in a repository would go
from seven rows to one without a word. So setup keeps the earlier agent when it has such
memories (nothing moves, nothing is hidden) and says how to choose another; told to name
another (`--agent-id`), it does, and says how many memories that leaves behind and how to
read them again. Nothing is moved between agents: which agent a memory belongs to is who
may change it, and a setup is no time to hand a user's memories to a new owner unasked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.errors import MemoryMcpError
from memory_mcp.models import EVERY_PROJECT, Caller, Scope

if TYPE_CHECKING:
    from memory_mcp.app.context import AppContext
    from memory_mcp.settings import Settings


@dataclass(frozen=True)
class EarlierAgent:
    """The agent in effect before the settings file (`agent_id`), and how many memories
    only it sees (`own`: scope agent, every project)."""

    agent_id: str
    own: int


def earlier_agent() -> EarlierAgent:
    """The agent processes run as now (the environment and the defaults: there is no
    settings file yet) and its own memories in the store they open; 0 when there is no
    store or it cannot be read (setup must not fail for a count)."""
    from memory_mcp.settings import Settings

    settings = Settings()
    return EarlierAgent(settings.agent_id, own_memories(settings, settings.agent_id))


def own_memories(settings: Settings, agent: str) -> int:
    """How many memories in scope `agent` (unarchived, every project) `agent` owns in the
    store `settings` open; 0 when there is none or it cannot be read."""
    try:
        return _own_memories(settings, agent)
    except MemoryMcpError:
        return 0


def unseen_default_notice(settings: Settings, path: object) -> str | None:
    """For `doctor`: the memories of agent `default` (what memory-mcp was before a
    settings file named another agent) that the agent in effect does not see, and the
    line that reads them; None when there are none. A note, not a problem: the agent may
    be another on purpose."""
    from memory_mcp.settings import Settings

    default = str(Settings.model_fields["agent_id"].default)
    if settings.agent_id == default:
        return None
    own = own_memories(settings, default)
    if own == 0:
        return None
    return (
        f"the store holds {own} memories of agent {default!r}, which agent "
        f"{settings.agent_id!r} does not see; to read them, set agent_id = "
        f'"{default}" in {path}'
    )


def _own_memories(settings: Settings, agent: str) -> int:
    from memory_mcp.app.root import run_with_app

    async def job(app: AppContext) -> int:
        # Read as that agent, in no project: its view is what it would lose.
        caller = Caller(agent, settings.role, settings.session_id, None)
        count = 0
        async for record in app.service.visible_records(caller, EVERY_PROJECT):
            if record.scope is Scope.AGENT and record.agent_id == agent:
                count += record.archived_at is None
        return count

    return run_with_app(settings, job, create=False)


def kept_notice(earlier: EarlierAgent, client: str, path: object) -> str:
    """What setup says when it keeps the earlier agent instead of the client's name."""
    return (
        f"{client} will be agent {earlier.agent_id!r}, as memory-mcp has been here: the "
        f"store holds {earlier.own} memories of that agent, which an agent {client!r} "
        f"would not see. To make {client} an agent of its own instead (agent "
        f'{earlier.agent_id!r} keeps those memories), set agent_id = "{client}" in {path}'
    )


def left_behind_notice(earlier: EarlierAgent, agent: str, path: object) -> str:
    """What setup says when told to name another agent than the earlier one."""
    return (
        f"the store holds {earlier.own} memories of agent {earlier.agent_id!r} that agent "
        f"{agent!r} will not see; to keep reading them, set agent_id = "
        f'"{earlier.agent_id}" in {path}'
    )


__all__ = [
    "EarlierAgent",
    "earlier_agent",
    "kept_notice",
    "left_behind_notice",
    "own_memories",
    "unseen_default_notice",
]
