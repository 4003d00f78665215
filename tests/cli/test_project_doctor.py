"""How the current project is chosen and what moves it, as a user finds out: `memory-mcp
doctor` says which project a command run here works in and why, and when a repository
gains an `origin` remote (its project renamed from `folder-hash` to `owner/repo`), doctor
and `memory-mcp projects` say where its memories went and the command that brings them
back. Real `git` work trees, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from memory_mcp.cli.main import main as cli_main
from tests.conftest import in_process
from tests.rules.test_projects import git, repository


def run(tmp_path: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    variables = {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "HF_HUB_OFFLINE": "1",
    }
    return in_process(lambda: cli_main(list(args)), variables=variables, cwd=cwd)


def test_doctor_names_the_project_and_what_moves_it(tmp_path: Path) -> None:
    alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    _, out, _ = run(tmp_path, alpha, "doctor")
    assert "project: acme/alpha  [the origin remote of" in out
    assert "changing the origin remote renames it" in out
    _, out, _ = run(tmp_path, tmp_path, "doctor")
    assert "project: none" in out and "in no git work tree" in out
    _, out, _ = run(tmp_path, alpha, "doctor", "--project", "acme/other")
    assert "project: acme/other  [flag]" in out


def test_a_repository_that_gains_an_origin_is_told_where_its_memories_are(
    tmp_path: Path,
) -> None:
    gamma = repository(tmp_path / "gamma")
    assert run(tmp_path, gamma, "store", "deploy", "gamma deploys with make ship")[0] == 0
    _, out, _ = run(tmp_path, gamma, "doctor")
    local = out.split("project: ")[1].split()[0]
    assert local.startswith("gamma-") and "adding an origin remote" in out

    git("remote", "add", "origin", "https://github.com/acme/gamma.git", cwd=gamma)
    code, listed, _ = run(tmp_path, gamma, "list", "--json")
    assert json.loads(listed)["memories"] == []  # out of sight: the project is acme/gamma
    code, out, _ = run(tmp_path, gamma, "doctor")
    command = f"memory-mcp projects move --from {local} --to acme/gamma --all"
    assert code == 1 and f"1 memories are in project {local}" in out and command in out
    _, _, err = run(tmp_path, gamma, "projects")
    assert command in err

    code, _, err = run(tmp_path, gamma, *command.split()[1:])
    assert code == 0, err
    listed = json.loads(run(tmp_path, gamma, "list", "--json")[1])["memories"]
    assert [(m["key"], m["project"]) for m in listed] == [("deploy", "acme/gamma")]
    assert command not in run(tmp_path, gamma, "projects")[2]
