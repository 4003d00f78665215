"""A remote's host is part of its project where it tells two repositories apart: GitHub's
`acme/x` and GitLab's `acme/x` are two projects, while GitHub remotes keep the `owner/repo`
every store already holds their memories under. Memories a GitLab repository stored
before the host was kept are not lost from sight without a word: `doctor` and `projects`
name them and the command that moves them. Real `git` work trees, the real CLI (a process
of its own for the stores, as a user runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.test_project_doctor import run
from tests.rules.test_projects import repository

EXE = str(Path(sys.executable).with_name("memory-mcp"))


def store(tmp_path: Path, cwd: Path, key: str, value: str, *more: str) -> dict[str, object]:
    variables = {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [EXE, "store", key, value, "--json", *more],
        cwd=cwd,
        env={**os.environ, **variables},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    stored: dict[str, object] = json.loads(done.stdout)
    return stored


def listed(tmp_path: Path, cwd: Path) -> list[tuple[str, str]]:
    code, out, err = run(tmp_path, cwd, "list", "--json")
    assert code == 0, err
    return sorted((m["key"], m["project"]) for m in json.loads(out)["memories"])


def test_github_and_gitlab_repositories_of_one_name_are_two_projects(tmp_path: Path) -> None:
    github = repository(tmp_path / "gh" / "x", "git@github.com:acme/x.git")
    gitlab = repository(tmp_path / "gl" / "x", "https://gitlab.com/acme/x.git")
    assert store(tmp_path, github, "deploy", "ship with GitHub Actions")["project"] == "acme/x"
    assert store(tmp_path, gitlab, "deploy", "ship with GitLab CI")["project"] == (
        "gitlab.com/acme/x"
    )
    assert listed(tmp_path, github) == [("deploy", "acme/x")]
    assert listed(tmp_path, gitlab) == [("deploy", "gitlab.com/acme/x")]
    _, out, _ = run(tmp_path, gitlab, "doctor")
    assert "project: gitlab.com/acme/x  [the origin remote of" in out


def test_a_gitlab_repositorys_earlier_memories_are_named_with_the_move(tmp_path: Path) -> None:
    gitlab = repository(tmp_path / "gl" / "x", "git@gitlab.com:acme/x.git")
    # What a store holds from before hosts were kept: the GitLab repository's memory
    # under `acme/x` (the name it was given then).
    store(tmp_path, gitlab, "runbook", "restart the worker first", "--project", "acme/x")
    assert listed(tmp_path, gitlab) == []  # out of the project's sight, but said:
    command = "memory-mcp projects move --from acme/x --to gitlab.com/acme/x --all"
    code, out, _ = run(tmp_path, gitlab, "doctor")
    assert code == 1 and "1 memories are in project acme/x" in out and command in out
    assert "--dry-run" in out  # GitHub's acme/x had that name too: look first
    _, _, err = run(tmp_path, gitlab, "projects")
    assert command in err
    code, _, err = run(tmp_path, gitlab, *command.split()[1:])
    assert code == 0, err
    assert listed(tmp_path, gitlab) == [("runbook", "gitlab.com/acme/x")]
    _, _, err = run(tmp_path, gitlab, "projects")
    assert "acme/x" not in err  # nothing left behind, nothing said


def test_a_github_repository_keeps_its_name_and_its_memories(tmp_path: Path) -> None:
    # Stored as every GitHub repository's memories were before hosts were kept.
    github = repository(tmp_path / "gh" / "x", "https://github.com/acme/x")
    store(tmp_path, tmp_path, "runbook", "restart the worker first", "--project", "acme/x")
    assert listed(tmp_path, github) == [("runbook", "acme/x")]
    code, out, _ = run(tmp_path, github, "doctor")
    assert "memories are in project" not in out
