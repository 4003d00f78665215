"""The suite never reads the user's settings, store or notes: every test runs as a user
of its own (tests/conftest.py, `hermetic`), and so does every process a test spawns.

The proof plants what a real user has: a settings file in ~/.config/memory-mcp (the
README's own set-up step), Claude Code's ~/.claude.json and ~/.claude/settings.json and
MEMORY_MCP_* variables, all hostile (another agent, a lead, a store of their own, a
runtime that is not installed, limits that break tests), then runs, in a pytest of its
own, the probes and one test that writes into a user's Claude files, and checks that the
hostile home was not touched, byte for byte. The probes see every planted setting at its
default, in a test and in a process it spawns: the way the tests that once failed under
such a home went wrong (test_search_at_once and the kill -9 import test read the file's
search wait and memory limit in-process) is what they check, for every planted setting
at once, without running those tests' servers and imports (~8 s of CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from memory_mcp.settings import Settings, config_file

ROOT = Path(__file__).resolve().parent.parent
# Every setting the hostile home plants, in its settings file or its variables.
PLANTED = (
    "agent_id",
    "role",
    "db",
    "memory_dir",
    "search_model_wait_seconds",
    "max_memories_per_agent",
    "embedder",
    "search_value_chars",
    "watch",
)
DEFAULTS = {name: Settings.model_fields[name].default for name in PLANTED}
# Read by a spawned interpreter: what a server, a hook or the CLI would take as settings.
SHOW_SETTINGS = (
    "import json; from memory_mcp.settings import Settings, config_file; s = Settings(); "
    f"print(json.dumps([s.model_dump(mode='json', include=set({PLANTED!r})), "
    "str(s.data_dir), str(config_file())]))"
)
# A test that writes into the user's Claude Code files and settings file (its own HOME's).
WRITES_HOME = [
    "tests/cli/test_client_setup.py::test_setup_merges_into_the_users_files_and_keeps_theirs",
]
PROBES = [
    "tests/test_hermetic.py::test_a_test_sees_none_of_the_users_settings",
    "tests/test_hermetic.py::test_a_spawned_process_sees_none_either",
]


def test_a_test_sees_none_of_the_users_settings(hermetic: Path) -> None:
    assert [name for name in os.environ if name.upper().startswith("MEMORY_MCP_")] == []
    assert Path.home() == hermetic
    assert config_file() == hermetic / ".config" / "memory-mcp" / "config.toml"
    assert not config_file().exists()
    settings = Settings()
    assert {name: getattr(settings, name) for name in PLANTED} == DEFAULTS
    assert settings.data_dir == hermetic / ".local" / "share" / "memory-mcp"


def test_a_spawned_process_sees_none_either(hermetic: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SHOW_SETTINGS], capture_output=True, text=True, check=True
    )
    values, data_dir, config = json.loads(done.stdout)
    assert values == json.loads(json.dumps(DEFAULTS))
    assert Path(data_dir).is_relative_to(hermetic)
    assert Path(config).is_relative_to(hermetic)


def hostile_home(home: Path) -> dict[str, str]:
    """A user's home with every kind of setting the suite must not see, and the
    environment that goes with it."""
    (home / ".config" / "memory-mcp").mkdir(parents=True)
    (home / ".config" / "memory-mcp" / "config.toml").write_text(
        f'agent_id = "evil"\nrole = "lead"\ndb = "{home}/evil.db"\n'
        f'memory_dir = "{home}/notes"\nsearch_model_wait_seconds = 0\n'
        "max_memories_per_agent = 1\n",
        encoding="utf-8",
    )
    (home / ".claude").mkdir()
    hook = {"type": "command", "command": f"MEMORY_MCP_AGENT_ID=evil {home}/hook"}
    settings = {"hooks": {"SessionStart": [{"hooks": [hook]}]}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    server = {"command": f"{home}/evil-server", "args": []}
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"memory": server}}))
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("XDG_", "MEMORY_MCP_"))
    }
    env.update(
        HOME=str(home),
        MEMORY_MCP_AGENT_ID="evil",
        MEMORY_MCP_ROLE="lead",
        MEMORY_MCP_DB=str(home / "env.db"),
        MEMORY_MCP_EMBEDDER="sentence-transformers",  # not installed: fails if it leaks
        MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS="0",
        MEMORY_MCP_SEARCH_VALUE_CHARS="50",
        MEMORY_MCP_WATCH="false",
    )
    return env


def snapshot(home: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(home)): p.read_bytes() if p.is_file() else None for p in home.rglob("*")
    }


def test_a_hostile_user_setup_changes_no_test_result(tmp_path: Path) -> None:
    home = tmp_path / "hostile-home"
    env = hostile_home(home)
    before = snapshot(home)
    probe = subprocess.run(
        [sys.executable, "-c", SHOW_SETTINGS], env=env, capture_output=True, text=True
    )
    seen = json.loads(probe.stdout)[0]
    defaults = json.loads(json.dumps(DEFAULTS))
    # Outside the suite, each planted setting is in force: none of the probes is idle.
    assert [name for name in PLANTED if seen[name] == defaults[name]] == [], seen
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            f"--basetemp={tmp_path / 'inner'}",
            *PROBES,
            *WRITES_HOME,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert snapshot(home) == before
