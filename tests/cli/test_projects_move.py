"""`memory-mcp projects move` as a user runs it in real git work trees (made by the real
`git`): its selectors choose in the current project (or `--from`'s), never in the other
repositories' unless asked for by name; a selector that would span projects is refused,
saying so; each moved memory's history records the move; and the move goes in batches,
so a store from another process waits for a batch, not for the whole move."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from memory_mcp.cli.main import main as cli_main
from memory_mcp.models import Caller, Role, StoreRequest
from memory_mcp.rules import project_moves
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, in_process, opened
from tests.rules.test_projects import repository

EXE = str(Path(sys.executable).with_name("memory-mcp"))
ALPHA, BETA, GAMMA = "acme/alpha", "acme/beta", "acme/gamma"


class Repos:
    def __init__(self, tmp_path: Path) -> None:
        self.db = str(tmp_path / "store.db")
        self.home = tmp_path / "home"
        self.alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
        self.beta = repository(tmp_path / "beta", "git@github.com:acme/beta.git")
        self.gamma = repository(tmp_path / "gamma", "git@github.com:acme/gamma.git")
        self.outside = tmp_path

    def run(self, cwd: Path, *args: str) -> tuple[int, str, str]:
        variables = {
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "xdg"),
            "MEMORY_MCP_DB": self.db,
            "MEMORY_MCP_AGENT_ID": "me",
            "HF_HUB_OFFLINE": "1",
        }
        return in_process(lambda: cli_main(list(args)), variables=variables, cwd=cwd)

    def ok(self, cwd: Path, *args: str) -> tuple[str, str]:
        code, out, err = self.run(cwd, *args)
        assert code == 0, err
        return out, err


@pytest.fixture
def repos(tmp_path: Path) -> Repos:
    made = Repos(tmp_path)
    for tree, words in ((made.alpha, "alpha"), (made.beta, "beta"), (made.gamma, "gamma")):
        made.ok(tree, "store", "deploy", f"{words} deploys with make ship")
    made.ok(made.outside, "store", "deploy", "deploy on Fridays")  # project *
    made.ok(made.beta, "store", "runbook", "beta's runbook", "--source", "task_completion")
    return made


def projects_of(repos: Repos, key: str) -> dict[str, str]:
    """{project: value} of the memories with `key`, read from outside any project."""
    out, _ = repos.ok(repos.outside, "list", "--json", "--project", "*")
    return {m["project"]: m["value"] for m in json.loads(out)["memories"] if m["key"] == key}


def test_a_selector_chooses_in_the_current_project_only(repos: Repos) -> None:
    out, err = repos.ok(repos.gamma, "projects", "move", "--to", "acme/delta", "--key", "deploy")
    assert [line.split("\t")[1] for line in out.splitlines()] == [f"{GAMMA} -> acme/delta"]
    assert "moved 1 memories of project acme/gamma" in err
    after = projects_of(repos, "deploy")
    assert set(after) == {ALPHA, BETA, "acme/delta", "*"}  # alpha's, beta's and *'s stayed

    # --source in one repository is that repository's.
    out, _ = repos.ok(repos.alpha, "projects", "move", "--to", GAMMA, "--source", "manual")
    assert [line.split("\t")[2] for line in out.splitlines()] == ["deploy"]
    assert set(projects_of(repos, "deploy")) == {GAMMA, BETA, "acme/delta", "*"}


def test_the_from_project_and_every_project_are_named(repos: Repos) -> None:
    out, _ = repos.ok(repos.gamma, "projects", "move", "--to", GAMMA, "--key", "runbook",
                      "--from", BETA, "--dry-run")  # fmt: skip
    assert f"{BETA} -> {GAMMA}" in out
    # Outside any project a selector would reach every repository: refused, saying so.
    code, _, err = repos.run(repos.outside, "projects", "move", "--to", GAMMA, "--key", "deploy")
    assert code != 0
    assert "in no project" in err and "--from" in err and "--every-project" in err
    assert set(projects_of(repos, "deploy")) == {ALPHA, BETA, GAMMA, "*"}
    # Nothing here but something elsewhere: says where.
    code, _, err = repos.run(repos.gamma, "projects", "move", "--to", ALPHA, "--key", "runbook")
    assert code != 0 and "1 in 'acme/beta'" in err
    # Asked for by name, every project: four `deploy`s cannot share one project.
    code, _, err = repos.run(repos.outside, "projects", "move", "--to", "acme/all",
                             "--key", "deploy", "--every-project")  # fmt: skip
    assert code != 0 and "same key already: 'deploy'" in err
    assert set(projects_of(repos, "deploy")) == {ALPHA, BETA, GAMMA, "*"}
    out, _ = repos.ok(repos.outside, "projects", "move", "--to", "acme/all", "--key", "runbook",
                      "--every-project")  # fmt: skip
    assert f"{BETA} -> acme/all" in out


def test_a_move_is_recorded_in_the_history(repos: Repos) -> None:
    repos.ok(repos.beta, "projects", "move", "--to", GAMMA, "--key", "runbook")
    listed, _ = repos.ok(repos.gamma, "list", "--json")
    runbook = next(m for m in json.loads(listed)["memories"] if m["key"] == "runbook")
    got, _ = repos.ok(repos.gamma, "get", str(runbook["id"]), "--json")
    record = json.loads(got)
    assert record["project"] == GAMMA and record["version"] == 2
    assert record["metadata"]["moved_from"] == BETA
    history, _ = repos.ok(repos.gamma, "history", str(runbook["id"]), "--json")
    versions = json.loads(history)["versions"]
    assert [v["version"] for v in versions] == [1, 2]
    assert "moved_from" not in versions[0]["metadata"]
    assert versions[1]["metadata"]["moved_from"] == BETA and versions[1]["written_by"] == "me"


@pytest.mark.anyio
async def test_another_writer_waits_for_a_batch_not_the_move(tmp_path: Path) -> None:
    """The move runs in a process of its own (`memory-mcp projects move`); this process
    stores meanwhile, as another server would, and times each store. The store's lock is
    handed between processes (store/engine.py): one transaction for the whole move kept
    each store waiting for all of it."""
    count = 6 * project_moves.MOVE_BATCH
    alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    db = str(tmp_path / "store.db")
    home = tmp_path / "home"
    settings = Settings(db=db, data_dir=tmp_path / "data", memory_dir=tmp_path / "memory")
    async with opened(settings, FakeEmbedder()) as app:
        caller = Caller("me", Role.WORKER, "s", project=ALPHA)
        news = [
            (caller, app.service.prepare_memory(caller, StoreRequest(f"k{i}", f"v {i}")), None)
            for i in range(count)
        ]
        await app.service.write_batch(news)
        move = subprocess.Popen(
            [EXE, "projects", "move", "--to", GAMMA, "--source", "manual", "--db", db],
            cwd=alpha,
            env={"HOME": str(home), "MEMORY_MCP_AGENT_ID": "me", "HF_HUB_OFFLINE": "1"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        other = Caller("other", Role.WORKER, "s", project=BETA)
        waits: list[float] = []
        started = time.perf_counter()
        while move.poll() is None:
            began = time.perf_counter()
            await app.service.store_memory(
                other, StoreRequest(f"o{len(waits)}", "meanwhile"), embed_now=False
            )
            waits.append(time.perf_counter() - began)
            await anyio.sleep(0.01)
        took = time.perf_counter() - started
        _, err = move.communicate()
        assert move.returncode == 0, err
    assert waits, "the move ended before the first store"
    print(f"move of {count}: {took:.1f} s; longest store meanwhile {max(waits):.2f} s")
    # One batch of six, and the read before: far from the whole move.
    assert max(waits) < took / 2, (max(waits), took)
