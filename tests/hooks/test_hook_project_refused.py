"""A hook whose project the team token lacks says so where the user sees it: the README's
`token add w1 --project alpha`, and a session started in a work tree whose origin makes its
project `acme/alpha`. The session-start hook (the real script) got nothing and said so only
on stderr; now its stdout, which Claude Code adds to the session, says why and what to do.
A real team server (streamable HTTP), a real git work tree."""

from __future__ import annotations

from pathlib import Path

from tests.hooks.test_hooks_team import remote_env, run_remote_hook
from tests.http.team_server import cli, running
from tests.rules.test_projects import repository


def test_session_start_says_the_token_lacks_the_project(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    token = cli(["token", "add", "w1", "--project", "alpha", "--db", str(db)], tmp_path)
    token = token.strip().splitlines()[-1]
    alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    with running(tmp_path, "streamable-http", db) as server:
        (tmp_path / "hook").mkdir()
        env = remote_env(tmp_path / "hook", server.url, token)
        payload = {"session_id": "x", "source": "startup", "cwd": str(alpha)}
        done, _ = run_remote_hook("session-start", payload, env)
    assert done.returncode == 0
    assert "<memory-notice>No memories were loaded" in done.stdout, (done.stdout, done.stderr)
    assert "'acme/alpha'" in done.stdout and "--project acme/alpha" in done.stdout
    assert "MEMORY_MCP_PROJECT" in done.stdout
