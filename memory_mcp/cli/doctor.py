"""`memory-mcp doctor`: what the server and the hooks would each use, where every value
comes from, whether the store opens and the model is installed, and where the two
disagree. It reads only: it never creates a store or a folder.

The server gets flags (from the MCP client's config), the environment and the settings
file; the hooks get the environment and the file, never flags. So a flag that the hooks
do not share (e.g. `--agent-id` in .mcp.json) is the classic mismatch: session summaries
land under another agent than the one the server serves."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from memory_mcp.cli.earlier_agent import unseen_default_notice
from memory_mcp.errors import MemoryMcpError, StoreMissingError
from memory_mcp.settings import (
    CONFIG_ENV,
    Settings,
    config_file,
    setting_sources,
    unknown_config_keys,
)

# What the server and the hooks must agree on, shown as (label, value of a Settings).
SHARED: list[tuple[str, str, Callable[[Settings], object]]] = [
    ("db", "db", lambda s: s.database_file or s.database_url),
    ("agent_id", "agent_id", lambda s: s.agent_id),
    ("memory_dir", "memory_dir", lambda s: s.personal_memory_dir),
    ("shared_memory_dir", "shared_memory_dir", lambda s: s.shared_memory_dir),
]
SHOWN_ONLY: list[tuple[str, str, Callable[[Settings], object]]] = [
    ("role", "role", lambda s: s.role.value),
    ("data_dir", "data_dir", lambda s: s.data_dir),
    ("watch", "watch", lambda s: s.watch),
    ("max_memories_per_agent", "max_memories_per_agent", lambda s: s.max_memories_per_agent),
    ("max_entries_per_project", "max_entries_per_project", lambda s: s.max_entries_per_project),
]


@dataclass
class Side:
    """One consumer of the configuration (the server or the hooks)."""

    name: str
    settings: Settings
    sources: dict[str, str]
    notes: list[str] = field(default_factory=list)


@contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(extra)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _server_entry(path: Path) -> tuple[list[str], dict[str, str]] | None:
    """The args and env an MCP client config gives the memory-mcp server, if any."""
    data = json.loads(path.read_text(encoding="utf-8"))
    servers = data.get("mcpServers", {}) if isinstance(data, dict) else {}
    for entry in servers.values():
        if not isinstance(entry, dict):
            continue
        args = [str(a) for a in entry.get("args", [])]
        command = str(entry.get("command", ""))
        if "memory-mcp" in command or "server.py" in " ".join(args):
            env = {str(k): os.path.expandvars(str(v)) for k, v in entry.get("env", {}).items()}
            return args, env
    return None


ParseServe = Callable[[list[str]], dict[str, Any]]


def _server_side(flags: dict[str, Any], mcp_config: Path | None, parse_serve: ParseServe) -> Side:
    notes: list[str] = []
    env: dict[str, str] = {}
    client_flags: dict[str, Any] = {}
    path = mcp_config or (Path(".mcp.json") if Path(".mcp.json").is_file() else None)
    if path is not None:
        try:
            entry = _server_entry(path)
            if entry is None:
                notes.append(f"{path}: no memory-mcp server in it")
        except (OSError, ValueError) as exc:
            notes.append(f"PROBLEM cannot read {path}: {exc}")
            entry = None
        if entry is not None:
            args, env = entry
            client_flags = parse_serve(args[1:] if args[:1] == ["serve"] else args)
            flags = {**client_flags, **flags}
            notes.append(
                f"flags and env from {path}: {' '.join(args)}"
                + (f" (env {', '.join(sorted(env))})" if env else "")
            )
    with _environment(env):
        sources = setting_sources(flags)
        for name, where in sources.items():
            from_client = (where == "flag" and name in client_flags) or (
                where.startswith("env ") and where[4:] in env
            )
            if from_client:
                sources[name] = f"{where} in {path}"
        return Side("server", Settings(**flags), sources, notes)


HOOK_NAMES = (
    "memory-mcp",
    "memory_mcp",
    "post-tool-use",
    "session-start",
    "user-prompt",
    "session-end",
    "pre-compact",
)


def _hook_envs(path: Path) -> list[dict[str, str]]:
    """The MEMORY_MCP_* assignments in front of each memory-mcp hook command of a Claude
    Code settings file (`"command": "MEMORY_MCP_AGENT_ID=me /path/hooks/session-start"`)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    events = data.get("hooks", {}) if isinstance(data, dict) else {}
    envs: list[dict[str, str]] = []
    for groups in events.values() if isinstance(events, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
                if not any(name in command for name in HOOK_NAMES):
                    continue
                env: dict[str, str] = {}
                for word in shlex.split(command):
                    name, equals, value = word.partition("=")
                    if not equals or not name.isidentifier():
                        break
                    if name.startswith("MEMORY_MCP_"):  # `X="${TEAM_TOKEN}"`: as the shell
                        env[name] = os.path.expanduser(os.path.expandvars(value))
                envs.append(env)
    return envs


def _hooks_config(given: Path | None) -> Path | None:
    if given is not None:
        return given
    for candidate in (Path(".claude/settings.json"), Path.home() / ".claude/settings.json"):
        if candidate.is_file():
            return candidate
    return None


def _hooks_side(hooks_config: Path | None) -> Side:
    notes: list[str] = []
    env: dict[str, str] = {}
    path = _hooks_config(hooks_config)
    if path is not None:
        try:
            envs = _hook_envs(path)
            if not envs:
                notes.append(f"{path}: no memory-mcp hooks in it")
        except (OSError, ValueError) as exc:
            notes.append(f"PROBLEM cannot read {path}: {exc}")
            envs = []
        if envs:
            env = {name: value for one in envs for name, value in one.items()}  # any hook's
            notes.append(f"hooks from {path}" + (f" (env {', '.join(sorted(env))})" if env else ""))
            if any(other != env for other in envs):
                notes.append(
                    f"PROBLEM {path}: the memory-mcp hooks set different MEMORY_MCP_* "
                    "variables; put them in the settings file instead"
                )
    with _environment(env):
        sources = setting_sources({})
        for name, where in sources.items():
            if where.startswith("env ") and where[4:] in env:
                sources[name] = f"{where} in {path}"
        return Side("hooks", Settings(), sources, notes)


def _check_store(settings: Settings) -> tuple[str, bool]:
    from memory_mcp.app.root import open_app

    async def count() -> int:  # the embedder is created but never loaded
        async with open_app(settings, background=False, create=False) as app:
            return await app.service.count()

    where = settings.database_file or settings.database_url
    try:
        memories = anyio.run(count)
    except StoreMissingError:
        if settings.db is None:
            return f"no store yet at {where}; `serve` or `import` creates it", True
        parent = Path(str(where)).parent
        if not parent.is_dir():
            return f"{where}: its folder {parent} does not exist", False
        return f"no store yet at {where}; `serve` or `import` creates it", True
    except MemoryMcpError as exc:
        return str(exc), False
    return f"opens: {where}, {memories} memories", True


def _show_project(server: Side, problems: list[str]) -> None:
    """The current project here (the server's, and the hooks' for a session started
    here: they take the payload's folder), why, what would move it, and memories left
    under a name this work tree had before."""
    from memory_mcp.rules.projects import earlier_names, how_chosen, work_tree_of

    here = Path.cwd()
    project, lines = how_chosen(server.settings.project, server.sources["project"], here)
    for line in lines:
        print(line)
    tree = work_tree_of(here)
    if server.settings.project is None and tree is not None and project is not None:
        counts = _project_counts(server.settings)
        for earlier, why in earlier_names(tree):
            if counts.get(earlier):
                problems.append(
                    f"{counts[earlier]} memories are in project {earlier}, this work tree's "
                    f"name {why}; move them: memory-mcp projects "
                    f"move --from {earlier} --to {project} --all"
                )
    print()


def _project_counts(settings: Settings) -> dict[str, int]:
    from memory_mcp.app.root import open_app

    async def counts() -> dict[str, int]:
        async with open_app(settings, background=False, create=False) as app:
            return await app.service.tasks.project_counts(app.caller)

    try:
        return anyio.run(counts)
    except MemoryMcpError:
        return {}


def _check_model() -> tuple[str, bool]:
    missing = [
        name
        # What the server runs; torch and sentence-transformers are an optional extra.
        for name in ("memory_mcp_minilm", "onnxruntime", "tokenizers")
        if importlib.util.find_spec(name) is None
    ]
    if missing:
        return f"missing packages: {', '.join(missing)} (meaning search is off)", False
    from memory_mcp_minilm import model_path

    path = Path(model_path())
    if not path.is_dir():
        return f"the model package has no files at {path}", False
    return f"all-MiniLM-L6-v2 installed at {path}", True


def run(
    flags: dict[str, Any],
    mcp_config: Path | None,
    hooks_config: Path | None,
    parse_serve: ParseServe,
) -> int:
    """Print the report on stdout; exit 0 when nothing needs fixing, else 1."""
    problems: list[str] = []
    path = config_file()
    origin = f" (from {CONFIG_ENV})" if os.environ.get(CONFIG_ENV) else ""
    print(f"settings file: {path}{origin}: {'found' if path.is_file() else 'none'}")
    unknown = unknown_config_keys()
    if unknown:
        problems.append(f"{path}: unknown settings {', '.join(unknown)} (ignored)")

    server, hooks = _server_side(flags, mcp_config, parse_serve), _hooks_side(hooks_config)
    for note in server.notes + hooks.notes:
        if note.startswith("PROBLEM "):
            problems.append(note.removeprefix("PROBLEM "))
        else:
            print(note)
    print()
    rows = [("setting", "server", "hooks")]
    for label, name, value in SHARED + SHOWN_ONLY:
        rows.append(
            (
                label,
                f"{value(server.settings)}  [{server.sources[name]}]",
                f"{value(hooks.settings)}  [{hooks.sources[name]}]",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print()

    for label, name, value in SHARED:
        if value(server.settings) != value(hooks.settings):
            problems.append(
                f"mismatch: {label} is {value(server.settings)} for the server "
                f"[{server.sources[name]}] but {value(hooks.settings)} for the hooks "
                f"[{hooks.sources[name]}]; set it once in {path} and drop the flag or "
                "variable that differs"
            )

    _show_project(server, problems)
    unseen = unseen_default_notice(server.settings, path)
    if unseen is not None:
        print(f"note: {unseen}\n")

    checks = [("store (server)", _check_store(server.settings))]
    if hooks.settings.database_url != server.settings.database_url:
        checks.append(("store (hooks)", _check_store(hooks.settings)))
    checks.append(("model", _check_model()))
    for label, (message, ok) in checks:
        print(f"{label}: {message}")
        if not ok:
            problems.append(f"{label}: {message}")

    print()
    if not problems:
        print("ok: the server and the hooks agree")
        return 0
    for problem in problems:
        print(f"PROBLEM {problem}")
    return 1
