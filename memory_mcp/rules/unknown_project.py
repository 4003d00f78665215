"""A read that names a project holding no memories says so: `project: "acme/Alpha"` (a
case away from `acme/alpha`) or a name that is not one returned the memories of `*` alone
and no word about it. The notice names the project that differs only in case, if there is
one, else the command that lists them. Only a read that names a project pays for the
check (one indexed lookup: the store's `ix_memories_project`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory_mcp.models import EVERY_PROJECT, Caller
from memory_mcp.rules.permissions import may_read_project

if TYPE_CHECKING:
    from memory_mcp.store.repository import MemoryStore


async def notices(store: MemoryStore, caller: Caller, asked: str | None) -> list[str]:
    """[] unless `asked` names a project (not `*`) in which the store holds nothing."""
    if asked is None or asked.strip() in ("", EVERY_PROJECT):
        return []
    name = asked.strip()
    if await store.has_project(name):
        return []
    near = [p for p in await store.projects_named_like(name) if may_read_project(caller, p)]
    hint = (
        f"did you mean {near[0]!r}? (project names are case-sensitive)"
        if near
        else "`memory-mcp projects` lists the projects"
    )
    return [f"project {name!r} holds no memories: only those of * are shown; {hint}"]


__all__ = ["notices"]
