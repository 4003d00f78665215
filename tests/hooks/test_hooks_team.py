"""The Claude Code hooks against a team server (MEMORY_MCP_URL + MEMORY_MCP_TOKEN): the
real hook scripts talk to a real `memory-mcp serve --transport ...` as the token's agent
and never open a database file; a server they cannot use is one line on stderr, exit 0."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import call
from tests.hooks.test_hooks import hook_env, run_hook, write_transcript
from tests.http.team_server import TRANSPORTS, TeamServer, free_port, running, token_add


def run_remote_hook(
    script: str, payload: dict[str, Any], env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], float]:
    """A hook against the team server: importing the MCP client is slow under load."""
    return run_hook(script, payload, env, timeout=120)


@pytest.fixture(scope="module", params=TRANSPORTS)
def team(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[TeamServer, dict[str, str]]]:
    tmp = tmp_path_factory.mktemp(f"hooks-{request.param}")
    db = tmp / "team.db"
    tokens = {"alice": token_add(db, "alice"), "bob": token_add(db, "bob")}
    with running(tmp, request.param, db) as server:
        yield server, tokens


def remote_env(tmp_path: Path, url: str, token: str) -> dict[str, str]:
    """The hook's settings point at a database file that must stay untouched."""
    env = hook_env(tmp_path, agent="not-the-token-agent")
    env.update(MEMORY_MCP_URL=url, MEMORY_MCP_TOKEN=token)
    # The MCP client alone takes seconds to import on a busy machine; give it room.
    env["MEMORY_MCP_HOOK_BUDGET_SECONDS"] = "60"
    (tmp_path / "data").mkdir(exist_ok=True)
    return env


def search_keys(server: TeamServer, token: str, query: str) -> set[str]:
    async def search() -> set[str]:
        async with server.client(token) as client:
            found = await call(client, "memory-search", query=query, limit=50)
        return {r["key"] for r in found["results"]}

    return anyio.run(search)


def store(server: TeamServer, token: str, key: str, value: str) -> None:
    async def job() -> None:
        async with server.client(token) as client:
            await call(client, "store_memory", key=key, value=value)

    anyio.run(job)


def test_session_start_prints_the_token_agents_memories(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = team
    store(server, tokens["alice"], "alice.editor", "Alice edits with Helix")
    store(server, tokens["bob"], "bob.editor", "Bob edits with Emacs")
    env = remote_env(tmp_path, server.url, tokens["alice"])
    done, _ = run_remote_hook("session-start", {"session_id": "x", "source": "startup"}, env)
    assert "Alice edits with Helix" in done.stdout
    assert "Bob edits with Emacs" not in done.stdout
    assert not (tmp_path / "memory.db").exists()


def test_session_end_stores_the_summary_on_the_server(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = team
    transcript = tmp_path / "feedbeef.jsonl"
    write_transcript(transcript)
    payload = {
        "session_id": f"feedbeef-{server.transport}",
        "transcript_path": str(transcript),
        "cwd": "/work/app",
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    done, _ = run_remote_hook(
        "session-end", payload, remote_env(tmp_path, server.url, tokens["bob"])
    )
    assert done.returncode == 0
    assert f"session-summary:feedbeef-{server.transport}" in search_keys(
        server, tokens["bob"], "Fix the login bug in auth.py"
    )


def test_post_tool_use_indexes_the_note_on_the_server_for_its_agent_only(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    server, tokens = team
    env = remote_env(tmp_path, server.url, tokens["alice"])
    note = tmp_path / "memory" / f"runbook-{server.transport}.md"
    note.parent.mkdir()
    note.write_text("# Runbook\nRestart the ingestion daemon with systemctl restart zephyrd.")
    payload = {
        "session_id": "x",
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(note), "content": note.read_text()},
    }
    done, _ = run_remote_hook("post-tool-use", payload, env)
    assert (done.returncode, done.stderr) == (0, "")
    keys = search_keys(server, tokens["alice"], "zephyrd")
    assert [k for k in keys if str(note) in k] != []
    # Indexed as the token's agent: alice's note is private to alice.
    seen_by_bob = search_keys(server, tokens["bob"], "zephyrd")
    assert [k for k in seen_by_bob if str(note) in k] == []
    assert not (tmp_path / "memory.db").exists()


@pytest.mark.parametrize("event", ["session-start", "session-end", "post-tool-use"])
def test_an_unreachable_server_is_one_line_on_stderr_and_exit_0(tmp_path: Path, event: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens there
    env = remote_env(tmp_path, url, "mmcp_whatever")
    transcript = tmp_path / "t.jsonl"
    write_transcript(transcript)
    note = tmp_path / "memory" / "n.md"
    note.parent.mkdir()
    note.write_text("# N\ntext")
    payload = {
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "tool_name": "Write",
        "tool_input": {"file_path": str(note)},
    }
    done, _ = run_remote_hook(event, payload, env)
    assert done.returncode == 0
    assert f"cannot use the team server at {url}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_refused_token_is_named_on_stderr(
    team: tuple[TeamServer, dict[str, str]], tmp_path: Path
) -> None:
    server, _ = team
    env = remote_env(tmp_path, server.url, "mmcp_revoked-or-never-issued")
    done, _ = run_remote_hook("session-start", {"session_id": "s"}, env)
    assert done.returncode == 0
    assert "refused" in done.stderr
    assert json.dumps(done.stdout) == '""'
