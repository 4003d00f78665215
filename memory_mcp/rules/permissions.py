"""Who may read a memory (`can_see`) and who may change one: the one decision (`decide`)
every write path asks.

The paths: store_memory and the lines of an import, memory-delete (by id or by key),
memory-delete-many, memory-revert, inject-learning, memory-link (and the
knowledge-graph profile's tools, which are stores, deletes and links), a note's memories
(the notes watcher, `memory-mcp index`, the PostToolUse hook, the team server's
`index-note`), and the CLI's commands, which call the same MemoryService methods. The
rules ask before they write: an upsert is decided once, by the gate (rules/gate.py,
`check_write`), which hands the store the answer for "if another agent holds this memory"
(`may_overwrite_others`; a change of links asks the same), which the
store applies to the row it reads under its write lock, so no other writer can slip in
between; a bulk delete hands the store the answer as which owners and keys it may choose
(`bulk_rights`).
`tests/rules/test_write_paths.py` lists every write path and fails when one is added without
being held to this.

The rules:
- An agent changes its own memories. Another agent's session and agent memories are
  invisible to it (can_see), so only a swarm memory can be another agent's.
- Another agent's swarm memory is changed or deleted by a lead only.
- A note's memories are changed like any memory, except on one path: a note the server
  read itself from a shared memory folder on its own disk (Origin.FOLDER: the watcher,
  `memory-mcp index`, the local PostToolUse hook). There the folder owns the note: the
  text is the file's, whoever can write the file already decides it, and every agent's
  server that watches the folder must be able to keep the note's memories in step with
  it (an edit, a deletion) whichever agent's server indexed it first. Note text that a
  caller sends (`index-note` on the team server) is only the caller's word: there the
  rule above holds, so a worker cannot rewrite or remove a note another agent indexed.
- A link belongs to the memory it starts from (its source): making or removing one changes
  that memory only, so it is decided as an update of the source, and the target needs only
  to be visible to the caller. Linking your memory to another agent's swarm memory is
  allowed (it changes nothing of theirs); linking from another agent's swarm memory takes
  a lead. Who may see a link: whoever may see both of its ends (rules/service.py).
- `learning:` keys are the lead's (inject-learning makes them): a worker may not
  store a memory with such a key in any scope, nor change or delete a swarm one, even
  one it owns from before this rule; its own private ones from before may be deleted.

Projects (rules/projects.py): a caller with grants (a team token made with `--project`)
reads its granted projects and `*`, and writes only its granted projects; only a caller
with every project (grants None: stdio, a token without `--project`) writes `*`. A lead
leads only within its grants: its lead powers over another agent's memory apply where that
memory's project is granted (`*`: with every project). Which projects a read covers is
`readable_projects` (the current project and `*` by default); where a write goes is
`written_project`. A task's working memories (swarm scope, a task id) are seen and
changed as the swarm memories of their project; completing a task is `check_task`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from memory_mcp.checks.text_safety import normalise_for_matching
from memory_mcp.errors import (
    InvalidInputError,
    MemoryMcpError,
    MemoryNotFoundError,
    PermissionDeniedError,
)
from memory_mcp.models import EVERY_PROJECT, Caller, MemoryRecord, NewMemory, Scope, Source
from memory_mcp.rules.projects import ProjectNameError, check_project

LEARNING_KEY_PREFIX = "learning:"


def can_see(caller: Caller, record: MemoryRecord) -> bool:
    """Whether `caller` may read `record`: in a project it may read, every swarm memory
    (a task's working memories too), its own agent memories and its own session's session
    memories. Every read path asks this: MemoryService's reads and links (rules/service.py),
    the knowledge graph (graph/profile.py), deletes. (By id: a memory of any project the
    caller may read; searches and lists cover fewer, `readable_projects`.) A memory held
    for approval (rules/quarantine.py) is seen by no one: the lead reviews it through the
    quarantine's own list."""
    if record.quarantined:
        return False
    return can_see_memory_of(
        caller, record.scope, record.agent_id, record.session_id, record.project
    )


def visible_or_not_found(
    caller: Caller, memory_id: int, record: MemoryRecord | None
) -> MemoryRecord:
    """`record`, read by `memory_id` (None: there is none), if `caller` may see it; else
    MemoryNotFoundError, the same answer whether it is missing or someone else's:
    existence is private. Every read by id asks this (MemoryService, app/reads.py)."""
    if record is None or not can_see(caller, record):
        raise MemoryNotFoundError(memory_id)
    return record


def may_review(caller: Caller, record: MemoryRecord) -> bool:
    """Whether `caller` may review `record`, held for approval (rules/quarantine.py): a
    lead, the memories it could see were they served (never another agent's private
    ones: the user reviews those acting as that agent with the lead's role)."""
    return caller.is_lead and can_see_memory_of(
        caller, record.scope, record.agent_id, record.session_id, record.project
    )


def check_reviewer(caller: Caller) -> None:
    """The memories held for approval are listed to a lead only."""
    if not caller.is_lead:
        raise PermissionDeniedError(
            f"only a lead may review the memories held for approval; {caller.agent_id!r} "
            "is a worker"
        )


def can_see_memory_of(
    caller: Caller, scope: Scope, owner: str, session_id: str, project: str = EVERY_PROJECT
) -> bool:
    """The rule itself, on what it reads of a memory (a link keeps these of its target)."""
    if not may_read_project(caller, project):
        return False
    if scope is Scope.SWARM:
        return True
    if owner != caller.agent_id:
        return False
    return scope is Scope.AGENT or session_id == caller.session_id


def may_read_project(caller: Caller, project: str) -> bool:
    return caller.grants is None or project == EVERY_PROJECT or project in caller.grants


def _may_write_project(caller: Caller, project: str) -> bool:
    if caller.grants is None:
        return True
    return project != EVERY_PROJECT and project in caller.grants


def _project_argument(project: object) -> str:
    try:
        return check_project(project.strip() if isinstance(project, str) else project)
    except ProjectNameError as exc:
        raise InvalidInputError("project", str(exc)) from None


def readable_projects(
    caller: Caller, asked: str | None = None, alone: bool = False
) -> frozenset[str] | None:
    """The projects a search, list, context block or export of `caller` covers (None: no
    project filter). `asked` None: its current project and `*`, or with no current project
    every project it may read; a name: that project and `*` (refused, naming `project`,
    if not granted); `*`: every project it may read. `alone` (with `asked`): that project
    only, without `*`'s memories; `*` alone: the shared memories only (the web view's
    "shared only", beside "every project")."""
    if alone and asked is not None:
        name = _project_argument(asked)
        if name != EVERY_PROJECT and not may_read_project(caller, name):
            raise PermissionDeniedError(
                f"project {name!r} is not one of yours ({_granted(caller)})"
            )
        return frozenset({name})
    if asked is None:
        if caller.project is not None:
            return frozenset({caller.project, EVERY_PROJECT})
        name = EVERY_PROJECT
    else:
        name = _project_argument(asked)
    if name == EVERY_PROJECT:
        return None if caller.grants is None else caller.grants | {EVERY_PROJECT}
    if not may_read_project(caller, name):
        raise PermissionDeniedError(f"project {name!r} is not one of yours ({_granted(caller)})")
    return frozenset({name, EVERY_PROJECT})


def current_project_of(grants: frozenset[str] | None, asked: str | None) -> str | None:
    """The current project of a team server's connection: the one it asked for (the
    `X-Memory-Project` header or `?project=`; `*`: none), refused, naming `project`, if
    the token is not granted it; none asked, a token granted one project works in it."""
    if asked is None:
        return next(iter(grants)) if grants is not None and len(grants) == 1 else None
    name = _project_argument(asked)
    if name == EVERY_PROJECT:
        return None
    if grants is not None and name not in grants:
        granted = ", ".join(sorted(grants)) or "none"
        raise PermissionDeniedError(f"project {name!r} is not one of this token's ({granted})")
    return name


def written_project(caller: Caller, asked: str | None = None) -> str:
    """The project a write of `caller` goes to: `asked` (a name or `*`), else its current
    project, else `*`. Refused, naming `project`, where it may not write."""
    name = (caller.project or EVERY_PROJECT) if asked is None else _project_argument(asked)
    if not _may_write_project(caller, name):
        if name == EVERY_PROJECT:
            raise PermissionDeniedError(
                "only an agent with every project may write to project '*'; give project "
                f"(one of {_granted(caller)})"
            )
        raise PermissionDeniedError(f"project {name!r} is not one of yours ({_granted(caller)})")
    return name


def _granted(caller: Caller) -> str:
    grants = sorted(caller.grants or ())
    return "yours: " + ", ".join(grants) if grants else "you have none"


class Origin(StrEnum):
    """Where the content of a write comes from."""

    CALLER = "caller"  # the caller's own words: tools, CLI, import, hooks, index-note
    FOLDER = "folder"  # a note this server read itself from a memory folder on its disk


class Change(StrEnum):
    """What a write does to a memory (the verb a refusal uses)."""

    UPDATE = "update"
    DELETE = "delete"
    REVERT = "revert"
    LINK = "link or unlink"  # a memory's links are its own: changed as an update is
    NOTE = "change or remove"  # a note's memories, replaced as a set
    MOVE = "move"  # to another project (`memory-mcp projects move`)
    COMPLETE = "complete"  # a task: archive or hand off its working memories
    # A memory held for approval (rules/quarantine.py): served, or deleted. A lead's only:
    # a worker that could approve one could launder the text it was told to hold.
    APPROVE = "approve or discard"


@dataclass(frozen=True)
class Target:
    """A memory as the decision sees it. `owner` None: whichever agent other than the
    caller holds the memory when the store writes (it reads that under its lock)."""

    key: str
    scope: Scope
    source: Source
    owner: str | None
    name: str  # how a refusal names it: "memory 614 ('deploy')", "note /x/deploy.md ..."
    project: str = EVERY_PROJECT

    @classmethod
    def of(cls, record: MemoryRecord) -> Target:
        if record.source is Source.FILE_INDEX and record.file_path:
            name = f"note {record.file_path} (memory {record.id})"
        else:
            name = f"memory {record.id} ({record.key!r})"
        return cls(record.key, record.scope, record.source, record.agent_id, name, record.project)

    @classmethod
    def task(cls, project: str, task: str, wrote_in: str | None) -> Target:
        """A task as completing it sees it: `wrote_in` the caller if it wrote in it (then
        it is as its own), else None (another agent's: the lead's to complete)."""
        name = f"task {task!r} of project {project!r}"
        return cls(task, Scope.SWARM, Source.MANUAL, wrote_in, name, project)

    @classmethod
    def written(cls, caller: Caller, new: NewMemory) -> Target:
        """The memory a write of `new` by `caller` makes, or updates if it is its own."""
        return cls(new.key, new.scope, new.source, caller.agent_id, f"key {new.key!r}", new.project)


def is_learning_key(key: str) -> bool:
    """Also when written with look-alikes: `ｌearning:` (fullwidth), `lеarning:` (a
    Cyrillic е) read as `learning:` to a person and a model listing the learnings."""
    return normalise_for_matching(key.strip()).startswith(LEARNING_KEY_PREFIX)


def decide(
    caller: Caller, target: Target, change: Change, origin: Origin = Origin.CALLER
) -> MemoryMcpError | None:
    """May `caller` make `change` to `target`, with content of `origin`? None if it may;
    otherwise the error to raise, naming the owner or the argument to change."""
    if not _may_write_project(caller, target.project):
        return PermissionDeniedError(
            f"{target.name} is in project {target.project!r}, which you may not change "
            f"({_granted(caller)})"
        )
    if change is Change.APPROVE and not caller.is_lead:
        return PermissionDeniedError(
            f"{target.name} is held for approval; only a lead may {change.value} it "
            f"({caller.agent_id!r} is a worker)"
        )
    if target.owner != caller.agent_id and not _may_change_anothers(caller, target, origin):
        if change is Change.COMPLETE:
            return PermissionDeniedError(
                f"{target.name}: you are not one of its agents; only its agents (the one "
                "that started it and those named with task_agents) or the lead may complete it"
            )
        owner = "another agent" if target.owner is None else f"agent {target.owner!r}"
        return PermissionDeniedError(
            f"{target.name} is a {target.scope.value} memory of {owner}; "
            f"only its owner or the lead may {change.value} it"
        )
    if is_learning_key(target.key) and not caller.is_lead:
        if change is Change.UPDATE:  # a write under a key the caller chose
            return InvalidInputError(
                "key",
                f"keys starting with {LEARNING_KEY_PREFIX!r} are the lead's (its "
                f"inject-learning makes them); {caller.agent_id!r} is a worker and may "
                "not store one: choose another key",
            )
        if change is not Change.DELETE or target.scope is Scope.SWARM:
            return PermissionDeniedError(
                f"{target.name} is a learning (its key starts with {LEARNING_KEY_PREFIX!r}); "
                f"only a lead may {change.value} it"
            )
    return None


def _may_change_anothers(caller: Caller, target: Target, origin: Origin) -> bool:
    if target.scope is not Scope.SWARM:
        return False  # another agent's private memory: not even a lead
    folder_note = origin is Origin.FOLDER and target.source is Source.FILE_INDEX
    return caller.is_lead or folder_note


def check(caller: Caller, target: Target, change: Change, origin: Origin = Origin.CALLER) -> None:
    """`decide`, raising its refusal."""
    refusal = decide(caller, target, change, origin)
    if refusal is not None:
        raise refusal


def may_overwrite_others(caller: Caller, new: NewMemory, origin: Origin = Origin.CALLER) -> bool:
    """The decision the store applies under its write lock: may this write update `new`'s
    memory if another agent holds it? (Only a swarm identity can be another agent's.)"""
    held_by_another = Target(new.key, new.scope, new.source, None, f"key {new.key!r}", new.project)
    return decide(caller, held_by_another, Change.UPDATE, origin) is None


def check_write(caller: Caller, new: NewMemory, origin: Origin = Origin.CALLER) -> bool:
    """The decision for one write of `new` (an upsert), made once: refused (raised) if
    `caller` may not write it as its own; otherwise whether the store may go ahead if
    another agent holds that memory when it writes (`may_overwrite_others`), which the
    store applies to the row it reads under its write lock. A write allowed over another
    agent's memory is allowed over the caller's own (the owner is the only difference),
    so that answer is asked first and settles both."""
    if may_overwrite_others(caller, new, origin):
        return True
    check(caller, Target.written(caller, new), Change.UPDATE, origin)
    return False


@dataclass(frozen=True)
class BulkRights:
    """What a bulk delete may choose besides the caller's own memories (notes never:
    they follow their files)."""

    others_swarm: bool  # other agents' swarm memories
    swarm_learnings: bool  # swarm memories keyed `learning:`, the caller's own included


def bulk_rights(caller: Caller, project: str) -> BulkRights:
    """The decision for memory-delete-many in `project`, which the store turns into SQL
    (the service asks once for each project the delete covers)."""
    anothers = Target("", Scope.SWARM, Source.MANUAL, None, "a swarm memory", project)
    learning = Target(LEARNING_KEY_PREFIX, Scope.SWARM, Source.MANUAL, caller.agent_id, "", project)
    return BulkRights(
        others_swarm=decide(caller, anothers, Change.DELETE) is None,
        swarm_learnings=decide(caller, learning, Change.DELETE) is None,
    )


def may_write_in(caller: Caller, projects: frozenset[str] | None) -> frozenset[str] | None:
    """Of `projects` (None: every project), those `caller` may change memories in (None:
    every project)."""
    if caller.grants is None:
        return projects
    return caller.grants if projects is None else projects & caller.grants


def check_task(caller: Caller, project: str, task: str, wrote_in: bool) -> None:
    """May `caller` complete (archive, or hand off) task `task` of `project`? A worker a
    task it wrote in (as its own memory); the lead any; only in a project it may change."""
    check(
        caller, Target.task(project, task, caller.agent_id if wrote_in else None), Change.COMPLETE
    )


__all__ = [
    "LEARNING_KEY_PREFIX",
    "BulkRights",
    "Change",
    "Origin",
    "Target",
    "bulk_rights",
    "can_see",
    "check",
    "check_write",
    "decide",
    "check_task",
    "current_project_of",
    "is_learning_key",
    "may_overwrite_others",
    "may_read_project",
    "may_write_in",
    "readable_projects",
    "visible_or_not_found",
    "written_project",
]
