"""Plain data shapes shared by the service and the store. Over 500 lines: every layer's
shared vocabulary (a memory, its requests, its outcomes), plain declarations with no
logic to split by."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from enum import StrEnum
from typing import Any, Literal, NamedTuple, Protocol


class Scope(StrEnum):
    SESSION = "session"
    AGENT = "agent"
    SWARM = "swarm"


# How widely a memory of each scope is seen: by its owner in one session, by its owner, by
# every agent.
SCOPE_BREADTH = {Scope.SESSION: 0, Scope.AGENT: 1, Scope.SWARM: 2}


def seen_wherever(shown: tuple[Scope, str, str], wherever: tuple[Scope, str, str]) -> bool:
    """Whether every caller who can see a memory of (scope, owner, session) `wherever` can
    also see one of `shown`: a swarm memory is seen by all; an agent memory by its owner
    in every session; a session memory by its owner in that session only. (Expiry aside:
    both are the same writer's, and an expired memory is purged with its words.)"""
    scope, owner, session = shown
    other_scope, other_owner, other_session = wherever
    if scope is Scope.SWARM:
        return True
    if owner != other_owner or SCOPE_BREADTH[scope] < SCOPE_BREADTH[other_scope]:
        return False
    return scope is Scope.AGENT or session == other_session


class Source(StrEnum):
    """Where a memory came from. The first four say how it was written; the provenance
    levels after them say how far it can be trusted (rules/trust.py gives each a default
    confidence)."""

    MANUAL = "manual"
    TASK_COMPLETION = "task_completion"
    SESSION_SUMMARY = "session_summary"
    FILE_INDEX = "file_index"
    USER_STATED = "user_stated"  # the user said it directly
    TOOL_VERIFIED = "tool_verified"  # confirmed by a tool against an authoritative source
    AGENT_INFERRED = "agent_inferred"  # the model derived it: a hypothesis, not a fact
    RECALLED = "recalled"  # retrieved from past memory: may be stale
    EXTERNAL = "external"  # copied from outside (a web page, a document): untrusted


# The sources that say how far a memory can be trusted (rules/trust.py): storing a memory
# again with one of them, without a confidence, gives it that source's.
PROVENANCE_LEVELS = frozenset(
    {
        Source.USER_STATED,
        Source.TOOL_VERIFIED,
        Source.AGENT_INFERRED,
        Source.RECALLED,
        Source.EXTERNAL,
    }
)


# The kinds of memory the rules know (a memory's optional `kind`): what the write policy
# (which kinds are worth storing) and the lifetime per kind are stated in. The first eight
# are kept; the last three are the agent-memory seed's "don't store" observations, named so
# a policy can refuse them by name. Other kinds are accepted as given (a short identifier,
# KIND_PATTERN) unless a write policy is on, which refuses what it does not list.
KINDS = (
    "preference",
    "fact",
    "decision",
    "strategy",
    "tool_result",
    "session_summary",
    "conversation",
    "note",
    "intermediate_reasoning",
    "failed_tool_call",
    "speculative_inference",
)
KIND_PATTERN = r"[a-z][a-z0-9_]{0,39}"
# How long a memory of each kind lives when no TTL is given, in days (0: permanent): the
# seeds' "conversations 30d, facts 1y, preferences permanent", TTL per observation type.
# Settings.ttl_kind_days starts from this table; a kind not in it keeps its source's.
KIND_LIFETIME_DAYS: dict[str, float] = {
    "preference": 0,
    "fact": 365,
    "decision": 0,
    "strategy": 90,
    "tool_result": 7,
    "session_summary": 30,
    "conversation": 30,
    "note": 0,
    "intermediate_reasoning": 1,
    "failed_tool_call": 7,
    "speculative_inference": 7,
}


class LearningCategory(StrEnum):
    """What kind of lesson an inject-learning carries (its tag, and part of its key)."""

    MISTAKE_PATTERN = "mistake-pattern"
    BEST_PRACTICE = "best-practice"
    CODEBASE_KNOWLEDGE = "codebase-knowledge"
    PREFERENCE = "preference"


class Role(StrEnum):
    WORKER = "worker"
    LEAD = "lead"


# The project of memories that hold everywhere (facts about the person, preferences): read
# from every project. Every memory has one project: a name (rules/projects.py) or this.
EVERY_PROJECT = "*"


@dataclass(frozen=True)
class Caller:
    """Who is asking. Every rule about visibility and permission is decided from this."""

    agent_id: str
    role: Role
    session_id: str
    # Where its stores go and what its reads cover by default (with `*`); None: no current
    # project (reads see every project it may read, stores go to `*`).
    project: str | None = None
    # The projects it may read and write (and it reads `*`); None: every project.
    grants: frozenset[str] | None = None

    @property
    def is_lead(self) -> bool:
        return self.role is Role.LEAD


# A memory's value as given: text, or a JSON object or array (stored as compact JSON text
# and marked, so that a string that reads as JSON stays a string).
JsonValue = str | dict[str, Any] | list[Any]


@dataclass
class MemoryRecord:
    """One stored memory, as the store returns it. Timestamps are UNIX seconds (UTC)."""

    id: int
    key: str
    value: str
    scope: Scope
    agent_id: str
    session_id: str
    source: Source
    tags: list[str]
    metadata: dict[str, Any]
    flags: list[str]
    confidence: float | None
    pinned: bool
    version: int
    content_hash: str
    created_at: float
    updated_at: float
    expires_at: float | None
    last_accessed_at: float | None
    access_count: int
    file_path: str | None = None
    updated_by: str = ""  # who wrote this version; agent_id is the owner
    about_agent: str | None = None  # a learning: the agent it is about (not its owner)
    # The writer's session when this version was written (store/write_context.py).
    written_session: str = ""
    project: str = EVERY_PROJECT
    task: str | None = None  # a task's working memory (memory-complete-task archives it)
    archived_at: float | None = None  # UNIX seconds; found only with include_archived
    # Its validity window (rules/validity.py): what it says holds from `valid_from` (None:
    # from created_at) until `valid_to` (None: still current), when the memory
    # `superseded_by` corrected it. Found only with include_superseded or as_of.
    valid_from: float | None = None
    valid_to: float | None = None
    superseded_by: int | None = None
    # `value` is compact JSON text of an object or array given as such (checks/json_values.py),
    # not a string that happens to read as JSON.
    value_json: bool = False
    kind: str | None = None  # what kind of memory (KINDS), as its writer said; None: not said
    quarantined: bool = False  # held for approval: never served (rules/quarantine.py)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def holds_from(self) -> float:
        return self.created_at if self.valid_from is None else self.valid_from

    def superseded(self, now: float) -> bool:
        return self.valid_to is not None and self.valid_to <= now


class Ranked(Protocol):
    """What ranking reads of a memory (ranking.prior_parts): a MemoryRecord, or RankFacts
    where a search has not read the rest."""

    @property
    def id(self) -> int: ...
    @property
    def source(self) -> Source: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def updated_at(self) -> float: ...
    @property
    def last_accessed_at(self) -> float | None: ...
    @property
    def access_count(self) -> int: ...
    @property
    def confidence(self) -> float | None: ...


class RankFacts(NamedTuple):
    """A memory's Ranked facts alone: a search reads these for every candidate of its
    vector arm, and whole records only for the results it returns. (A tuple: built ~3x
    faster than a frozen dataclass, and a search builds dozens.)"""

    id: int
    source: Source
    pinned: bool
    updated_at: float
    last_accessed_at: float | None
    access_count: int
    confidence: float | None = None


@dataclass(frozen=True)
class StoreRequest:
    """One memory to store, as an edge (MCP tool, JSONL import line, hook) parsed it: the
    types are settled here, once; MemoryService.store_memory applies the rules (sizes,
    secrets, expiry bounds, the cap, permissions).

    `expires_at` and `written_at` are UNIX seconds. `written_at` keeps a memory's own time
    instead of now: an exported memory's (import), a transcript's last change (session
    summaries).

    None is "not given": a new memory gets the default (no tags, no metadata, manual,
    unpinned, no confidence, the source's lifetime), and an update of a stored one keeps
    what it has (NewMemory.kept; expiry kept unless ttl_seconds or expires_at is given).
    An empty list or object is given, and empties the field; so is `expires_at` math.inf
    (store_memory's "never"), which removes the expiry. `replace`: the call is the
    whole memory, what it leaves out gets the default as for a new one."""

    key: str
    value: JsonValue  # text, or a JSON object or array (checks/json_values.py)
    scope: Scope = Scope.AGENT
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    ttl_seconds: float | None = None
    expires_at: float | None = None
    source: Source | None = None
    confidence: float | None = None
    pinned: bool | None = None
    expected_version: int | None = None
    about_agent: str | None = None  # a learning, or an imported one: the agent it is about
    written_at: float | None = None
    project: str | None = None  # a name or `*`; None: the caller's current project
    task: str | None = None  # a working memory of this task (scope swarm)
    archived_at: float | None = None  # an imported memory of a completed task
    kind: str | None = None  # what kind of memory it is (KINDS); None: not given
    replace: bool = False
    # A correction (rules/validity.py): the id of the memory this one supersedes, whose
    # window closes when this is stored; and from when this holds (None: now); until
    # when it held (an imported memory that a correction had closed; None: it holds).
    supersedes: int | None = None
    valid_from: float | None = None
    valid_to: float | None = None
    task_agents: list[str] | None = None  # with task: agents named to share it

    def kept(self) -> frozenset[str]:
        """The fields an update keeps from the stored memory: those not given."""
        if self.replace:
            return frozenset()
        absent = {
            "tags": self.tags is None,
            "metadata": self.metadata is None,
            "source": self.source is None,
            # A provenance level without a confidence brings its own (rules/trust.py):
            # storing a guess again as user_stated confirms it, whatever it was stored at.
            "confidence": self.confidence is None and self.source not in PROVENANCE_LEVELS,
            "pinned": self.pinned is None,
            "expires_at": self.ttl_seconds is None and self.expires_at is None,
            "about_agent": self.about_agent is None,
            "kind": self.kind is None,
        }
        return frozenset(name for name, missing in absent.items() if missing)


# What an update may keep from the stored memory (StoreRequest.kept, NewMemory.kept): the
# store's column names. Key, value and scope are always given; flags follow the value.
KEEPABLE = frozenset(
    {"tags", "metadata", "source", "confidence", "pinned", "expires_at", "about_agent", "kind"}
)


@dataclass(frozen=True)
class SearchRequest:
    """One search, as a way in (memory-search, `memory-mcp search`, the web view, the
    knowledge-graph profile, the <memories> block) parsed it: built once there and passed
    down whole; the search checks the values (search/pipeline.py).

    `scope` None: every scope the caller can see. `since`/`until`: only memories last
    changed (updated_at) in that window, an ISO date-time or an age such as "7d"
    (search/time_filters.py); like every filter they apply before either arm's top-k cut.
    `min_score`: leave out results scoring below it (the same score the results show).
    `expand`: the memories linked to the strong hits join the candidates (None: the
    measured default, search/expansion.py). `explain`: each hit the keyword arm found
    names the neighbours whose words it borrowed (search/hits.RankedHit.context_from).
    `project`: which projects (None: the current one and `*`; rules/permissions.readable_projects);
    `task`: that task's working memories too; `include_archived`: completed tasks' too.
    Built by keyword, but for the query: `SearchRequest("deploys", limit=5)`."""

    query: str
    _: KW_ONLY
    limit: int = 10
    scope: Scope | None = None
    tags: list[str] | None = None
    source: Source | None = None
    include_expired: bool = False
    since: str | None = None
    until: str | None = None
    min_score: float | None = None
    expand: bool | None = None
    explain: bool = False
    project: str | None = None
    # `project` alone, without `*`'s memories; `*` alone: the shared ones only, not every
    # project's (permissions.readable_projects).
    project_alone: bool = False
    task: str | None = None
    include_archived: bool = False
    # Corrected memories and replaced versions too, marked (rules/validity.py); `as_of`
    # (as `since`: an ISO date-time or an age): what was current then, each memory as its
    # version of that time.
    include_superseded: bool = False
    as_of: str | None = None


@dataclass(frozen=True)
class NoteChunk:
    """One chunk of a note file to mirror as a memory (source file_index): what the notes
    feature hands the service (MemoryService.store_note_chunk). `key` is stable for the
    chunk; `expires_at` (UNIX seconds) is the whole file's expiry."""

    file_path: str
    scope: Scope
    key: str
    value: str
    metadata: dict[str, Any]
    expires_at: float | None
    project: str = EVERY_PROJECT


@dataclass(frozen=True)
class Redaction:
    """A secret replaced by `[REDACTED:<kind>]` before storing: in which field (and where
    inside it: "metadata.db.url"), what kind (a rule id such as "github-pat"), and which
    characters [start, end) of that text as it was given."""

    field: str
    kind: str
    start: int
    end: int


@dataclass
class NewMemory:
    """What the service asks the store to write for one memory."""

    key: str
    value: str
    scope: Scope
    agent_id: str  # the writer: owner of a new memory, `updated_by` of an update
    session_id: str
    source: Source
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    confidence: float | None = None
    pinned: bool = False
    expires_at: float | None = None
    file_path: str | None = None
    about_agent: str | None = None
    redactions: list[Redaction] = field(default_factory=list)  # what was taken out
    # The session the writer was in, whatever the scope (session_id above is the scope's):
    # the 3 memories it wrote just before this one there and the 4 just after lend it
    # their words (store/write_context.py). Empty: none (notes; a write with no session).
    written_session: str = ""
    # Columns (KEEPABLE) an update takes from the stored memory instead of from this one:
    # what the write was not given. The store reads them under its write lock, so a
    # change made meanwhile is kept too. A new memory has the defaults above.
    kept: frozenset[str] = frozenset()
    project: str = EVERY_PROJECT
    task: str | None = None
    archived_at: float | None = None  # kept archived (an import); a store revives it
    # From when what it says holds (rules/validity.py); None: from when it is written.
    # Until when: only an import of a closed memory gives it (a store opens it again).
    valid_from: float | None = None
    valid_to: float | None = None
    value_json: bool = False  # `value` is an object or array as compact JSON
    kind: str | None = None
    quarantined: bool = False  # held for approval (rules/quarantine.py)

    @property
    def identity(self) -> str:
        return memory_identity(
            self.key, self.scope, self.agent_id, self.session_id, self.project, self.task
        )


def memory_identity(
    key: str, scope: Scope, owner: str, session: str, project: str, task: str | None
) -> str:
    """The upsert identity: swarm memories by key, session ones also by session; in a
    named project, prefixed by it (a `*` memory keeps the identity it had before
    projects); a task's memories by project, task and key (one key space per task,
    shared by its agents)."""
    if task is not None:
        return f"task\x1f{project}\x1f{task}\x1f{key}"
    if scope is Scope.SWARM:
        identity = f"swarm\x1f{key}"
    elif scope is Scope.SESSION:
        identity = f"session\x1f{owner}\x1f{session}\x1f{key}"
    else:
        identity = f"agent\x1f{owner}\x1f{key}"
    return identity if project == EVERY_PROJECT else f"p\x1f{project}\x1f{identity}"


@dataclass
class Placement:
    """What memory-complete-task or `projects move` did in `project`: the ids of the
    memories archived, and of those moved (to another task or project)."""

    project: str
    archived: list[int] = field(default_factory=list)
    moved: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Visibility:
    """What a caller may see, plus the filters of one query; applied before any top-k cut."""

    caller: Caller
    scope: Scope | None = None  # None: every scope the caller can see
    tags: tuple[str, ...] = ()
    source: Source | None = None
    include_expired: bool = False
    now: float = 0.0
    # Only memories last changed (updated_at, UNIX seconds) within these bounds, both
    # included; None leaves a side open (memory_mcp/search/time_filters.py parses them).
    updated_since: float | None = None
    updated_until: float | None = None
    # The projects a read covers (permissions.readable_projects); None: no project filter
    # beyond the caller's grants, which apply always (`shown_projects`).
    projects: frozenset[str] | None = None
    # Task memories: none (None), those of this task too, or every task's (`every_task`:
    # reads by id, which show a task memory like any memory of its project).
    task: str | None = None
    every_task: bool = False
    include_archived: bool = False
    # Memories a correction closed (valid_to passed) pass too; `as_of` (UNIX seconds):
    # only those whose window held then (rules/validity.py), whatever `now` says of them.
    include_superseded: bool = False
    as_of: float | None = None

    @property
    def shown_projects(self) -> frozenset[str] | None:
        """The projects whose memories pass: those asked for, within what the caller may
        read (its grants and `*`); None: every project."""
        grants = self.caller.grants
        if grants is None:
            return self.projects
        readable = grants | {EVERY_PROJECT}
        return readable if self.projects is None else self.projects & readable


@dataclass(frozen=True)
class KeywordQuery:
    """What a search asks of the store's words, answered in one read (`KeywordFinds`):
    BM25 over `terms`, the memories keyed `key` (ignoring case), those holding each of
    `identifiers` as a phrase, and what ranking needs of what was found."""

    terms: tuple[str, ...]  # keyword.query_terms of the query
    limit: int  # BM25 hits wanted
    column_weights: tuple[float, float, float, float]  # key, value, tags, context
    key: str | None
    identifiers: tuple[str, ...]
    key_limit: int
    identifier_limit: int
    # An identifier's holders are exact candidates, read whole, only if there are at most
    # this many (a common one does not single a memory out: search/exact_match.py).
    records_for_holders_up_to: int


@dataclass
class KeywordFinds:
    hits: list[tuple[int, float]]  # (id, BM25 relevance, larger is better), best first
    # The exact candidates: the memories keyed by the query, then the holders of each
    # identifier held by at most `records_for_holders_up_to` memories.
    exact_ids: list[int]
    holding: list[list[int]]  # per identifier
    # The exact candidates (keyed, rare holders) whole: whether they match exactly is
    # read in their text. The other hits as facts: ranking needs no more of them.
    records: dict[int, MemoryRecord]
    facts: dict[int, RankFacts]
    # The hits whose own words (key, value, tags) hold a query word; the others matched
    # only their context's words (store/write_context.py).
    own_words: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class PastVersion:
    """A replaced version of a memory, and its window: written at `written_at` (the
    memory's creation for version 1, else when the version before it was replaced) and
    current until `replaced_at`."""

    memory_id: int
    version: int
    value: str
    tags: str  # JSON text, as stored
    metadata: str
    source: str
    updated_by: str | None
    written_at: float
    replaced_at: float


@dataclass
class UpsertOutcome:
    record: MemoryRecord
    created: bool
    changed: bool
    evicted_ids: list[int] = field(default_factory=list)
    # An update that made the writer the owner (MemoryStore.upsert's take_over): who
    # owned it before.
    taken_over_from: str | None = None
    redactions: list[Redaction] = field(default_factory=list)  # secrets not stored


@dataclass(frozen=True)
class Caps:
    """How many memories may live (not archived; notes not counted) per owner and per
    project before the least recently used are archived (store/eviction.py); 0: no cap."""

    per_agent: int = 0
    per_project: int = 0


@dataclass(frozen=True)
class BatchItem:
    """One memory of a batch write (import): what to write, the time it is written at
    (its own, for an exported memory), and whether it may update another agent's."""

    memory: NewMemory
    now: float
    may_overwrite_others: bool = False


@dataclass
class BatchOutcome:
    """What one committed batch did. `refused` holds (index in the batch, reason) for the
    items the store refused (another agent's swarm memory): nothing of them was written."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: list[tuple[int, str]] = field(default_factory=list)
    evicted_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Link:
    """A typed, directed link between two memories, as the store keeps it: from
    `source_id` to `target_id`, `relation` in active voice ("works_at", "depends_on").
    `removed_at` None: a current link; otherwise history (removed_by None: its target was
    deleted). `target_scope`, `target_owner`, `target_session`, `target_project`: what
    decides who may see the target, kept for a target that is gone."""

    id: int
    source_id: int
    target_id: int
    relation: str
    created_by: str
    created_at: float
    target_scope: Scope
    target_owner: str
    target_session: str
    removed_by: str | None = None
    removed_at: float | None = None
    target_project: str = EVERY_PROJECT


@dataclass
class LinkOutcome:
    """What one change of a memory's links did: the links made and removed, and how many
    of the asked-for changes were already so (nothing written for them)."""

    added: list[Link] = field(default_factory=list)
    removed: list[Link] = field(default_factory=list)
    unchanged: int = 0


# Listing pages (store/browsing.py, rules/browsing.py). Here rather than in the store: the MCP
# edge imports rules/browsing.py before the handshake, and the store package pulls in SQLAlchemy.
Order = Literal["updated", "created"]


@dataclass(frozen=True)
class Position:
    """Where a page ended: the order's timestamp and the id of its last memory. The next
    page starts strictly after it, so rows written meanwhile never shift a page."""

    at: float
    id: int


# Keys of memories that mirror a note (notes/indexer.py); reserved so that no other memory
# can take a note's identity or be taken over by the indexer (rules/service.py refuses them).
NOTE_KEY_PREFIX = "file:"
