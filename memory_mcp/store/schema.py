"""Tables. Timestamps are UNIX seconds (REAL): compared as numbers, never as ISO text."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, LargeBinary, String, Text, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class MemoryRow(Base):
    __tablename__ = "memories"
    # AUTOINCREMENT: ids are never reused, so a deleted id can never come back to life
    # in another process's vector index.
    __table_args__ = (
        Index("ix_memories_owner_lru", "agent_id", "pinned", "last_used_at"),
        Index("ix_memories_scope", "scope", "agent_id", "session_id"),
        # Search looks up a memory whose key is the query, ignoring (ASCII) case.
        Index("ix_memories_key_lower", text("lower(key)")),
        # Listing newest first (store/browsing.py) walks these instead of sorting.
        Index("ix_memories_updated", "updated_at", "id"),
        Index("ix_memories_created", "created_at", "id"),
        # A write reads what its writer wrote just before in the same session, and a
        # delete what was written just after (store/write_context.py).
        Index("ix_memories_written", "updated_by", "written_session", "written_order", "id"),
        # A project's reads (its memories and `*`'s: `project IN (...)`) find its rows
        # without passing other projects' ones; a project's listing walks it newest first.
        Index("ix_memories_project", "project", "updated_at", "id"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    identity: Mapped[str] = mapped_column(Text, unique=True)
    key: Mapped[str] = mapped_column(Text)
    value: Mapped[str] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(String(16))
    # The owner: who may update (swarm) or delete it besides the lead.
    agent_id: Mapped[str] = mapped_column(String(128))
    # Who wrote the current version (the owner, or the lead updating a swarm memory).
    # Nullable only because older databases gain it by ALTER TABLE (store/migrations.py).
    updated_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    # The agent a learning is about; it does not own it (the lead that injected it does).
    about_agent: Mapped[str | None] = mapped_column(String(128), nullable=True)
    session_id: Mapped[str] = mapped_column(String(128), default="")
    source: Mapped[str] = mapped_column(String(32))
    tags: Mapped[str] = mapped_column(Text, default="[]")
    meta: Mapped[str] = mapped_column("metadata", Text, default="{}")
    flags: Mapped[str] = mapped_column(Text, default="[]")
    confidence: Mapped[float | None] = mapped_column(Float, nullable=True)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=1)
    content_hash: Mapped[str] = mapped_column(String(64), index=True)
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    last_accessed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # max(updated, accessed): the eviction order, kept as a column so it can be indexed.
    last_used_at: Mapped[float] = mapped_column(Float)
    access_count: Mapped[int] = mapped_column(Integer, default=0)
    file_path: Mapped[str | None] = mapped_column(Text, nullable=True, index=True)
    revision: Mapped[int] = mapped_column(Integer, index=True)
    # The writer's session (any scope), when in it this version was written (the write's
    # revision; `revision` above also moves when a vector is stored), and its context, the
    # words of the 3 memories written just before it and the 4 just after it in its
    # session: a fourth, lighter column of the keyword
    # index (store/write_context.py). Nullable: older stores gain them by ALTER TABLE.
    written_session: Mapped[str | None] = mapped_column(String(128), nullable=True)
    written_order: Mapped[int | None] = mapped_column(Integer, nullable=True)
    context: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Its project (rules/projects.py), `*` for every project; a task's working memory has
    # its task id, and once the task is completed the time it was archived (UNIX seconds).
    project: Mapped[str] = mapped_column(String(100), default="*", server_default="*")
    task: Mapped[str | None] = mapped_column(String(256), nullable=True)
    archived_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Its validity window (rules/validity.py): from when what it says holds (when it was
    # stated, unless the writer said otherwise) until a correction closed it (`valid_to`,
    # NULL while current), and which memory corrected it. Nullable: older stores gain them
    # by ALTER TABLE (valid_from backfilled from created_at).
    valid_from: Mapped[float | None] = mapped_column(Float, nullable=True)
    valid_to: Mapped[float | None] = mapped_column(Float, nullable=True)
    superseded_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # `value` is a JSON object or array as compact JSON (checks/json_values.py), not text.
    value_json: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))
    # What kind of memory it is (models.KINDS: preference, fact, decision...), given by its
    # writer; the write policy and the lifetime per kind read it. NULL: not said.
    kind: Mapped[str | None] = mapped_column(String(40), nullable=True)
    # Held for the lead's approval (rules/quarantine.py): stored, never served.
    quarantined: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("FALSE"))


class MemoryTagRow(Base):
    __tablename__ = "memory_tags"

    memory_id: Mapped[int] = mapped_column(
        ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)


class MemoryHistoryRow(Base):
    """Previous values of a memory: corrections overwrite but keep what was there."""

    __tablename__ = "memory_history"
    # memory-history reads a memory's newest versions first, a page at a time.
    __table_args__ = (Index("ix_memory_history_versions", "memory_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    memory_id: Mapped[int] = mapped_column(
        ForeignKey("memories.id", ondelete="CASCADE"), index=True
    )
    version: Mapped[int] = mapped_column(Integer)
    value: Mapped[str] = mapped_column(Text)
    tags: Mapped[str] = mapped_column(Text)
    meta: Mapped[str] = mapped_column("metadata", Text)
    source: Mapped[str] = mapped_column(String(32))
    replaced_at: Mapped[float] = mapped_column(Float)
    # Who wrote this (replaced) version.
    updated_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    value_json: Mapped[bool] = mapped_column(Boolean, default=False, server_default=text("false"))


class MemoryLinkRow(Base):
    """A typed, directed link from one memory (`source_id`) to another (`target_id`).
    A link is never updated in place: removing it sets `removed_at`/`removed_by`, and the
    row stays as its history (a link made again is a new row). Its rows go when its source
    memory is deleted (with the source's own history); when its target is deleted the link
    is removed (`removed_by` NULL) and the row stays. The target's scope, owner and session
    are copied in (`target_*`; the project follows the target when it is moved to another
    project), so who may see a removed link is known after its target is gone."""

    __tablename__ = "memory_links"
    __table_args__ = (
        Index("ix_memory_links_source", "source_id", "id"),
        Index("ix_memory_links_target", "target_id", "id"),
        # One current link per (source, target, relation); removed ones are history.
        Index(
            "ux_memory_links_current",
            "source_id",
            "target_id",
            "relation",
            unique=True,
            sqlite_where=text("removed_at IS NULL"),
            postgresql_where=text("removed_at IS NULL"),
        ),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source_id: Mapped[int] = mapped_column(ForeignKey("memories.id", ondelete="CASCADE"))
    target_id: Mapped[int] = mapped_column(Integer)  # no foreign key: outlives its target
    relation: Mapped[str] = mapped_column(String(128))
    created_by: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[float] = mapped_column(Float)
    removed_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    removed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    target_scope: Mapped[str] = mapped_column(String(16))
    target_owner: Mapped[str] = mapped_column(String(128))
    target_session: Mapped[str] = mapped_column(String(128), default="")
    target_project: Mapped[str] = mapped_column(String(100), default="*", server_default="*")


class EmbeddingRow(Base):
    """One vector per distinct content and model: repeated text is embedded once."""

    __tablename__ = "embeddings"

    content_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    model: Mapped[str] = mapped_column(String(128), primary_key=True)
    dimension: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[float] = mapped_column(Float)
    # True: the whole text's vector alone, stored as a memory was written; its passages
    # are still to come (semantic/vectors.py), and until then searches rank with this.
    # NULL: the memory's vector, passages included. Nullable: older stores gain it by ALTER.
    whole_only: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class TombstoneRow(Base):
    """Deleted ids with the revision that deleted them, so other processes' indexes catch up."""

    __tablename__ = "memory_tombstones"

    memory_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, index=True)


class StoreMetaRow(Base):
    """Counters: `revision` grows with every committed change to memories;
    `context_recipe` says which rule made the write-time contexts (migrations.py)."""

    __tablename__ = "store_meta"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(Integer)


class TaskAgentRow(Base):
    """An agent of a task (rules/task_agents.py): who may write in the task's working
    memories, update any of them and complete the task. The first is the agent that
    wrote first in it; the others are named by an agent of the task or a lead."""

    __tablename__ = "task_agents"

    project: Mapped[str] = mapped_column(String(100), primary_key=True)
    task: Mapped[str] = mapped_column(String(256), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    named_by: Mapped[str] = mapped_column(String(128))
    named_at: Mapped[float] = mapped_column(Float)


class AgentTokenRow(Base):
    """A bearer token for the HTTP transports: who it is (agent, role), never the token
    itself, only its SHA-256. Kept in the store so every server process on it agrees, and
    a revocation (the row deleted) is seen by the next request of every one of them."""

    __tablename__ = "agent_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    agent_id: Mapped[str] = mapped_column(String(128), index=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[float] = mapped_column(Float)
    last_used_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    # The projects it is granted, a JSON list; NULL: every project.
    projects: Mapped[str | None] = mapped_column(Text, nullable=True)


# -- OAuth 2.1 (memory_mcp/auth/oauth.py): every secret below is kept as its SHA-256 only,
# except a client's secret, which the SDK's client authentication compares as sent (a
# client secret alone opens nothing: codes are PKCE-bound, refresh tokens are hashed).


class OAuthClientRow(Base):
    """A client registered by dynamic client registration (RFC 7591): its registration as
    the SDK answered it (JSON). Clients that never obtained a grant are dropped after a day."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    registration: Mapped[str] = mapped_column(Text)
    client_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[float] = mapped_column(Float, index=True)


class OAuthRequestRow(Base):
    """An authorization request waiting for a person on the sign-in page."""

    __tablename__ = "oauth_requests"

    request_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64), index=True)
    redirect_uri: Mapped[str] = mapped_column(Text)
    redirect_uri_explicit: Mapped[bool] = mapped_column(Boolean)
    code_challenge: Mapped[str] = mapped_column(String(128))
    state: Mapped[str | None] = mapped_column(Text, nullable=True)
    scopes: Mapped[str] = mapped_column(Text)  # space-separated
    resource: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)


class OAuthLoginCodeRow(Base):
    """A one-time sign-in code (`memory-mcp token add AGENT --oauth-code`): who it stands for."""

    __tablename__ = "oauth_login_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    agent_id: Mapped[str] = mapped_column(String(128), index=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
    projects: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON; NULL: every one


class OAuthCodeRow(Base):
    """An authorization code: who signed in (agent, role, and the bearer token they signed
    in with, if any) and the request it answers. `used_at` is kept until it expires, so a
    second use is recognised (and ends the grant the first use made)."""

    __tablename__ = "oauth_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(64))
    agent_id: Mapped[str] = mapped_column(String(128), index=True)
    role: Mapped[str] = mapped_column(String(16))
    agent_token_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    redirect_uri: Mapped[str] = mapped_column(Text)
    redirect_uri_explicit: Mapped[bool] = mapped_column(Boolean)
    code_challenge: Mapped[str] = mapped_column(String(128))
    scopes: Mapped[str] = mapped_column(Text)
    resource: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
    used_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    grant_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    projects: Mapped[str | None] = mapped_column(Text, nullable=True)  # JSON; NULL: every one


class OAuthGrantRow(Base):
    """What one sign-in granted one client: the agent and role its tokens act as. With
    `agent_token_hash` (signed in with a bearer token) it lasts only while that token does."""

    __tablename__ = "oauth_grants"
    # AUTOINCREMENT: a grant's id names the MCP sessions it opened (its tokens' subject),
    # so an id is never handed to another grant.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client_id: Mapped[str] = mapped_column(String(64), index=True)
    agent_id: Mapped[str] = mapped_column(String(128), index=True)
    role: Mapped[str] = mapped_column(String(16))
    agent_token_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    scopes: Mapped[str] = mapped_column(Text)
    resource: Mapped[str] = mapped_column(Text)
    created_at: Mapped[float] = mapped_column(Float)
    # The projects of the token or one-time code it was signed in with (JSON; NULL: every
    # project): its tokens act with those grants.
    projects: Mapped[str | None] = mapped_column(Text, nullable=True)


class OAuthTokenRow(Base):
    """An access or refresh token of a grant. A refresh token is used once (`used_at`):
    presenting it again means it was copied, and the grant ends."""

    __tablename__ = "oauth_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[int] = mapped_column(Integer, index=True)
    kind: Mapped[str] = mapped_column(String(8))  # access | refresh
    created_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float, index=True)
    used_at: Mapped[float | None] = mapped_column(Float, nullable=True)
