"""`memory-mcp setup CLIENT` (claude-code, claude-desktop, cursor, vscode, codex): the
configs they print start a real server (the command and args, spawned as the client
would, answer `initialize`; Claude Code 2.1.328 itself reports the server it was set up
for connected, local and team), the hooks they print reach the same store, writing merges
into a user's files (JSON, or Codex's TOML with its comments) without losing anything of
theirs, and `--url` points a client (and Claude Code's hooks, at a real team server) at
a team server with the token left in a variable.
Every file lives in the test's own HOME (conftest, hermetic). `setup` runs in this
process (`cli`: the same `main`, its output and exit code) but for one real `memory-mcp
setup` before Claude Code connects: what it writes is this interpreter's paths either way,
the memory-mcp beside the Python that runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.cli.test_cli import cli
from tests.conftest import call
from tests.http.team_server import running, token_add

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))
# npm @anthropic-ai/claude-code 2.1.328, installed by the Makefile (NPM_PACKAGES).
CLAUDE = Path(__file__).resolve().parents[2] / ".venv" / "npm" / "node_modules" / ".bin" / "claude"
URL = "https://memory.example.com/mcp"
SESSION_START = {
    "session_id": "s-1",
    "transcript_path": "/t.jsonl",
    "cwd": "/",
    "hook_event_name": "SessionStart",
    "source": "startup",
}


def setup(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("setup", *args)


def printed(client: str) -> dict[str, Any]:
    done = setup(client, "--print")
    assert done.returncode == 0, done.stderr
    files: dict[str, Any] = json.loads(done.stdout)
    return files


def files_in(home: Path) -> dict[str, str]:
    return {
        str(p.relative_to(home)): p.read_text(encoding="utf-8")
        for p in sorted(home.rglob("*"))
        if p.is_file()
    }


SERVERS_KEY = {"vscode": "servers", "codex": "mcp_servers"}


CLIENTS = ["claude-code", "claude-desktop", "cursor", "vscode", "codex"]
# The one file each client's --print names (Claude Code's are checked below).
CONFIG_FILES = {
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "codex": ".codex/config.toml",
}


async def test_the_printed_configs_start_a_server_that_answers(
    hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each client's printed entry is started as the client would start it. The five print
    the same command and args today, so that server starts once (a server per client cost
    ~2.5 s of CPU each for the same check); a client whose entry differs gets its own."""
    monkeypatch.chdir(hermetic)  # VS Code's file is the workspace's
    entries: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    hooks: dict[str, Any] = {}
    for client in CLIENTS:
        files = printed(client)
        assert files_in(hermetic) == {}, f"{client}: --print wrote something"
        key = SERVERS_KEY.get(client, "mcpServers")
        (config,) = [part for part in files.values() if key in part]
        entry = config[key]["memory"]
        assert Path(entry["command"]).is_absolute(), (client, entry)
        entries.setdefault((entry["command"], tuple(entry["args"])), []).append(client)
        if client in CONFIG_FILES:
            assert list(files) == [str(hermetic / CONFIG_FILES[client])], client
        else:
            hooks = files[str(hermetic / ".claude" / "settings.json")]["hooks"]
    for n, ((command, args), clients) in enumerate(entries.items()):
        params = StdioServerParameters(command=command, args=list(args), env=None)
        async with Client(params, read_timeout_seconds=120) as mcp:
            assert mcp.server_info is not None and mcp.server_info.name == "memory-mcp", clients
            stored = await call(mcp, "memory-store", key=f"editor-{n}", value="We use Neovim")
        assert stored["version"] == 1, clients
    assert sorted(hooks) == [
        "PostToolUse",
        "PreCompact",
        "SessionEnd",
        "SessionStart",
        "UserPromptSubmit",
    ]
    (group,) = hooks["SessionStart"]
    done = subprocess.run(
        group["hooks"][0]["command"],
        shell=True,
        input=json.dumps(SESSION_START),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "We use Neovim" in done.stdout  # the hooks read the store the server wrote


def claude_code_sees_memory() -> str:
    """`claude mcp list` in the test's HOME, no login, no network: Claude Code's own
    health check of each configured server. Returns the line for the server `memory`."""
    env = {
        **os.environ,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    done = subprocess.run(
        [CLAUDE, "mcp", "list"],
        cwd=os.environ["HOME"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("memory: ")]
    assert len(lines) == 1, done.stdout
    return lines[0]


def test_claude_code_connects_to_the_server_setup_added(hermetic: Path) -> None:
    """The README's two steps as a user takes them: the `memory-mcp setup` process, then
    Claude Code."""
    done = subprocess.run(
        [EXE, "setup", "claude-code"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert claude_code_sees_memory() == f"memory: {EXE} serve - ✔ Connected"


def plant(home: Path) -> dict[str, Any]:
    """A user's Claude files with entries of their own, and memory-mcp entries written by
    hand from the README's old snippets."""
    claude_json = {
        "numStartups": 41,
        "projects": {"/src/app": {"mcpServers": {"db": {"command": "db-mcp"}}}},
        "mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
            "memory": {"command": "/path/to/memory-mcp/.venv/bin/memory-mcp", "args": ["serve"]},
        },
    }
    lint = {"type": "command", "command": "ruff check --fix", "timeout": 30}
    old = {"type": "command", "command": "/path/to/memory-mcp/hooks/post-tool-use"}
    settings = {
        "permissions": {"allow": ["Bash(make test)"]},
        "hooks": {
            "PostToolUse": [{"matcher": "Write|Edit", "hooks": [lint, old]}],
            "SessionStart": [
                {
                    "hooks": [
                        {"type": "command", "command": "/path/to/memory-mcp/hooks/session-start"}
                    ]
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    }
    (home / ".claude").mkdir()
    (home / ".claude.json").write_text(json.dumps(claude_json), encoding="utf-8")
    dotfiles = home / "dotfiles" / "claude-settings.json"  # kept in a repository, linked
    dotfiles.parent.mkdir()
    dotfiles.write_text(json.dumps(settings), encoding="utf-8")
    (home / ".claude" / "settings.json").symlink_to(dotfiles)
    return {"claude_json": claude_json, "settings": settings, "lint": lint}


def test_setup_merges_into_the_users_files_and_keeps_theirs(hermetic: Path) -> None:
    mine = plant(hermetic)
    originals = files_in(hermetic)
    first = setup("claude-code", "--agent-id", "me")
    assert first.returncode == 0, first.stderr
    after_first = files_in(hermetic)
    again = setup("claude-code")  # the settings file says "me" now: no conflict
    assert again.returncode == 0, again.stderr
    assert files_in(hermetic) == after_first, "a second setup changed something"

    claude_json = json.loads(after_first[".claude.json"])
    assert claude_json["numStartups"] == 41
    assert claude_json["projects"] == mine["claude_json"]["projects"]
    servers = claude_json["mcpServers"]
    assert servers["github"] == mine["claude_json"]["mcpServers"]["github"]
    assert servers["memory"] == {"type": "stdio", "command": EXE, "args": ["serve"]}

    assert (hermetic / ".claude" / "settings.json").is_symlink()  # still the user's link
    assert after_first[".claude/settings.json"] == after_first["dotfiles/claude-settings.json"]
    settings = json.loads(after_first[".claude/settings.json"])
    assert settings["permissions"] == mine["settings"]["permissions"]
    assert settings["hooks"]["Stop"] == mine["settings"]["hooks"]["Stop"]
    commands = {
        event: [hook["command"] for group in groups for hook in group["hooks"]]
        for event, groups in settings["hooks"].items()
    }
    python = str(Path(sys.executable).absolute())
    assert commands["PostToolUse"] == [
        "ruff check --fix",  # theirs, in their group, the old memory-mcp hook gone from it
        f"{python} -m memory_mcp.hooks post-tool-use",
    ]
    assert settings["hooks"]["PostToolUse"][0]["hooks"] == [mine["lint"]]
    assert commands["SessionStart"] == [f"{python} -m memory_mcp.hooks session-start"]
    assert commands["SessionEnd"] == [f"{python} -m memory_mcp.hooks session-end"]

    assert after_first[".claude.json.bak"] == originals[".claude.json"]
    assert after_first["dotfiles/claude-settings.json.bak"] == originals[".claude/settings.json"]
    assert 'agent_id = "me"' in after_first[".config/memory-mcp/config.toml"]
    doctor = cli("doctor")
    assert "ok: the server and the hooks agree" in doctor.stdout, doctor.stdout
    (agent_line,) = [line for line in doctor.stdout.splitlines() if line.startswith("agent_id")]
    assert agent_line.split() == ["agent_id", "me", "[config", "file]", "me", "[config", "file]"]

    desktop = hermetic / "desktop" / "claude_desktop_config.json"
    desktop.parent.mkdir()
    desktop.write_text('{"mcpServers": {"fs": {"command": "fs-mcp"}}, "theme": "dark"}')
    done = setup("claude-desktop", "--client-config", str(desktop))
    assert done.returncode == 0, done.stderr
    assert json.loads(desktop.read_text()) == {
        "mcpServers": {"fs": {"command": "fs-mcp"}, "memory": {"command": EXE, "args": ["serve"]}},
        "theme": "dark",
    }


@pytest.mark.parametrize(
    ("settings_json", "args", "expected"),
    [
        ("{not json", (), "cannot read {home}/.claude/settings.json: Expecting property name"),
        ('["a list"]', (), "{home}/.claude/settings.json is not a JSON object"),
        ('{"hooks": []}', (), "invalid hooks config: its hooks is not a JSON object"),
        ('{"hooks": {"SessionEnd": {}}}', (), "its hooks.SessionEnd is not a JSON list"),
        ("{}", ("--agent-id", "\x07"), "invalid agent-id: must be 1-128 printable characters"),
    ],
)
def test_setup_refuses_what_it_cannot_merge_and_writes_nothing(
    hermetic: Path, settings_json: str, args: tuple[str, ...], expected: str
) -> None:
    (hermetic / ".claude").mkdir()
    (hermetic / ".claude" / "settings.json").write_text(settings_json, encoding="utf-8")
    before = files_in(hermetic)
    done = setup("claude-code", *args)
    assert done.returncode == 1
    assert expected.format(home=hermetic) in done.stderr
    assert done.stdout == ""
    assert files_in(hermetic) == before


def test_an_agent_id_other_than_the_settings_files_is_refused(hermetic: Path) -> None:
    """Claude Code's server and hooks both read the settings file: another id there would
    split them."""
    settings = hermetic / ".config" / "memory-mcp" / "config.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text('agent_id = "claude-desktop"\n', encoding="utf-8")
    done = setup("claude-code", "--agent-id", "coder")
    assert done.returncode == 1
    assert f"{settings} says agent_id = 'claude-desktop'" in done.stderr
    assert sorted(files_in(hermetic)) == [".config/memory-mcp/config.toml"]
    assert os.environ["HOME"] == str(hermetic)


def test_claude_desktop_says_whose_agent_it_is_or_gets_its_own(hermetic: Path) -> None:
    """Issue 35: `setup claude-desktop` silently reused the claude-code agent id. It says
    so now, and `--agent-id` gives Desktop (no hooks) its own in its server's arguments."""
    assert setup("claude-code", "--no-hooks").returncode == 0
    desktop = hermetic / "desktop.json"
    shared = setup("claude-desktop", "--client-config", str(desktop))
    assert shared.returncode == 0, shared.stderr
    assert "claude-desktop will be agent 'claude-code'" in shared.stderr
    assert json.loads(desktop.read_text())["mcpServers"]["memory"]["args"] == ["serve"]
    own = setup("claude-desktop", "--client-config", str(desktop), "--agent-id", "desk")
    assert own.returncode == 0, own.stderr
    entry = json.loads(desktop.read_text())["mcpServers"]["memory"]
    assert entry["args"] == ["serve", "--agent-id", "desk"]
    assert (
        'agent_id = "claude-code"'
        in (hermetic / ".config" / "memory-mcp" / "config.toml").read_text()
    )


def test_a_file_that_already_holds_it_is_not_rewritten(hermetic: Path) -> None:
    """Issue 35: setup rewrote a file it had nothing to add to (laid out otherwise) and
    made a .bak."""
    desktop = hermetic / "desktop.json"
    entry = {"command": EXE, "args": ["serve"]}
    desktop.write_text(json.dumps({"theme": "dark", "mcpServers": {"memory": entry}}))
    before = desktop.read_text()
    done = setup("claude-desktop", "--client-config", str(desktop))
    assert done.returncode == 0, done.stderr
    assert f"unchanged: {desktop}" in done.stderr
    assert desktop.read_text() == before
    assert not desktop.with_name("desktop.json.bak").exists()


CODEX_CONFIG = """\
# my Codex settings
model = "o4-mini"  # the fast one

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[mcp_servers.memory]
command = "/path/to/old/memory-mcp"
"""


def test_codex_setup_keeps_the_users_toml_comments_and_servers(hermetic: Path) -> None:
    config = hermetic / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG, encoding="utf-8")
    done = setup("codex")
    assert done.returncode == 0, done.stderr
    text = config.read_text(encoding="utf-8")
    assert text.startswith('# my Codex settings\nmodel = "o4-mini"  # the fast one\n')
    assert "/path/to/old/memory-mcp" not in text
    parsed = tomllib.loads(text)
    assert parsed["mcp_servers"]["github"]["args"] == ["-y", "@modelcontextprotocol/server-github"]
    assert parsed["mcp_servers"]["memory"] == {"command": EXE, "args": ["serve"]}
    assert (hermetic / ".codex" / "config.toml.bak").read_text(encoding="utf-8") == CODEX_CONFIG
    again = setup("codex")
    assert again.returncode == 0 and "unchanged" in again.stderr, again.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("model = [unclosed", "cannot read {path}"),
        ("mcp_servers = 3", "mcp_servers is not a table"),
    ],
)
def test_codex_setup_refuses_a_file_it_cannot_merge(
    hermetic: Path, text: str, expected: str
) -> None:
    config = hermetic / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(text, encoding="utf-8")
    before = files_in(hermetic)
    done = setup("codex")
    assert done.returncode == 1
    assert expected.format(path=config) in done.stderr
    assert files_in(hermetic) == before


def test_vscode_and_cursor_setups_keep_the_users_entries(
    hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(hermetic)
    vscode = hermetic / ".vscode" / "mcp.json"
    vscode.parent.mkdir()
    theirs = {
        "inputs": [{"id": "key", "type": "promptString"}],
        "servers": {"db": {"command": "d"}},
    }
    vscode.write_text(json.dumps(theirs), encoding="utf-8")
    assert setup("vscode").returncode == 0
    merged = json.loads(vscode.read_text(encoding="utf-8"))
    assert merged["inputs"] == theirs["inputs"]
    assert merged["servers"]["db"] == {"command": "d"}
    assert merged["servers"]["memory"] == {"type": "stdio", "command": EXE, "args": ["serve"]}
    cursor = hermetic / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text('{"mcpServers": {"web": {"url": "https://w.example/mcp"}}}')
    assert setup("cursor").returncode == 0
    servers = json.loads(cursor.read_text(encoding="utf-8"))["mcpServers"]
    assert servers == {
        "web": {"url": "https://w.example/mcp"},
        "memory": {"command": EXE, "args": ["serve"]},
    }


@pytest.mark.parametrize(
    ("client", "entry"),
    [
        ("codex", {"url": URL, "bearer_token_env_var": "TEAM_TOKEN"}),
        (
            "claude-code",
            {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"}},
        ),
        ("cursor", {"url": URL, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}}),
        (
            "vscode",
            {"type": "http", "url": URL, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}},
        ),
    ],
)
def test_a_team_server_is_reached_with_the_token_in_a_variable(
    hermetic: Path, monkeypatch: pytest.MonkeyPatch, client: str, entry: dict[str, Any]
) -> None:
    monkeypatch.chdir(hermetic)
    done = setup(client, "--url", URL, "--token-env", "TEAM_TOKEN", "--print")
    assert done.returncode == 0, done.stderr
    parts = list(json.loads(done.stdout).values())
    assert parts[0][SERVERS_KEY.get(client, "mcpServers")] == {"memory": entry}


def test_claude_desktop_is_sent_to_its_connectors_for_a_team_server(hermetic: Path) -> None:
    done = setup("claude-desktop", "--url", URL)
    assert done.returncode == 1
    assert (
        "invalid url: Claude Desktop connects to a team server as a custom connector" in done.stderr
    )
    assert files_in(hermetic) == {}


async def test_claude_codes_hooks_follow_the_team_server_of_its_entry(
    hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`setup claude-code --url`: the server entry and the hooks reach the same team server
    as the same agent, the token read from the variable --token-env names when each runs;
    no file holds the token. Without that variable a hook says so and falls back to no
    local store (one is planted, with a memory the hook must not print)."""
    team = tmp_path / "team"
    team.mkdir()
    token = token_add(team / "team.db", "alice")
    with running(team, "streamable-http", team / "team.db") as server:
        done = setup("claude-code", "--url", server.url, "--token-env", "TEAM_TOKEN")
        assert done.returncode == 0, done.stderr
        names = [".claude.json", ".claude/settings.json", ".config/memory-mcp/config.toml"]
        written = {name: (hermetic / name).read_text(encoding="utf-8") for name in names}
        assert [name for name, text in written.items() if token in text] == []
        local = tmp_path / "local.jsonl"
        local.write_text('{"key": "local.editor", "value": "Local edits with Nano"}\n')
        # An async test: the command's own event loop runs in a thread of its own.
        imported = await anyio.to_thread.run_sync(cli, "import", str(local))
        assert imported.returncode == 0, imported.stderr

        monkeypatch.setenv("TEAM_TOKEN", token)
        assert claude_code_sees_memory().endswith(f"{server.url} (HTTP) - ✔ Connected")
        entry = json.loads(written[".claude.json"])["mcpServers"]["memory"]
        # As Claude Code connects: its ${VAR} expanded from the environment.
        headers = {name: os.path.expandvars(value) for name, value in entry["headers"].items()}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(
                streamable_http_client(entry["url"], http_client=http),
                mode="legacy",
                read_timeout_seconds=120,
            ) as mcp,
        ):
            await call(mcp, "memory-store", key="alice.editor", value="Alice edits with Helix")

        hooks = json.loads(written[".claude/settings.json"])["hooks"]
        commands = [
            hook["command"] for groups in hooks.values() for g in groups for hook in g["hooks"]
        ]
        prefix = f'MEMORY_MCP_URL={server.url} MEMORY_MCP_TOKEN="${{TEAM_TOKEN}}" '
        assert len(commands) == 5 and all(c.startswith(prefix) for c in commands), commands
        monkeypatch.setenv("MEMORY_MCP_HOOK_BUDGET_SECONDS", "60")  # the MCP client's import

        def session_start() -> subprocess.CompletedProcess[str]:
            (group,) = hooks["SessionStart"]
            return subprocess.run(
                group["hooks"][0]["command"],
                shell=True,
                input=json.dumps(SESSION_START),
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )

        found = session_start()
        assert found.returncode == 0, found.stderr
        assert "Alice edits with Helix" in found.stdout
        assert "Local edits with Nano" not in found.stdout
        monkeypatch.delenv("TEAM_TOKEN")
        refused = session_start()
    assert (refused.returncode, refused.stdout) == (0, ""), refused.stderr
    assert "needs this agent's token in MEMORY_MCP_TOKEN" in refused.stderr
    context = await anyio.to_thread.run_sync(cli, "context")
    assert "Local edits with Nano" in context.stdout  # the store a fallback would have read


def test_a_token_env_that_is_no_variable_name_is_refused(hermetic: Path) -> None:
    """It goes into the hooks' shell commands: nothing but a name may."""
    done = setup("claude-code", "--url", URL, "--token-env", "X; rm -rf ~")
    assert done.returncode == 1
    assert "invalid token-env: 'X; rm -rf ~' is not an environment variable name" in done.stderr
    assert files_in(hermetic) == {}
