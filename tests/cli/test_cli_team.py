"""The people's commands against a running team server (`--url`, the token from
MEMORY_MCP_TOKEN): a real `memory-mcp serve --transport streamable-http`, the real CLI,
the token's agent deciding what is shown. The first test spawns the command as a process
(its exit code, and a stderr kept quiet by the process's own logging); the others run
its `main()` in this process (`cli_run`) in the environment a process would get, the
same code without a second of imports each."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.conftest import call
from tests.http.team_server import EXE, TeamServer, cli_run, running, server_env, token_add

ALICE_SECRET = "Alice's private plan: rewrite the tokenizer in Rust"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TeamServer, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp("cli-team")
    db = tmp / "team.db"
    tokens = {"alice": token_add(db, "alice"), "bob": token_add(db, "bob")}
    with running(tmp, "streamable-http", db) as server:
        server.wait_healthy()

        async def seed() -> None:
            async with server.client(tokens["alice"]) as client:
                await call(client, "store_memory", key="plan", value=ALICE_SECRET)
            async with server.client(tokens["bob"]) as client:
                await call(client, "store_memory", key="deploy", value="Deploys are blue-green")

        anyio.run(seed)
        yield server, tokens


def agent_env(
    team: tuple[TeamServer, dict[str, str]], agent: str, tmp_path: Path
) -> dict[str, str]:
    _, tokens = team
    env = server_env(tmp_path)
    env.update(MEMORY_MCP_TOKEN=tokens[agent], MEMORY_MCP_HOOK_BUDGET_SECONDS="60")
    # A database file that must stay untouched: the answers come from the server.
    env["MEMORY_MCP_DB"] = str(tmp_path / "not-used.db")
    return env


def cli(
    team: tuple[TeamServer, dict[str, str]], agent: str, tmp_path: Path, *argv: str
) -> subprocess.CompletedProcess[str]:
    """`memory-mcp ARGV --url` as `agent`, in this process (`cli_run`)."""
    server, _ = team
    full = [*argv, "--url", server.url]
    code, out, err = cli_run(full, agent_env(team, agent, tmp_path))
    return subprocess.CompletedProcess(full, code, out, err)


def test_search_on_the_team_server(team: tuple[TeamServer, dict[str, str]], tmp_path: Path) -> None:
    """A process: the command as a person runs it."""
    server, _ = team
    found = subprocess.run(
        [EXE, "search", "how do we deploy", "--json", "--url", server.url],
        capture_output=True,
        text=True,
        env=agent_env(team, "bob", tmp_path),
        timeout=300,
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["value"] == "Deploys are blue-green"
    assert found.stderr == ""  # it printed httpx's INFO line for every request
    assert not (tmp_path / "not-used.db").exists()


def test_a_worker_never_sees_another_agents_private_memory_there(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    found = cli(team, "bob", tmp_path, "search", "Alice private plan tokenizer")
    assert ALICE_SECRET not in found.stdout


def test_its_owner_does(team: tuple[TeamServer, dict[str, str]], tmp_path: Path) -> None:
    found = cli(team, "alice", tmp_path, "search", "Alice private plan tokenizer")
    assert "rewrite the tokenizer" in found.stdout


def test_the_local_database_is_never_opened(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    cli(team, "bob", tmp_path, "search", "deploy")
    assert not (tmp_path / "not-used.db").exists()


def test_list_and_get_on_the_team_server(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    listed = cli(team, "bob", tmp_path, "list", "--json")
    (memory,) = json.loads(listed.stdout)["memories"]
    got = cli(team, "bob", tmp_path, "get", str(memory["id"]))
    assert "Deploys are blue-green" in got.stdout


def test_url_without_a_token_is_refused(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    server, _ = team
    env = server_env(tmp_path)
    env.pop("MEMORY_MCP_TOKEN", None)
    code, _, err = cli_run(["search", "deploy", "--url", server.url], env)
    assert (code, "MEMORY_MCP_TOKEN" in err) == (1, True)


def test_store_on_the_team_server_keeps_what_an_update_leaves_out(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    """Issue 35: there was no command to store one memory. `store` is store_memory, here
    as the token's agent."""
    first = cli(team, "alice", tmp_path, "store", "cli-note", "v1", "--tag", "ops", "--pinned")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("stored memory ")
    again = cli(team, "alice", tmp_path, "store", "cli-note", "v2", "--json")
    stored = json.loads(again.stdout)
    assert (stored["version"], stored["agent_id"], stored["created"]) == (2, "alice", False)
    got = json.loads(cli(team, "alice", tmp_path, "get", str(stored["id"]), "--json").stdout)
    assert (got["value"], got["tags"], got["pinned"]) == ("v2", ["ops"], True)
    assert not (tmp_path / "not-used.db").exists()
