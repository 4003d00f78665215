"""`memory-mcp setup` on a machine that has used memory-mcp already: the memories stored
so far as agent `default` stay in sight. Without `--agent-id` the new settings file keeps
the agent those memories belong to and says so; with `--agent-id` naming another, setup
does as told and says how many memories that leaves behind and the line that brings them
back, and `doctor` says it again later. Real processes throughout (`memory-mcp import`,
`store`, `setup`, `list`, `search`, `doctor`), in a real git work tree, a temp HOME
(conftest, hermetic) and a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.rules.test_projects import repository

EXE = str(Path(sys.executable).with_name("memory-mcp"))


def memory_mcp(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [EXE, *args],
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def keys_listed(repo: Path) -> list[str]:
    listed = json.loads(memory_mcp(repo, "list", "--json").stdout)["memories"]
    return sorted(memory["key"] for memory in listed)


def used_as_default(hermetic: Path) -> Path:
    """A repository where the CLI stored six memories of agent `default`, and a swarm one."""
    repo = repository(hermetic / "src" / "a", "git@github.com:acme/a.git")
    lines = hermetic / "notes.jsonl"  # one process stores the six
    lines.write_text(
        "".join(
            json.dumps({"key": f"note-{n}", "value": f"deploy step {n} for service a"}) + "\n"
            for n in range(6)
        )
    )
    memory_mcp(repo, "import", str(lines))
    memory_mcp(repo, "store", "shared", "the team deploys on Tuesdays", "--scope", "swarm")
    assert len(keys_listed(repo)) == 7
    return repo


def settings_file(hermetic: Path) -> Path:
    return hermetic / ".config" / "memory-mcp" / "config.toml"


def test_setup_keeps_the_agent_whose_memories_the_store_holds(hermetic: Path) -> None:
    repo = used_as_default(hermetic)
    done = memory_mcp(repo, "setup", "claude-code")
    assert "claude-code will be agent 'default'" in done.stderr
    assert "the store holds 6 memories of that agent" in done.stderr
    assert 'agent_id = "default"' in settings_file(hermetic).read_text()
    # Nothing vanished: list and search as the agent the hooks and server now run as.
    assert len(keys_listed(repo)) == 7
    found = json.loads(memory_mcp(repo, "search", "deploy step 3", "--json").stdout)
    assert "note-3" in {hit["key"] for hit in found["results"]}


def test_setup_told_another_agent_says_what_it_leaves_and_how_to_return(
    hermetic: Path,
) -> None:
    repo = used_as_default(hermetic)
    done = memory_mcp(repo, "setup", "claude-code", "--agent-id", "claude-code")
    path = settings_file(hermetic)
    told = f'set agent_id = "default" in {path}'
    assert "the store holds 6 memories of agent 'default'" in done.stderr
    assert told in done.stderr
    assert keys_listed(repo) == ["shared"]  # as asked: an agent of its own
    # `doctor` keeps saying it, for whoever set up before setup said so.
    doctor = subprocess.run(
        [EXE, "doctor"], cwd=repo, capture_output=True, text=True, timeout=120, check=False
    )
    assert "note: the store holds 6 memories of agent 'default'" in doctor.stdout
    assert told in doctor.stdout
    # Doing what it said brings them back.
    path.write_text(path.read_text().replace('"claude-code"', '"default"'))
    assert len(keys_listed(repo)) == 7


def test_a_first_setup_with_no_memories_names_the_client(hermetic: Path) -> None:
    done = memory_mcp(hermetic, "setup", "claude-code")
    assert "memories of that agent" not in done.stderr
    assert 'agent_id = "claude-code"' in settings_file(hermetic).read_text()
