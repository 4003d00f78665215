"""Bearer tokens for the HTTP transports: who an HTTP caller is.

A token is 256 random bits shown once when it is made; the store keeps only its SHA-256
(a slow password hash buys nothing for a random secret of that size), with the agent id
and role it stands for. Every request looks its hash up again, so a revoked token is
refused by the very next request of every server process on the store."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from memory_mcp.checks.safety import refuse_secret_name
from memory_mcp.checks.validation import shown
from memory_mcp.errors import InvalidInputError, MemoryMcpError
from memory_mcp.models import EVERY_PROJECT, Role
from memory_mcp.rules.projects import ProjectNameError, check_project
from memory_mcp.store.token_rows import TokenRow, TokenStore

log = logging.getLogger(__name__)

TOKEN_PREFIX = "mmcp_"  # recognisable in a config file or a leaked log line
# `last used` is a hint for the operator, not an audit log: written at most once a
# minute per token, so a busy agent does not turn every request into a write.
MARK_USED_EVERY_SECONDS = 60.0


@dataclass(frozen=True)
class TokenHolder:
    """The identity a valid token stands for, and the projects it is granted (None:
    every project)."""

    agent_id: str
    role: Role
    projects: frozenset[str] | None = None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def checked_agent_id(agent_id: str) -> str:
    value = agent_id.strip()
    if not value or len(value) > 128 or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InvalidInputError("agent id", "must be 1-128 printable characters")
    return value


def checked_projects(projects: list[str] | None) -> list[str] | None:
    """Project names a token is granted (None or empty: every project); `*` is not one:
    every token reads `*`, and only one with every project writes it."""
    if not projects:
        return None
    names = []
    for name in projects:
        try:
            checked = check_project(name.strip())
        except ProjectNameError as exc:
            raise InvalidInputError("project", str(exc)) from None
        if checked == EVERY_PROJECT:
            raise InvalidInputError(
                "project", "* is every project: leave out --project to grant every one"
            )
        refuse_secret_name(checked, "project", "project")
        names.append(checked)
    return sorted(set(names))


def new_agent_id(agent_id: str) -> str:
    """The name of an agent a token or sign-in code is made for: stored as the owner of
    everything the agent writes and shown to every agent, so never a secret."""
    value = checked_agent_id(agent_id)
    refuse_secret_name(value, "agent id", "agent id")
    return value


def checked_role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise InvalidInputError("role", f"{shown(role)} is not one of worker, lead") from None


class AgentTokens:
    def __init__(self, store: TokenStore, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock
        self._marked: dict[int, float] = {}

    async def issue(
        self, agent_id: str, role: str = Role.WORKER.value, projects: list[str] | None = None
    ) -> str:
        """A new token for the agent (its other tokens stay valid), granted `projects`
        (None: every project); returned once, never stored."""
        agent, checked = new_agent_id(agent_id), checked_role(role)
        granted = checked_projects(projects)
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        await self._store.add(token_hash(token), agent, checked.value, self._clock(), granted)
        return token

    async def verify(self, token: str) -> TokenHolder | None:
        if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            return None
        return await self.verify_hash(token_hash(token))

    async def verify_hash(self, hashed: str) -> TokenHolder | None:
        """The holder of the token with this SHA-256, while it is valid (a web login keeps
        only the hash)."""
        row = await self._store.find(hashed)
        if row is None:
            return None
        await self._mark_used(row)
        granted = None if row.projects is None else frozenset(row.projects)
        return TokenHolder(row.agent_id, Role(row.role), granted)

    async def _mark_used(self, row: TokenRow) -> None:
        now = self._clock()
        last = self._marked.get(row.id, row.last_used_at or 0.0)
        if now - last < MARK_USED_EVERY_SECONDS:
            return
        self._marked[row.id] = now
        try:
            await self._store.mark_used(row.id, now)
        except MemoryMcpError as exc:  # a busy store delays the hint, never the request
            log.warning("could not record when a token was last used: %s", exc)

    async def listing(self) -> list[TokenRow]:
        return await self._store.all()

    async def revoke(self, agent_id: str) -> int:
        """Every token of the agent; returns how many there were."""
        return await self._store.revoke(checked_agent_id(agent_id))

    async def revoke_one(self, token_id: int) -> bool:
        """The token with this id (`token list` shows it); whether there was one."""
        return await self._store.revoke_one(token_id)

    async def exist(self) -> bool:
        return await self._store.count() > 0


__all__ = ["TOKEN_PREFIX", "AgentTokens", "TokenHolder", "token_hash"]
