"""Projects, without a server: the names, which projects a read covers and where a write
goes (rules/permissions.py), the identities, and the current project read from a git work
tree (rules/projects.py) made by the real `git`, as a user's would be."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memory_mcp.errors import InvalidInputError, PermissionDeniedError
from memory_mcp.models import Caller, MemoryRecord, NewMemory, Role, Scope, Source
from memory_mcp.rules import permissions
from memory_mcp.rules.permissions import Change, Target
from memory_mcp.rules.projects import current_project, notes_folder_of, project_of_remote

STDIO = Caller("me", Role.WORKER, "s")
IN_ALPHA = Caller("me", Role.WORKER, "s", project="alpha")
ALPHA_TOKEN = Caller("w", Role.WORKER, "s", project="alpha", grants=frozenset({"alpha"}))
ALPHA_LEAD = Caller("lead", Role.LEAD, "s", grants=frozenset({"alpha", "beta"}))


@pytest.mark.parametrize(
    ("caller", "asked", "covers"),
    [
        (STDIO, None, None),  # no current project: every project
        (STDIO, "*", None),
        (STDIO, "beta", {"beta", "*"}),
        (IN_ALPHA, None, {"alpha", "*"}),
        (IN_ALPHA, "*", None),
        (IN_ALPHA, "beta", {"beta", "*"}),
        (ALPHA_TOKEN, None, {"alpha", "*"}),
        (ALPHA_TOKEN, "*", {"alpha", "*"}),  # every project it may read, not every project
        (ALPHA_LEAD, None, {"alpha", "beta", "*"}),
    ],
)
def test_which_projects_a_read_covers(
    caller: Caller, asked: str | None, covers: set[str] | None
) -> None:
    found = permissions.readable_projects(caller, asked)
    assert (None if found is None else set(found)) == covers


def test_a_project_outside_the_grants_is_refused_by_name() -> None:
    with pytest.raises(PermissionDeniedError, match="'beta' is not one of yours"):
        permissions.readable_projects(ALPHA_TOKEN, "beta")
    with pytest.raises(PermissionDeniedError, match="'beta'"):
        permissions.written_project(ALPHA_TOKEN, "beta")


@pytest.mark.parametrize("name", ["", "-x", "a b", "x" * 101, "a\x1fb", ".hidden", "ü"])
def test_a_bad_project_name_names_the_argument(name: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        permissions.written_project(STDIO, name)
    assert refused.value.field == "project"


def test_where_a_write_goes() -> None:
    assert permissions.written_project(STDIO) == "*"
    assert permissions.written_project(IN_ALPHA) == "alpha"
    assert permissions.written_project(IN_ALPHA, "*") == "*"
    assert permissions.written_project(IN_ALPHA, "acme/payments") == "acme/payments"
    assert permissions.written_project(ALPHA_TOKEN) == "alpha"
    # Only a caller with every project writes `*`.
    with pytest.raises(PermissionDeniedError, match="every project may write to project"):
        permissions.written_project(ALPHA_TOKEN, "*")
    with pytest.raises(PermissionDeniedError):
        permissions.written_project(ALPHA_LEAD)  # no current project: `*`


def record(project: str, owner: str = "other", scope: Scope = Scope.SWARM) -> MemoryRecord:
    return MemoryRecord(
        *(1, "k", "v", scope, owner, "", Source.MANUAL, [], {}, [], None, False, 1, "h"),
        *(0.0, 0.0, None, None, 0),
        project=project,
    )


def test_can_see_a_memory_of_a_readable_project_only() -> None:
    assert permissions.can_see(ALPHA_TOKEN, record("alpha"))
    assert permissions.can_see(ALPHA_TOKEN, record("*"))
    assert not permissions.can_see(ALPHA_TOKEN, record("beta"))
    assert permissions.can_see(STDIO, record("beta"))  # ids are explicit: any project


def test_a_lead_leads_only_within_its_grants() -> None:
    def change(caller: Caller, project: str) -> bool:
        target = Target.of(record(project))  # another agent's swarm memory
        return permissions.decide(caller, target, Change.UPDATE) is None

    assert change(ALPHA_LEAD, "alpha")
    assert not change(ALPHA_LEAD, "gamma")
    assert not change(ALPHA_LEAD, "*")  # only with every project
    assert change(Caller("lead", Role.LEAD, "s"), "*")
    # Its own memory in `*` is not its to change either: a token with grants writes none.
    own = Target.of(record("*", owner="w"))
    assert permissions.decide(ALPHA_TOKEN, own, Change.DELETE) is not None


def test_identities_keep_every_project_memory_as_it_was() -> None:
    def new(project: str, task: str | None = None, scope: Scope = Scope.SWARM) -> NewMemory:
        return NewMemory(
            "deploy", "v", scope, "me", "s1", Source.MANUAL, project=project, task=task
        )

    assert new("*").identity == "swarm\x1fdeploy"  # as stored before projects
    assert new("*", scope=Scope.AGENT).identity == "agent\x1fme\x1fdeploy"
    assert new("acme/x").identity == "p\x1facme/x\x1fswarm\x1fdeploy"
    assert new("acme/x", "t1").identity == "task\x1facme/x\x1ft1\x1fdeploy"
    assert len({new(p, t).identity for p in ("*", "a", "b") for t in (None, "t1", "t2")}) == 9


# -- the current project from a git work tree, made by git itself --------------------------


def git(*args: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def repository(folder: Path, origin: str | None = None) -> Path:
    folder.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=folder)
    if origin is not None:
        git("remote", "add", "origin", origin, cwd=folder)
    return folder


def test_the_current_project_is_the_origin_remote(tmp_path: Path) -> None:
    ssh = repository(tmp_path / "one" / "payments", "git@github.com:Acme/Payments.git")
    https = repository(tmp_path / "two" / "payments-clone", "https://github.com/acme/payments")
    other = repository(tmp_path / "three" / "payments", "git@github.com:acme/billing.git")
    (ssh / "src" / "deep").mkdir(parents=True)
    assert current_project(None, ssh / "src" / "deep") == "acme/payments"
    # Two clones of one repository share it; the same folder name, another remote, not.
    assert current_project(None, https) == "acme/payments"
    assert current_project(None, other) == "acme/billing"
    # A named project wins; `*` means none; outside any work tree there is none.
    assert current_project("acme/other", ssh) == "acme/other"
    assert current_project("*", ssh) is None
    assert current_project(None, tmp_path) is None


def test_without_a_remote_two_repositories_of_one_name_stay_apart(tmp_path: Path) -> None:
    first = repository(tmp_path / "a" / "scratch")
    second = repository(tmp_path / "b" / "scratch")
    one, two = current_project(None, first), current_project(None, second)
    assert one is not None and two is not None and one != two
    assert one.startswith("scratch-") and len(one) == len("scratch-") + 6
    assert current_project(None, first) == one  # stable while the folder stays


def test_a_linked_work_tree_is_its_repository(tmp_path: Path) -> None:
    main = repository(tmp_path / "main", "ssh://git@example.com:2222/team/app.git")
    (main / "f").write_text("x")
    git("add", "f", cwd=main)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x", cwd=main)
    git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    assert (tmp_path / "linked" / ".git").is_file()
    assert current_project(None, tmp_path / "linked") == "example.com/team/app"


def test_a_submodule_reads_its_own_config(tmp_path: Path) -> None:
    """A submodule's `.git` is a file naming its git folder inside the superproject's."""
    modules = tmp_path / "super" / ".git" / "modules" / "lib"
    modules.mkdir(parents=True)
    (modules / "config").write_text('[remote "origin"]\n\turl = "https://host/acme/lib.git"\n')
    lib = tmp_path / "super" / "lib"
    lib.mkdir()
    (lib / ".git").write_text("gitdir: ../.git/modules/lib\n")
    assert current_project(None, lib) == "acme/lib"


def test_remote_urls_lose_credentials_port_suffix_and_githubs_host(tmp_path: Path) -> None:
    assert project_of_remote("https://user:ghp_secret@github.com/acme/x.git", tmp_path) == "acme/x"
    assert project_of_remote("ssh://git@ssh.github.com:443/acme/x.git", tmp_path) == "acme/x"
    assert project_of_remote("git@work-key:acme/x.git", tmp_path) == "acme/x"  # an ssh alias
    gitlab = "gitlab.com/group/sub/repo"
    assert project_of_remote("https://GitLab.com/group/sub/repo/", tmp_path) == gitlab
    assert project_of_remote("ssh://git@gitlab.com:2222/group/sub/repo.git", tmp_path) == gitlab
    local = project_of_remote("/srv/git/repo.git", tmp_path)
    assert local is not None and local.startswith("repo-")


def test_a_work_trees_notes_folder(tmp_path: Path) -> None:
    tree = repository(tmp_path / "app", "git@github.com:acme/app.git")
    assert notes_folder_of(tree) is None
    (tree / ".memory").mkdir()
    (tree / "src").mkdir()
    assert notes_folder_of(tree / "src") == (tree / ".memory").resolve()


def test_a_secret_is_no_project_or_task_name() -> None:
    from memory_mcp.checks.new_memory import checked_memory

    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for field, project, task in (("project", secret, None), ("task", "*", secret)):
        with pytest.raises(InvalidInputError) as refused:
            checked_memory(
                STDIO, 1000, key="k", value="v", scope=Scope.SWARM, source=Source.MANUAL,
                tags=[], metadata={}, expires_at=None, project=project, task=task,
            )  # fmt: skip
        assert refused.value.field == field and secret not in str(refused.value)
