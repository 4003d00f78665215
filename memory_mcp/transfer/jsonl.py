"""`memory-mcp import` and `memory-mcp export`: one memory per JSON line."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_mcp.checks.json_values import shown_value
from memory_mcp.checks.text_safety import json_text_for_terminal
from memory_mcp.checks.validation import (
    clean_key,
    iso,
    parse_optional_datetime,
    parse_source,
    parse_store_scope,
    shown,
)
from memory_mcp.errors import CapExceededError, InvalidInputError, MemoryMcpError
from memory_mcp.models import (
    EVERY_PROJECT,
    Caller,
    MemoryRecord,
    NewMemory,
    Scope,
    Source,
    StoreRequest,
)

if TYPE_CHECKING:
    from memory_mcp.rules.service import MemoryService

# The store's column for a session's name (store/schema.py), as for --session-id.
MAX_SESSION_CHARS = 128
# The fields of an exported line that make it a whole memory (export_lines writes them all).
WHOLE_LINE = frozenset({"tags", "metadata", "source", "pinned", "confidence", "expires_at"})
T = TypeVar("T")


class MemoryLine(BaseModel):
    """One line of an export: the store_memory fields plus who wrote it and when."""

    model_config = ConfigDict(extra="ignore")

    key: str
    # Text, or a JSON object or array (written as such by export: the type round-trips).
    value: str | dict[str, Any] | list[Any]
    scope: str = "agent"
    tags: list[str] = []
    metadata: dict[str, Any] = {}
    ttl_seconds: float | None = None
    expires_at: str | None = None
    source: str = "manual"
    confidence: float | None = None
    pinned: bool = False
    agent_id: str | None = None
    session_id: str | None = None
    # The session it was written in (store/write_context.py); by default the importing one.
    written_session: str | None = None
    about_agent: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    # Its project (a line that names none is stored in the importing command's current
    # project: StoreRequest.project None), and a task's working memory's task and, once
    # completed, when it was archived.
    project: str = EVERY_PROJECT
    task: str | None = None
    archived_at: str | None = None
    kind: str | None = None
    # Its validity window (rules/validity.py): from when it held, and until when, if a
    # correction closed it (which memory did is not carried: ids are the store's own).
    valid_from: str | None = None
    valid_to: str | None = None

    def store_request(self, project: str | None = None) -> StoreRequest:
        """The memory to store, dated by the line's `updated_at` (its own time); names the
        field at fault (InvalidInputError). Every source is allowed: an export holds them.
        `project`: where it goes instead of the line's own (`import --project`).

        Over a stored memory, as store_memory: the fields the line has are written, those
        it leaves out are kept (null counts as left out). A line with all of WHOLE_LINE,
        as `export` writes them, is the whole memory (StoreRequest.replace)."""
        given = self.model_fields_set

        def named(name: str, value: T) -> T | None:
            return value if name in given else None

        return StoreRequest(
            key=self.key,
            value=self.value,
            scope=parse_store_scope(self.scope),
            tags=named("tags", self.tags),
            metadata=named("metadata", self.metadata),
            ttl_seconds=self.ttl_seconds,
            expires_at=parse_optional_datetime(self.expires_at, "expires_at"),
            source=named("source", parse_source(self.source, tuple(Source))),
            confidence=self.confidence,
            pinned=named("pinned", self.pinned),
            about_agent=self.about_agent,
            written_at=parse_optional_datetime(self.updated_at, "updated_at"),
            # A line that names no project (another server's file, an export from before
            # projects) goes where the command works: --project, the work tree's, else *.
            project=project if project is not None else named("project", self.project),
            task=self.task,
            archived_at=parse_optional_datetime(self.archived_at, "archived_at"),
            kind=self.kind,
            valid_from=parse_optional_datetime(self.valid_from, "valid_from"),
            valid_to=parse_optional_datetime(self.valid_to, "valid_to"),
            replace=WHOLE_LINE <= given,
        )


@dataclass(frozen=True)
class PreparedLine:
    number: int
    caller: Caller
    memory: NewMemory
    written_at: float | None
    unit: str = "line"  # what `number` counts: a line, or a memory of a JSON export

    @property
    def where(self) -> str:
        return f"{self.unit} {self.number}"


def _session_name(given: str) -> str:
    """A line's `written_session`: at most as long as a session id may be."""
    name = clean_key(given, "written_session")
    if len(name) > MAX_SESSION_CHARS:
        raise InvalidInputError(
            "written_session", f"is {len(name):,} characters; the limit is {MAX_SESSION_CHARS}"
        )
    return name


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'line'}: {e['msg']}" for e in exc.errors())


def read_lines(path: Path) -> tuple[list[tuple[int, MemoryLine]], list[str]]:
    """Parse the whole file first, so a malformed file stores nothing at all."""
    parsed: list[tuple[int, MemoryLine]] = []
    errors: list[str] = []
    with path.open(encoding="utf-8", errors="strict") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                parsed.append((number, MemoryLine.model_validate_json(line)))
            except ValidationError as exc:
                errors.append(f"line {number}: {_problems(exc)}")
    return parsed, errors


def _is_swarm(scope: str) -> bool:
    try:
        return parse_store_scope(scope) is Scope.SWARM
    except InvalidInputError:  # a bad line: prepare_lines names it
        return False


def others_swarm_lines(
    lines: list[tuple[int, MemoryLine]], importer: str
) -> tuple[list[tuple[int, MemoryLine]], dict[str, int]]:
    """The lines to import and, by owner, the swarm memories of other agents left out.

    An agent's own export holds every swarm memory it may read, other agents' too: they
    are the team's, not the importer's, so importing that file again (a restore, a copy to
    another store) leaves them out, counted, rather than refusing the whole file or making
    them the importer's. Another agent's private memory in a file stays a bad line (the
    file is not the importer's export); `--keep-owners` keeps every line's owner."""
    kept: list[tuple[int, MemoryLine]] = []
    skipped: dict[str, int] = {}
    for number, line in lines:
        owner = line.agent_id or importer
        if owner != importer and _is_swarm(line.scope):
            skipped[owner] = skipped.get(owner, 0) + 1
            continue
        kept.append((number, line))
    return kept, skipped


def prepare_lines(
    service: MemoryService,
    lines: list[tuple[int, MemoryLine]],
    default: Caller,
    unit: str = "line",
    keep_owners: bool = False,
    project: str | None = None,
) -> tuple[list[PreparedLine], list[str]]:
    """Check every line with store_memory's own rules (MemoryService.prepare_memory), writing
    nothing: the memories to write, and one message per bad line (`unit` names what the
    numbers count in messages: "line 3", "memory 3"). `project`: every line's project
    (None: each line's own).

    The memories belong to the importing agent (`default`). A line whose `agent_id` names
    another agent is a bad line unless `keep_owners` (an operator restoring `export --all`):
    written as the importer's instead, another agent's private memory would silently
    become the importer's to read, and two agents' memories of one key would merge."""
    prepared: list[PreparedLine] = []
    errors: list[str] = []
    for number, line in lines:
        owner = line.agent_id or default.agent_id
        if owner != default.agent_id and not keep_owners:
            errors.append(
                f"{unit} {number}: a memory of agent {shown(owner, 80)} (its agent_id), and "
                f"this import writes as {default.agent_id!r}: use --keep-owners to keep the "
                "file's owners, or remove agent_id to make it yours"
            )
            continue
        caller = replace(default, agent_id=owner, session_id=line.session_id or default.session_id)
        try:
            request = line.store_request(project)
            memory = service.prepare_memory(caller, request)
            if line.written_session and memory.written_session:  # not a note's
                memory.written_session = _session_name(line.written_session)
        except MemoryMcpError as exc:
            errors.append(f"{unit} {number}: {exc}")
            continue
        prepared.append(PreparedLine(number, caller, memory, request.written_at, unit))
    return prepared, errors


async def check_cap(service: MemoryService, lines: list[PreparedLine]) -> None:
    """Refuse, before writing anything, an import that would take an agent past its cap:
    storing it would evict the least recently used memories, the imported ones first."""
    cap = service.policy.max_memories_per_agent
    if cap <= 0:
        return
    by_agent: dict[str, list[str]] = {}
    for line in lines:
        if line.memory.source is not Source.FILE_INDEX:  # notes do not count (see the store)
            by_agent.setdefault(line.memory.agent_id, []).append(line.memory.identity)
    for agent_id, identities in sorted(by_agent.items()):
        stored, new = await service.cap_usage(agent_id, identities)
        if stored + new > cap:
            raise CapExceededError(
                f"agent {agent_id!r} would hold {stored + new:,} memories ({stored:,} stored "
                f"+ {new:,} new in this file), over its cap of {cap:,} "
                "(MEMORY_MCP_MAX_MEMORIES_PER_AGENT); importing would evict memories, so "
                "nothing was imported. Raise the cap, delete memories or split the file."
            )


async def export_lines(records: AsyncIterator[MemoryRecord], out: TextIO | None = None) -> int:
    """Write `records` (the service decides which: what one agent may see, or all) to
    `out`, by default the stdout of the moment (not of import time)."""
    out = out or sys.stdout
    count = 0
    async for record in records:
        line = {
            "key": record.key,
            "value": shown_value(record.value, record.value_json),
            "scope": record.scope.value,
            "tags": record.tags,
            "metadata": record.metadata,
            "expires_at": iso(record.expires_at),
            "source": record.source.value,
            "confidence": record.confidence,
            "pinned": record.pinned,
            "agent_id": record.agent_id,
            "updated_by": record.updated_by,
            **({"about_agent": record.about_agent} if record.about_agent else {}),
            "session_id": record.session_id or None,
            **({"written_session": record.written_session} if record.written_session else {}),
            "created_at": iso(record.created_at),
            "updated_at": iso(record.updated_at),
            "project": record.project,
            **({"task": record.task} if record.task else {}),
            **({"archived_at": iso(record.archived_at)} if record.archived_at else {}),
            **({"kind": record.kind} if record.kind else {}),
            **(
                {"valid_from": iso(record.valid_from)}
                if record.valid_from not in (None, record.created_at)
                else {}
            ),
            **({"valid_to": iso(record.valid_to)} if record.valid_to is not None else {}),
        }
        out.write(json_text_for_terminal(json.dumps(line, ensure_ascii=False)) + "\n")
        count += 1
    return count
