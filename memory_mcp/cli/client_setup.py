"""`memory-mcp setup CLIENT` (registered in cli/main.py) for claude-code, claude-desktop,
cursor, vscode and codex: write the client's MCP config (and, for Claude Code, the hooks)
with this install's absolute paths, so nobody edits `/path/to/memory-mcp` by hand, and
create the settings file with the agent id asked for. `--url` connects to a team server
instead, its token read from an environment variable (`--token-env`), never written down.

Where each client keeps its servers: Claude Code ~/.claude.json and Claude Desktop's
claude_desktop_config.json (`mcpServers`), Cursor ~/.cursor/mcp.json (`mcpServers`), VS
Code the workspace's .vscode/mcp.json (`servers`), Codex ~/.codex/config.toml
(`[mcp_servers.memory]`, `bearer_token_env_var` for a team server).

Each client file is merged, never replaced: only the `memory` server entry and the
memory-mcp hook commands are set (an earlier memory-mcp hook is replaced, not doubled),
every other key stays (in Codex's TOML its comments and layout too), and the old file is
kept beside it as `<name>.bak` (a JSON file that already holds all of it, however laid
out, is left alone). A file that is not a JSON object (or a TOML document) is refused
before anything is written. Every client started here reads the one settings file and so
is the agent it names, which setup says; a client without hooks (all but Claude Code)
given another `--agent-id` gets it in its server's arguments instead. A first settings
file keeps the agent used so far when the store holds its memories
(cli/earlier_agent.py). `--print` writes nothing and prints, as one JSON object, what
each file would get."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from memory_mcp.errors import InvalidInputError

SERVER_NAME = "memory"
CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex")
CLIENT_NAMES = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    "cursor": "Cursor",
    "vscode": "VS Code",
    "codex": "Codex",
}
# The key a client keeps its servers under.
SERVERS_KEY = {"vscode": "servers", "codex": "mcp_servers"}
DEFAULT_TOKEN_ENV = "MEMORY_MCP_TOKEN"  # what the hooks (Settings.token) read
TOKEN_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HOOK_TIMEOUT_SECONDS = 10
# Claude Code event -> (the hook's event argument, the tools it fires for)
HOOK_EVENTS: dict[str, tuple[str, str | None]] = {
    "PostToolUse": ("post-tool-use", "Write|Edit|MultiEdit"),
    "SessionStart": ("session-start", None),
    "UserPromptSubmit": ("user-prompt", None),
    "PreCompact": ("pre-compact", None),
    "SessionEnd": ("session-end", None),
}
# A hook command of ours, from this command or from the README's hand-written snippet
# (/path/to/memory-mcp/hooks/session-start): replaced by a new setup, not doubled.
OUR_HOOK = re.compile(r"memory_mcp\.hooks|memory-mcp-hook|memory-mcp\S*/hooks/[a-z-]+\b")


def add_arguments(setup: argparse.ArgumentParser) -> None:
    setup.add_argument("client", choices=CLIENTS, help="the client to connect")
    setup.add_argument(
        "--print",
        dest="dry_run",
        action="store_true",
        help="write nothing: print what each file would get, as JSON {file: entries}",
    )
    setup.add_argument(
        "--agent-id",
        help="the agent id for a new settings file (default: the client's name, or the "
        "agent used here so far when the store holds its memories); an existing settings "
        "file is kept, and must say the same",
    )
    setup.add_argument(
        "--client-config",
        type=Path,
        help="the MCP config file to merge into (claude-code: ~/.claude.json, the user "
        "scope; a project's .mcp.json works too. claude-desktop: "
        "claude_desktop_config.json where Claude Desktop keeps it on this system. cursor: "
        "~/.cursor/mcp.json, or a project's .cursor/mcp.json. vscode: .vscode/mcp.json "
        "here. codex: ~/.codex/config.toml, $CODEX_HOME/config.toml if set)",
    )
    setup.add_argument(
        "--url",
        help="connect to a team server instead of starting one, e.g. "
        "https://memory.example.com/mcp (not claude-desktop: use Settings -> Connectors)",
    )
    setup.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        help="with --url: the environment variable holding the agent's bearer token "
        f"(default {DEFAULT_TOKEN_ENV}); the token itself is never written",
    )
    setup.add_argument(
        "--hooks-config",
        type=Path,
        help="claude-code: the settings file for the hooks (default ~/.claude/settings.json)",
    )
    setup.add_argument(
        "--no-hooks", action="store_true", help="claude-code: the MCP server only, no hooks"
    )


def server_command() -> list[str]:
    """How to start this install's server: the memory-mcp beside this Python (a venv's
    bin/, pipx's), else this Python running the CLI module. Never resolved through
    symlinks: a venv's python is a link to the system's, which lacks the package."""
    python = Path(sys.executable).absolute()
    script = python.with_name("memory-mcp")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), "serve"]
    return [str(python), "-m", "memory_mcp.cli", "serve"]


def hook_command(event: str, url: str | None = None, token_env: str = DEFAULT_TOKEN_ENV) -> str:
    """A shell command for one hook: this Python running the hooks package (its fast path;
    it always exits 0). With `url`, the hooks follow the same team server as the MCP
    server entry: MEMORY_MCP_URL in front of the command, and MEMORY_MCP_TOKEN taken from
    `token_env` by the shell when the hook runs (the token itself is never written)."""
    python = str(Path(sys.executable).absolute())
    command = shlex.join([python, "-m", "memory_mcp.hooks", event])
    if url is None:
        return command
    assignments = [f"MEMORY_MCP_URL={shlex.quote(url)}"]
    if token_env != DEFAULT_TOKEN_ENV:
        assignments.append(f'{DEFAULT_TOKEN_ENV}="${{{token_env}}}"')
    return " ".join([*assignments, command])


def desktop_config_path() -> Path:
    """Where Claude Desktop keeps its config on this system."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform == "win32":
        base = os.environ.get("APPDATA") or str(home / "AppData" / "Roaming")
        return Path(base) / "Claude" / "claude_desktop_config.json"
    base = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(base) / "Claude" / "claude_desktop_config.json"


def client_config_path(client: str) -> Path:
    """Where the client keeps its MCP servers, for this user (VS Code: this workspace)."""
    home = Path.home()
    if client == "claude-code":
        return home / ".claude.json"
    if client == "claude-desktop":
        return desktop_config_path()
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return Path.cwd() / ".vscode" / "mcp.json"
    return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "config.toml"


def server_entry(
    client: str, url: str | None = None, token_env: str = DEFAULT_TOKEN_ENV
) -> dict[str, Any]:
    """The client's entry for this install's server, or for the team server at `url`
    (the bearer token from `token_env`, in the client's own way of reading a variable)."""
    if url is not None:
        if client == "claude-desktop":
            raise InvalidInputError(
                "url",
                "Claude Desktop connects to a team server as a custom connector (Settings -> "
                "Connectors, the server started with --oauth), not through its config file",
            )
        if client == "codex":
            return {"url": url, "bearer_token_env_var": token_env}
        variable = "${" + token_env + "}" if client == "claude-code" else "${env:" + token_env + "}"
        headers = {"Authorization": f"Bearer {variable}"}
        kind = {} if client == "cursor" else {"type": "http"}
        return {**kind, "url": url, "headers": headers}
    command, *args = server_command()
    entry: dict[str, Any] = {"command": command, "args": args}
    if client in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    return entry


def hooks_entries(
    url: str | None = None, token_env: str = DEFAULT_TOKEN_ENV
) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for event, (argument, matcher) in HOOK_EVENTS.items():
        hook = {"type": "command", "command": hook_command(argument, url, token_env)}
        group: dict[str, Any] = {"hooks": [{**hook, "timeout": HOOK_TIMEOUT_SECONDS}]}
        entries[event] = [{"matcher": matcher, **group} if matcher else group]
    return entries


def checked_token_env(name: str) -> str:
    """--token-env names a variable: it goes into shell commands and client configs as a
    reference, so anything but a variable name is refused."""
    if not TOKEN_ENV_NAME.fullmatch(name):
        raise InvalidInputError(
            "token-env", f"{name!r} is not an environment variable name (letters, digits, _)"
        )
    return name


def read_toml_document(path: Path) -> Any:
    """Codex's config.toml as a tomlkit document (comments and layout kept); anything
    that is not TOML is refused."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    if not path.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise InvalidInputError("client config", f"cannot read {path}: {exc}") from exc


def merge_toml_server(document: Any, entry: dict[str, Any]) -> str:
    """The TOML text with `[mcp_servers.memory]` set to `entry`, everything else as it was."""
    import tomlkit

    servers = document.get("mcp_servers")
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        document["mcp_servers"] = servers
    elif not isinstance(servers, dict):
        raise InvalidInputError("client config", "its mcp_servers is not a table")
    table = tomlkit.table()
    table.update(entry)
    servers[SERVER_NAME] = table
    return str(tomlkit.dumps(document))


def read_json_object(path: Path) -> dict[str, Any]:
    """A client file's content ({} when it does not exist yet); anything but a JSON object
    is refused: merging into it could lose what the user has there."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError("client config", f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidInputError("client config", f"{path} is not a JSON object")
    return data


def merge_server(
    config: dict[str, Any], entry: dict[str, Any], key: str = "mcpServers"
) -> dict[str, Any]:
    servers = config.get(key)
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInputError("client config", f"its {key} is not a JSON object")
    return {**config, key: {**(servers or {}), SERVER_NAME: entry}}


def merge_hooks(settings: dict[str, Any], ours: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The settings with our hook groups appended per event, after removing every earlier
    hook command of ours (and a group left empty by that)."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError("hooks config", "its hooks is not a JSON object")
    merged = dict(hooks)
    for event, groups in ours.items():
        theirs = merged.get(event, [])
        if not isinstance(theirs, list):
            raise InvalidInputError("hooks config", f"its hooks.{event} is not a JSON list")
        kept = []
        for group in theirs:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                others = [h for h in group["hooks"] if not _is_ours(h)]
                if not others:
                    continue
                group = {**group, "hooks": others}
            kept.append(group)
        merged[event] = kept + groups
    return {**settings, "hooks": merged}


def _is_ours(hook: object) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and OUR_HOOK.search(command) is not None


def write_text(path: Path, text: str) -> str:
    """Write `text` to `path` whole (a temporary file renamed over it), keeping the old
    file as `<name>.bak` and its permissions; what was done, in words. A symlink (dotfiles
    kept in a repository) stays one: its target is written."""
    path = path.resolve() if path.is_symlink() else path
    if path.exists() and _same_content(path, text):
        return f"unchanged: {path}"
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = path.with_name(path.name + ".bak")
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    if path.exists():
        shutil.copy2(path, backup)
        shutil.copymode(path, temporary)
    os.replace(temporary, path)
    return f"wrote {path}" + (f" (the old one: {backup})" if backup.exists() else "")


def _same_content(path: Path, text: str) -> bool:
    """Whether `path` already says `text`: word for word, or (JSON) as the same data laid
    out otherwise, which rewriting would only reformat and back up."""
    current = path.read_text(encoding="utf-8")
    if current == text or path.suffix != ".json":
        return current == text
    try:
        return bool(json.loads(current) == json.loads(text))
    except json.JSONDecodeError:
        return False


def settings_agent(
    requested: str | None, client: str, local: bool = True
) -> tuple[Path, str | None, str]:
    """The settings file, the text to create it with (None: it exists and is kept), and
    the agent id it holds. For Claude Code an existing file that names another agent
    than the one asked for is refused: its server and its hooks both read the file. The
    other clients have no hooks: another agent id goes into their server's arguments.
    A new file (`local`: the client opens this machine's store) names the agent used so
    far when the store holds memories only it sees (cli/earlier_agent.py), unless
    another is asked for, which is said."""
    from memory_mcp.settings import config_file, read_config_file

    path = config_file()
    if not path.exists():
        agent = requested or client
        if local:
            agent = _earlier_or(agent, requested, client, path)
        quoted = json.dumps(agent, ensure_ascii=False)  # a TOML basic string too
        text = f"# memory-mcp settings (see `memory-mcp doctor`)\nagent_id = {quoted}\n"
        return path, text, agent
    current = str(read_config_file(path).get("agent_id", "default"))
    if client == "claude-code" and requested is not None and requested != current:
        raise InvalidInputError(
            "agent-id",
            f"{path} says agent_id = {current!r}; change it there (the server and the "
            "hooks read it) or leave --agent-id out",
        )
    return path, None, current


def _earlier_or(agent: str, requested: str | None, client: str, path: Path) -> str:
    """`agent`, or the earlier agent when it has memories of its own and none was asked
    for; either way said on stderr when memories would drop out of sight."""
    from memory_mcp.cli.earlier_agent import earlier_agent, kept_notice, left_behind_notice

    earlier = earlier_agent()
    if earlier.own == 0 or earlier.agent_id == agent:
        return agent
    if requested is None:
        print(kept_notice(earlier, client, path), file=sys.stderr)
        return earlier.agent_id
    print(left_behind_notice(earlier, agent, path), file=sys.stderr)
    return agent


def run(args: argparse.Namespace) -> int:
    from memory_mcp.settings import clean_identifier

    try:
        requested = None if args.agent_id is None else clean_identifier(args.agent_id)
    except ValueError as exc:
        raise InvalidInputError("agent-id", str(exc)) from exc
    token_env = checked_token_env(args.token_env)
    settings_path, settings_text, agent = settings_agent(
        requested, args.client, local=args.url is None
    )
    home = Path.home()
    planned: dict[Path, tuple[dict[str, Any], str]] = {}  # file -> (part, whole text)
    entry = server_entry(args.client, args.url, token_env)
    if args.url is None:  # a team server's agent is its token's
        if requested is not None and requested != agent:  # no hooks: a flag wins
            entry["args"] = [*entry["args"], "--agent-id", requested]
        elif settings_text is None and requested is None:
            print(
                f"{args.client} will be agent {agent!r} ({settings_path}), as every client "
                f"set up here without --agent-id: one agent's memories; "
                f"`--agent-id {args.client}` gives it its own",
                file=sys.stderr,
            )
    key = SERVERS_KEY.get(args.client, "mcpServers")
    mcp_path = args.client_config or client_config_path(args.client)
    if args.client == "codex":
        whole = merge_toml_server(read_toml_document(mcp_path), entry)
    else:
        whole = json_text(merge_server(read_json_object(mcp_path), entry, key))
    planned[mcp_path] = ({key: {SERVER_NAME: entry}}, whole)
    if args.client == "claude-code" and not args.no_hooks:
        hooks_path = args.hooks_config or home / ".claude" / "settings.json"
        ours = hooks_entries(args.url, token_env)
        merged = merge_hooks(read_json_object(hooks_path), ours)
        planned[hooks_path] = ({"hooks": ours}, json_text(merged))
    if args.dry_run:
        print(json.dumps({str(path): part for path, (part, _) in planned.items()}, indent=2))
        if settings_text is not None:
            print(f"would create {settings_path}:\n{settings_text}", file=sys.stderr)
        return 0
    if settings_text is not None:
        settings_path.parent.mkdir(parents=True, exist_ok=True)
        settings_path.write_text(settings_text, encoding="utf-8")
        print(f"wrote {settings_path}", file=sys.stderr)
    for path, (_, whole) in planned.items():
        print(write_text(path, whole), file=sys.stderr)
    client = CLIENT_NAMES[args.client]
    if args.url is not None:
        print(f"set {token_env} to the agent's token where {client} runs", file=sys.stderr)
    print(f"restart {client} to connect; `memory-mcp doctor` shows the settings", file=sys.stderr)
    return 0


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
