"""Deleting memories: one by id or by key, and many at once (memory-delete,
memory-delete-many, `memory-mcp delete`). Each is decided by rules/permissions.py
(Change.DELETE; `bulk_rights` for many) before anything is removed; a note's memories
follow their file and are not deleted here. The memories are read through the gate."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memory_mcp.checks import validation as v
from memory_mcp.errors import InvalidInputError, NotFoundError
from memory_mcp.models import EVERY_PROJECT, Caller, MemoryRecord, Scope, Source, Visibility
from memory_mcp.rules import permissions
from memory_mcp.rules.browsing import (
    DEFAULT_DELETE_MANY_LIMIT,
    MAX_DELETE_MANY_LIMIT,
    DeleteManyResult,
    check_limit,
)
from memory_mcp.rules.note_memories import refuse_deleting_a_live_note
from memory_mcp.rules.permissions import Change, Target
from memory_mcp.rules.tasks import task_argument

if TYPE_CHECKING:
    from memory_mcp.rules.gate import Gate
    from memory_mcp.rules.service import MemoryService

log = logging.getLogger(__name__)


class DeleteService:
    """`memories`: where a key is looked up, as store_memory would (MemoryService.by_key)."""

    def __init__(self, gate: Gate, memories: MemoryService) -> None:
        self.gate = gate
        self.memories = memories

    async def delete(self, caller: Caller, memory_id: Any) -> int:
        record = await self.gate.read(caller, memory_id)
        return await self._delete_record(caller, record)

    async def delete_by_key(self, caller: Caller, key: str, scope: Scope = Scope.AGENT) -> int:
        """Delete the memory that store_memory(key, scope) by `caller` would update: its
        own in agent and session scope, the one swarm memory of that key in swarm scope;
        in its current project if it has one there, else in `*`."""
        clean = v.clean_key(key)
        record = await self.memories.by_key(caller, clean, scope)
        if record is None:
            raise NotFoundError(
                f"no {scope.value} memory with key {v.shown(clean, 80)} is visible to you"
                + await self._key_elsewhere(caller, clean, scope)
            )
        return await self._delete_record(caller, record)

    async def _key_elsewhere(self, caller: Caller, key: str, scope: Scope) -> str:
        """A hint when `key` names a memory `caller` can see in another scope."""
        for other in Scope:
            if other is scope:
                continue
            found = await self.memories.by_key(caller, key, other)
            if found is not None:
                return f"; there is a {other.value} one (memory {found.id}): scope={other.value!r}"
        return ""

    async def _delete_record(self, caller: Caller, record: MemoryRecord) -> int:
        permissions.check(caller, Target.of(record), Change.DELETE)
        refuse_deleting_a_live_note(record)
        await self.gate.store.delete([record.id])
        return record.id

    async def delete_many(
        self,
        caller: Caller,
        *,
        tags: list[str] | None = None,
        source: Source | None = None,
        older_than: float | None = None,
        scope: Scope | None = None,
        dry_run: bool = False,
        limit: int = DEFAULT_DELETE_MANY_LIMIT,
        project: str | None = None,
        task: str | None = None,
        include_archived: bool = False,
    ) -> DeleteManyResult:
        """Delete, in one transaction, the oldest `limit` memories `caller` could delete
        one by one (its own; the lead also swarm ones) that have all `tags`, come from
        `source` and were last updated at or before `older_than` (UNIX seconds); expired
        ones included. Notes are left to their files. `dry_run`: choose, delete nothing.
        `project`, `task`, `include_archived`: which memories, as for search; of those,
        only the ones in projects `caller` may change."""
        cleaned_tags = tuple(v.clean_tags(tags or []))
        if not cleaned_tags and source is None and older_than is None:
            raise InvalidInputError(
                "arguments",
                "give at least one of tags, source and older_than (they combine): "
                "which memories to delete",
            )
        if source is Source.FILE_INDEX:
            raise InvalidInputError(
                "source", "notes follow their files: edit or delete the files instead"
            )
        limit = check_limit(limit, MAX_DELETE_MANY_LIMIT)
        projects = permissions.may_write_in(caller, permissions.readable_projects(caller, project))
        vis = Visibility(
            caller=caller,
            scope=scope,
            tags=cleaned_tags,
            source=source,
            include_expired=True,
            now=self.gate.clock(),
            projects=projects,
            task=task_argument(task),
            include_archived=include_archived,
        )
        # The decision depends on whether the project is one the caller may change, which
        # every project of `projects` is.
        rights = permissions.bulk_rights(caller, min(projects or {EVERY_PROJECT}, default=""))
        chosen = await self.gate.store.bulk_delete(
            vis,
            updated_before=older_than,
            agent_id=caller.agent_id,
            swarm_too=rights.others_swarm,
            spared_swarm_prefix=None if rights.swarm_learnings else permissions.LEARNING_KEY_PREFIX,
            limit=limit,
            dry_run=dry_run,
        )
        deleted = 0 if dry_run else len(chosen.ids)
        if deleted:
            log.info("agent %s deleted %d memories in bulk", caller.agent_id, deleted)
        return DeleteManyResult(chosen.records, chosen.matched, chosen.refused, deleted, dry_run)


__all__ = ["DeleteService"]
