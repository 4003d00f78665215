"""What the CLI's commands share: the settings flags (one per Settings field, derived from
`Settings.model_fields`; the groups each command takes), and the settings they make
(a command opens the store with app.run_with_app). Pydantic is imported inside the
functions: importing this module stays cheap."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import argparse

    from memory_mcp.settings import Settings

T = TypeVar("T")

# Which settings each command takes as flags (each also has a MEMORY_MCP_* variable and a
# settings-file key). ALL (None) is every field of Settings: serve and doctor, whose
# behaviour any setting can change.
STORE = ("db", "data_dir", "agent_id", "role", "session_id", "project")
NOTES = ("memory_dir", "shared_memory_dir")
NOTE_LIMITS = ("note_max_bytes", "note_max_chunks", "note_allow_hardlinks")
MODEL = ("embedder", "model_dir")
# What changes what an import stores: the limits and lifetimes a line is checked against.
LIMITS = (
    "max_memories_per_agent",
    "max_value_chars",
    "ttl_task_completion_days",
    "ttl_session_summary_days",
    "ttl_manual_days",
)
ALL = None
# The hooks' team-server settings are not flags: the hooks get none, and a token on a
# command line shows in `ps` (MEMORY_MCP_URL / MEMORY_MCP_TOKEN, or the settings file).
NOT_FLAGS = ("url", "token")


# Help for the flags a person reaches for most; the others say which variable they set.
FLAG_HELP = {
    "db": "SQLite file or SQLAlchemy URL",
    "agent_id": "this agent's id",
    "session_id": "default: a new id per process",
    "project": "the project to read and write (default: the git work tree's, with the "
    "memories of every project, *; * alone: every project)",
    "data_dir": "where the default store and the model export live "
    "(default $XDG_DATA_HOME/memory-mcp)",
    "memory_dir": "personal notes folder, indexed for this agent (default "
    "/workspace/personal/memory if it exists, else <data dir>/memory; a team server "
    "indexes none unless named)",
    "shared_memory_dir": "shared notes folder, indexed for every agent",
    "watch": "watch and index the memory folders (--no-watch: do not)",
    "embedder": "embedding runtime (default onnx)",
    "model_dir": "a folder for a graph built from the weights (default: the model "
    "package's own, built graph)",
    "transport": "default stdio (one agent); the HTTP transports serve many agents, each "
    "with a token (`memory-mcp token add`)",
    "host": "HTTP: address to listen on (default 127.0.0.1)",
    "port": "HTTP: port (default 8765)",
    "allowed_hosts": "HTTP: host names clients use, for the Host/Origin check "
    '(env as JSON: \'["a","b"]\')',
    "oauth": "HTTP: also an OAuth 2.1 authorization server, for Claude's custom "
    "connectors (default off)",
    "public_url": "HTTP: the https URL clients reach the server at (a reverse proxy's); "
    "the OAuth issuer. Default http://HOST:PORT",
    "oauth_access_token_seconds": "HTTP: lifetime of an OAuth access token (default 3600)",
    "max_sessions_per_agent": "HTTP: MCP sessions (and OAuth grants) one agent may hold, "
    "whatever token it uses (default 16)",
    "session_idle_seconds": "HTTP: a session with no request in flight closes after this "
    "(default 1800)",
    "oauth_registrations_per_minute": "HTTP: OAuth client registrations accepted a minute; "
    "more get 429 (default 60)",
}


def _flag_kind(annotation: Any) -> dict[str, Any]:
    """argparse keywords for a Settings field's type: choices for a Literal or an enum,
    --x/--no-x for a bool, else a converter (pydantic validates the value afterwards)."""
    import enum
    import types
    import typing

    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]  # X | None
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is typing.Literal:
        return {"choices": list(typing.get_args(annotation))}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"choices": [member.value for member in annotation]}
    if annotation is bool:
        import argparse

        return {"action": argparse.BooleanOptionalAction}
    if typing.get_origin(annotation) is list:
        return {"nargs": "+"}
    if typing.get_origin(annotation) is dict:  # a table: --ttl-kind-days '{"fact": 30}'
        return {"type": _json_object, "metavar": "JSON"}
    if annotation in (int, float, Path):
        return {"type": annotation, "metavar": annotation.__name__.upper()}
    return {}


def _json_object(text: str) -> dict[str, Any]:
    import argparse
    import json

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return value


def add_setting_flags(parser: argparse.ArgumentParser, names: Sequence[str] | None) -> None:
    """One flag per setting (`--agent-id` for agent_id); default None = not given, so env,
    the settings file and the defaults still apply."""
    from memory_mcp.settings import ENV_PREFIX, Settings

    group = parser.add_argument_group("settings (flags > MEMORY_MCP_* env > settings file)")
    every = [name for name in Settings.model_fields if name not in NOT_FLAGS]
    for name in names if names is not None else every:
        field = Settings.model_fields[name]
        env = f"env {ENV_PREFIX}{name.upper()}"
        about = FLAG_HELP.get(name) or field.description
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=name,
            default=None,
            help=f"{about} ({env})" if about else env,
            **_flag_kind(field.annotation),
        )


def flag_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given as flags (they win over env and the settings file)."""
    from memory_mcp.settings import Settings

    given = ((name, getattr(args, name, None)) for name in Settings.model_fields)
    return {name: value for name, value in given if value is not None}


def settings_from(args: argparse.Namespace) -> Settings:
    from memory_mcp.settings import Settings

    return Settings(**flag_overrides(args))


def whole_store_unless_named(settings: Settings) -> str:
    """The projects a command over a whole store (export, stats) covers: the one named by
    --project (MEMORY_MCP_PROJECT, the settings file), else every project (`*`), not the
    work tree's: a backup taken inside a repository must not leave the others out."""
    return settings.project if settings.project is not None else "*"
