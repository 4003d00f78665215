"""Configuration, read only by the composition root. One place configures the server and
the hooks alike: a settings file (`~/.config/memory-mcp/config.toml`, or the file that
MEMORY_MCP_CONFIG names). Precedence: CLI flags > MEMORY_MCP_* variables > the file >
defaults."""

from __future__ import annotations

import json
import os
import re
import tomllib
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, get_origin
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from memory_mcp.checks.secret_scan import find_secrets
from memory_mcp.errors import InvalidInputError
from memory_mcp.limits import (
    BLOCK_ITEMS_MAX,
    BLOCK_TOKENS_MAX,
    DEFAULT_BLOCK_TOKENS,
    MAX_BLOCK_ITEMS,
    PROMPT_MIN_MATCH,
)
from memory_mcp.models import KIND_LIFETIME_DAYS, KIND_PATTERN, Role, Scope

# The kind of a captured conversation's messages (rules/conversations.py).
CONVERSATION_KIND = "conversation"

WORKSPACE_PERSONAL_MEMORY = "/workspace/personal/memory"


def default_data_dir() -> Path:
    """The user's data directory: durable, never a temp or cache folder (XDG on Linux)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memory-mcp"


ENV_PREFIX = "MEMORY_MCP_"
CONFIG_ENV = "MEMORY_MCP_CONFIG"


def clean_identifier(value: str) -> str:
    """An agent or session id: 1-128 printable characters, without surrounding spaces."""
    value = value.strip()
    if not value or len(value) > 128 or any(ord(ch) < 32 for ch in value):
        raise ValueError("must be 1-128 printable characters")
    if find_secrets(value):  # stored on everything the agent writes, shown to all agents
        raise ValueError("holds a secret; an agent or session id is a name, shown to others")
    return value


def config_file() -> Path:
    """MEMORY_MCP_CONFIG, else $XDG_CONFIG_HOME/memory-mcp/config.toml (~/.config/...)."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memory-mcp" / "config.toml"


def read_config_file(path: Path | None = None) -> dict[str, Any]:
    """The settings file's values ({} when there is none). A file that MEMORY_MCP_CONFIG
    names must exist: a typo there would otherwise fall back to defaults silently."""
    path = path or config_file()
    if not path.is_file():
        if os.environ.get(CONFIG_ENV):
            raise InvalidInputError(CONFIG_ENV, f"{path} is not a file")
        return {}
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInputError("config file", f"cannot read {path}: {exc}") from exc


def database_url(db: str | None, data_dir: Path) -> str:
    """A `--db` value is a path to a SQLite file, a `sqlite:///` URL or a PostgreSQL URL
    (`postgresql+asyncpg://`; `postgresql://` means the same). Other databases
    are refused by name rather than failing later on a missing driver. Nothing is created
    here (see startup_check.prepare_store_location)."""
    if db and "://" in db:
        if db.startswith("sqlite+aiosqlite://"):
            return db
        if db.startswith("sqlite://"):
            return "sqlite+aiosqlite://" + db.removeprefix("sqlite://")
        if db.startswith("postgresql+asyncpg://"):
            return db
        if db.startswith(("postgresql://", "postgres://")):
            return "postgresql+asyncpg://" + db.split("://", 1)[1]
        raise InvalidInputError(
            "db",
            f"{db.split('://', 1)[0]!r} is not supported; "
            "give a SQLite file path or a postgresql:// URL",
        )
    path = Path(db).expanduser() if db else data_dir.expanduser() / "memory.db"
    if path.is_dir():
        raise InvalidInputError("db", f"{path} is a folder; give a file path")
    return f"sqlite+aiosqlite:///{path.resolve()}"


def sqlite_file(url: str) -> Path | None:
    """The file behind a SQLite URL; None for an in-memory database or another kind."""
    if not url.startswith("sqlite"):
        return None
    name = url.split(":///", 1)[1].split("?", 1)[0] if ":///" in url else ""
    return Path(name) if name and name != ":memory:" else None


def _json_object(value: Any, example: str) -> dict[Any, Any]:
    """A setting that is a JSON object, given as text (a variable or flag) or parsed."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"must be an object such as {example}")
    return value


class Settings(BaseModel):
    """`Settings(**flags)`: flags (these arguments) > MEMORY_MCP_* variables > the settings
    file > defaults, as the CLI, the servers and the hooks read them.

    A pydantic model that reads its two sources itself (`given_elsewhere`) rather than
    pydantic-settings' BaseSettings: importing pydantic-settings costs ~55 ms of CPU
    (asyncio, importlib.metadata, dotenv and a dozen cloud sources, loaded up front) on
    every hook and CLI command, a fifth of `memory-mcp get`, for two sources this
    reads in 20 lines (bench/fast_paths.py measures it)."""

    # As BaseSettings: defaults validated too (a generated session id is an identifier
    # like any other), a settings file's unknown keys ignored (`memory-mcp doctor` lists
    # them), and `model_dir` is a field's name, not pydantic's namespace.
    model_config = ConfigDict(
        extra="ignore",
        validate_default=True,
        protected_namespaces=("model_validate", "model_dump"),
    )

    def __init__(self, **flags: Any) -> None:
        super().__init__(**{**self.given_elsewhere(), **flags})

    @classmethod
    def given_elsewhere(cls) -> dict[str, Any]:
        """The settings not given as flags: the settings file's, under the variables'."""
        return {**read_config_file(), **environment_values()}

    db: str | None = Field(None, description="SQLite file path or SQLAlchemy URL")
    data_dir: Path = Field(default_factory=default_data_dir)
    agent_id: str = "default"
    role: Role = Role.WORKER
    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    # The current project (rules/projects.py): a name, or * for none. Unset: the git work
    # tree the process runs in names it (stdio server, CLI, hooks); a team server has none.
    project: str | None = Field(
        None, description="the current project (default: the git work tree's; * for none)"
    )
    # stdio: one agent, the one above. The HTTP transports serve many agents at once, each
    # known by its bearer token (`memory-mcp token add`); see memory_mcp/http/team_server.py.
    transport: Literal["stdio", "streamable-http", "sse"] = "stdio"
    # The tools served: memory-mcp's own, or the reference knowledge-graph server's nine
    # (create_entities, read_graph, ...: memory_mcp/graph/profile.py) on the same store.
    profile: Literal["memory", "knowledge-graph"] = "memory"
    # The earlier release's tool names (store_memory, inject-learning) answer either
    # way; listed in tools/list only for clients that pick tools from the list by those
    # names (mcp/tool_names.py).
    legacy_tool_names: bool = Field(False, description="list the earlier tool names too")
    graph_scope: Scope = Field(
        Scope.AGENT, description="the scope of the knowledge-graph profile's entities"
    )
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    # Host names clients use to reach a server bound to all interfaces (0.0.0.0, ::); the
    # SDK's DNS-rebinding check accepts only these (and loopback) in the Host header.
    allowed_hosts: list[str] = Field(default_factory=list)
    # The hooks against a team server: its MCP URL (…/mcp, or …/sse) and this agent's
    # token. Both set: the hooks talk to it instead of opening a database file.
    url: str | None = None
    token: SecretStr | None = None
    # MCP sessions of one agent, whatever token or OAuth grant it uses
    # (memory_mcp/http/agent_sessions.py): streamable HTTP sessions or SSE connections beyond
    # this many are refused (an idle one of the agent's closes instead, if it has one), and
    # its OAuth grants beyond it end oldest first; a session with nothing in flight closes
    # after the idle time.
    max_sessions_per_agent: int = Field(16, ge=1, le=10_000)
    session_idle_seconds: float = Field(1800.0, gt=0, le=7 * 86_400)
    # OAuth 2.1 for Claude's custom connectors (memory_mcp/auth/oauth.py, http/oauth_provider.py):
    # off unless asked for; its issuer and resource URLs are built on public_url, the https
    # address clients reach the server at (a reverse proxy's), else http://host:port.
    oauth: bool = False
    public_url: str | None = None
    oauth_access_token_seconds: int = Field(3600, ge=1, le=86_400)
    # Anonymous client registrations (RFC 7591) the server accepts in any minute; more get 429.
    oauth_registrations_per_minute: int = Field(60, ge=1, le=10_000)

    # Limits that protect the store and the client's context window. The caps (0: none):
    # live memories per owner and per project; past one, the least recently used are
    # archived (store/eviction.py).
    max_memories_per_agent: int = Field(10_000, ge=0)
    max_entries_per_project: int = Field(0, ge=0)
    max_value_chars: int = Field(65_536, ge=1)
    search_value_chars: int = Field(1_000, ge=50)
    # The <memories> blocks put into a model's context (rules/memories_block.py): at the
    # session's start (SessionStart hook, memory://context, `memory-mcp context`) and at
    # every prompt (UserPromptSubmit hook), each a budget in tokens (characters / 4) filled
    # by priority with whole memories, at most context_max_items of them.
    context_max_tokens: int = Field(DEFAULT_BLOCK_TOKENS, ge=1, le=BLOCK_TOKENS_MAX)
    prompt_max_tokens: int = Field(DEFAULT_BLOCK_TOKENS, ge=1, le=BLOCK_TOKENS_MAX)
    context_max_items: int = Field(MAX_BLOCK_ITEMS, ge=1, le=BLOCK_ITEMS_MAX)
    # The prompt hook injects the memories whose words match the prompt at least this
    # well (hooks/user_prompt.py: the best hit's share of the prompt's weight), else
    # nothing: a wrong block costs more than none (docs/lab/capture.md measures it).
    prompt_min_match: float = Field(PROMPT_MIN_MATCH, ge=0, le=1)
    # Conversations captured (hooks/session_end.py): the Claude Code hooks store each user
    # and assistant message of a session (SessionEnd, PreCompact) as a memory of its
    # project, at most capture_max_messages a session, kept as long as ttl_kind_days
    # says of the kind `conversation` (30 days), counted from when each was said.
    capture_conversations: bool = True
    capture_max_messages: int = Field(1_000, ge=1, le=100_000)
    # The older name of ttl_kind_days' `conversation` line, still read so that settings
    # written before keep their meaning: given, it sets that line (0: kept for good),
    # unless ttl_kind_days gives the line another value too (the newer name wins).
    ttl_conversation_days: float | None = Field(None, ge=0)

    # Time to live by source, in days (0 = never expires).
    ttl_task_completion_days: float = Field(7, ge=0)
    ttl_session_summary_days: float = Field(3, ge=0)
    ttl_file_index_days: float = Field(30, ge=0)
    ttl_manual_days: float = Field(0, ge=0)
    # Lifetime by kind, in days (0 = permanent): a memory stored with a kind in this table
    # and no TTL lives this long, whatever its source's lifetime (rules/policy.py). A value
    # given (file: a [ttl_kind_days] table; variable: a JSON object) replaces that kind's
    # line only. The agent-memory seeds' defaults.
    ttl_kind_days: dict[str, float] = Field(default_factory=lambda: dict(KIND_LIFETIME_DAYS))
    recency_half_life_days: float | None = Field(None, gt=0)
    purge_interval_seconds: float = Field(3600, gt=0)  # expiry purge and confidence decay

    # How far memories are trusted (memory_mcp/rules/trust.py). Each source's default
    # confidence, where it differs from the built-in one: a JSON object such as
    # {"external": 0.2, "agent_inferred": 0.5}. A memory read older than stale_after_days
    # under stale_below_confidence is marked stale; under verify_below_confidence it needs
    # verification. Unconfirmed agent_inferred and recalled memories lose
    # confidence_decay_per_day and are archived under confidence_floor (rules/decay.py).
    source_confidence: dict[str, float] = Field(default_factory=dict)
    stale_after_days: float = Field(7, ge=0)
    stale_below_confidence: float = Field(0.8, ge=0, le=1)
    verify_below_confidence: float = Field(0.7, ge=0, le=1)
    confidence_decay_per_day: float = Field(0.01, ge=0, le=1)
    confidence_floor: float = Field(0.3, ge=0, le=1)
    # A memory whose text gives orders (checks/injection.py) from a low-trust source
    # (agent_inferred, recalled, external), and any memory from external: held for the
    # lead's approval (quarantine), only flagged, or refused (rules/quarantine.py).
    injection_policy: Literal["flag", "quarantine", "reject"] = "quarantine"
    # Write criteria (memory_mcp/rules/write_policy.py): on, store_memory keeps only the kinds
    # the table keeps (the built-in one, changed per kind by write_kinds, a JSON object such
    # as {"conversation": false, "hypothesis": true}); a kind it does not list is refused.
    write_policy: bool = False
    write_kinds: dict[str, bool] = Field(default_factory=dict)

    # Durability and load (README, "Durability and concurrency").
    synchronous: Literal["full", "normal"] = "full"  # SQLite's fsync on every commit, or not
    max_concurrent_calls: int = Field(8, ge=1)  # tool calls worked on at once, first come first

    # File notes (memory_mcp/notes): folders whose .md/.markdown/.txt files are memories.
    # A team server (transport not stdio) indexes only the folders set here, never the
    # default personal one (notes/folders.py).
    memory_dir: Path | None = None  # personal, agent scope; see personal_memory_dir
    shared_memory_dir: Path | None = None  # shared, swarm scope; off when unset
    watch: bool = True  # the server watches both folders and keeps them indexed
    note_max_bytes: Annotated[int, Field(ge=1)] = 1_000_000
    note_max_chunks: Annotated[int, Field(ge=1)] = 1_000  # more: the note is refused
    # A file with several hard links may be the same file as one outside the folder.
    note_allow_hardlinks: bool = False

    # The embedding runtime: ONNX Runtime (default, no torch in the server) or the
    # reference sentence-transformers. Both give the same vectors (to 2e-7).
    embedder: Literal["onnx", "sentence-transformers"] = "onnx"
    # A folder for a graph built from the weights; default: the model package's own graph.
    model_dir: Path | None = None
    # How long a search waits for a model still loading before answering keyword-only.
    search_model_wait_seconds: float = Field(5.0, ge=0)
    # When a store's passage vectors are made (semantic/vectors.py): after it answers (it
    # answers with its whole text's vector, which a search ranks with until they are in),
    # or before (it waits for them too: ~40% more model time on its path).
    passage_vectors: Literal["after-answer", "before-answer"] = "after-answer"

    @field_validator("ttl_kind_days", mode="before")
    @classmethod
    def _kind_lifetimes(cls, given: Any) -> Any:
        """The given kinds' lifetimes over the defaults; each a kind name and days >= 0."""
        if not isinstance(given, dict):
            return given
        table = dict(KIND_LIFETIME_DAYS)
        for kind, days in given.items():
            if not isinstance(kind, str) or not re.fullmatch(KIND_PATTERN, kind):
                raise ValueError(f"{kind!r} is not a kind (a lowercase identifier)")
            if isinstance(days, bool) or not isinstance(days, int | float) or not days >= 0:
                raise ValueError(f"{kind}: {days!r} is not a number of days (0: permanent)")
            table[kind] = float(days)
        return table

    @model_validator(mode="after")
    def _conversation_lifetime(self) -> Settings:
        """One owner for how long a captured conversation is kept: ttl_kind_days."""
        given = self.ttl_conversation_days
        table = self.ttl_kind_days
        line_given = table.get(CONVERSATION_KIND) != KIND_LIFETIME_DAYS.get(CONVERSATION_KIND)
        if given is not None and not line_given:
            self.ttl_kind_days = {**table, CONVERSATION_KIND: float(given)}
        return self

    @field_validator("agent_id", "session_id")
    @classmethod
    def _identifier(cls, value: str) -> str:
        return clean_identifier(value)

    @field_validator("source_confidence", mode="before")
    @classmethod
    def _source_confidence(cls, value: Any) -> Any:
        """A JSON object in a variable or flag; every key a source, every value 0-1."""
        from memory_mcp.models import Source

        value = _json_object(value, '{"external": 0.2}')
        known = {source.value for source in Source}
        for name, confidence in value.items():
            if name not in known:
                raise ValueError(f"{name!r} is not a source (one of {', '.join(sorted(known))})")
            number_like = isinstance(confidence, int | float) and not isinstance(confidence, bool)
            if not number_like or not 0.0 <= confidence <= 1.0:
                raise ValueError(f"{name}: {confidence!r} is not a confidence from 0 to 1")
        return value

    @field_validator("write_kinds", mode="before")
    @classmethod
    def _write_kinds(cls, value: Any) -> Any:
        """A JSON object in a variable or flag: kind -> true (keep) or false (refuse)."""
        from memory_mcp.checks.validation import clean_kind

        value = _json_object(value, '{"conversation": false}')
        for kind, keep in value.items():
            try:
                clean_kind(kind)
            except InvalidInputError as exc:
                raise ValueError(f"{kind!r}: {exc}") from None
            if not isinstance(keep, bool):
                raise ValueError(f"{kind}: {keep!r} is not true or false")
        return value

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from memory_mcp.rules.projects import ProjectNameError, check_project

        try:
            return check_project(value.strip())
        except ProjectNameError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        """scheme://host[:port], nothing after it: the OAuth routes sit at the root of the
        host (the metadata's well-known paths), so a proxy cannot put them under a path."""
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("must be an https:// URL, e.g. https://memory.example.com")
        if parts.path.strip("/") or parts.query or parts.fragment or parts.username:
            raise ValueError("must name only scheme, host and port (the server's root)")
        default_port = {"https": 443, "http": 80}[parts.scheme]
        netloc = parts.netloc.lower().removesuffix(f":{default_port}")
        return f"{parts.scheme}://{netloc}"

    @property
    def public_base_url(self) -> str:
        """Where clients reach the team server: --public-url, else http://host:port."""
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def public_host(self) -> str | None:
        """--public-url's host name (`[::1]` for IPv6), for the Host header checks."""
        if not self.public_url:
            return None
        host = urlsplit(self.public_url).hostname or ""
        return f"[{host}]" if ":" in host else host

    @property
    def team_server(self) -> tuple[str, str] | None:
        """(url, token) when the hooks should use a team server; None without a url. A url
        without a token is refused rather than read as "no team server": the hooks would
        otherwise write to a local store while the client's server is the team's."""
        if not self.url:
            return None
        token = self.token.get_secret_value() if self.token is not None else ""
        if not token:
            raise InvalidInputError(
                "token",
                f"the team server {self.url} needs this agent's token in MEMORY_MCP_TOKEN "
                "(or `token` in the settings file)",
            )
        return self.url, token

    @property
    def database_url(self) -> str:
        return database_url(self.db, self.data_dir)

    @property
    def database_file(self) -> Path | None:
        return sqlite_file(self.database_url)

    @property
    def personal_memory_dir(self) -> Path:
        """--memory-dir, else /workspace/personal/memory when it exists (the agents'
        convention), else <data dir>/memory."""
        if self.memory_dir is not None:
            return self.memory_dir.expanduser()
        conventional = Path(WORKSPACE_PERSONAL_MEMORY)
        return conventional if conventional.is_dir() else self.data_dir.expanduser() / "memory"


def environment_values() -> dict[str, Any]:
    """The settings given as MEMORY_MCP_* variables (the name in any case), by field; a
    list's value is JSON (MEMORY_MCP_ALLOWED_HOSTS='["a.example","b.example"]')."""
    given = {name.upper(): value for name, value in os.environ.items()}
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        variable = f"{ENV_PREFIX}{name.upper()}"
        if variable not in given:
            continue
        value: Any = given[variable]
        if get_origin(field.annotation) in (list, dict):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                shape = "list" if get_origin(field.annotation) is list else "object"
                raise InvalidInputError(variable, f"must be a JSON {shape}: {exc}") from None
        values[name] = value
    return values


def setting_sources(flags: dict[str, Any]) -> dict[str, str]:
    """Where each setting's value comes from, for `memory-mcp doctor`."""
    in_file = read_config_file()
    env = {name.upper() for name in os.environ}
    where: dict[str, str] = {}
    for name in Settings.model_fields:
        if name in flags:
            where[name] = "flag"
        elif f"{ENV_PREFIX}{name}".upper() in env:
            where[name] = f"env {ENV_PREFIX}{name.upper()}"
        elif name in in_file:
            where[name] = "config file"
        else:
            where[name] = "default"
    return where


def unknown_config_keys() -> list[str]:
    return sorted(set(read_config_file()) - set(Settings.model_fields))
