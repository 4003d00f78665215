"""`memory-mcp token add | list | revoke`: one token per agent unless `--another` (a second
`add` made a second valid token silently, `list` showed two identical rows and `revoke`
could only remove both), an id per token that `revoke --id` takes, and `list --json`.
Tokens are checked against the real store afterwards: revoked means refused."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memory_mcp.cli.main import main
from memory_mcp.settings import Settings
from tests.conftest import opened


def token(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["token", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def valid(db: Path, *tokens: str) -> list[bool]:
    async def check() -> list[bool]:
        async with opened(Settings(db=str(db))) as app:
            return [await app.tokens.verify(t) is not None for t in tokens]

    return anyio.run(check)


def test_one_token_per_agent_unless_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    code, out, _ = token(capsys, "add", "worker-1", "--db", db)
    assert code == 0
    first = out.strip()
    code, out, err = token(capsys, "add", "worker-1", "--db", db)
    assert (code, out) == (1, "")
    assert "agent 'worker-1' already has a token (id 1); give --another" in err
    code, out, _ = token(capsys, "add", "worker-1", "--another", "--db", db)
    assert code == 0
    second = out.strip()
    assert first != second
    assert valid(tmp_path / "m.db", first, second) == [True, True]


def test_list_shows_an_id_per_token_and_revoke_takes_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    made = []
    for argv in (["w1"], ["w1", "--another"], ["boss", "--role", "lead"]):
        code, out, _ = token(capsys, "add", *argv, "--db", db)
        assert code == 0
        made.append(out.strip())
    code, out, _ = token(capsys, "list", "--db", db)
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["id", "agent", "role", "created", "last used", "projects"]
    assert [row[:3] for row in rows[1:]] == [
        ["3", "boss", "lead"],
        ["1", "w1", "worker"],
        ["2", "w1", "worker"],
    ]
    assert not [t for t in made if t in out]

    code, out, err = token(capsys, "revoke", "--id", "1", "--db", db)
    assert (code, err) == (0, "revoked token 1\n")
    assert valid(tmp_path / "m.db", *made) == [False, True, True]
    code, out, _ = token(capsys, "list", "--json", "--db", db)
    listed = json.loads(out)
    assert [(t["id"], t["agent_id"], t["role"]) for t in listed] == [
        (3, "boss", "lead"),
        (2, "w1", "worker"),
    ]
    assert set(listed[0]) == {"id", "agent_id", "role", "created_at", "last_used_at", "projects"}
    assert listed[0]["projects"] is None  # made without --project: every project

    assert token(capsys, "revoke", "--id", "1", "--db", db)[:3:2] == (
        1,
        "memory-mcp: no token has id 1\n",
    )
    assert token(capsys, "revoke", "--db", db)[0] == 2  # neither an agent nor an id
    assert token(capsys, "revoke", "w1", "--id", "2", "--db", db)[0] == 2  # both
    assert token(capsys, "revoke", "w1", "--db", db)[0] == 0
    assert valid(tmp_path / "m.db", *made) == [False, False, True]


def test_a_token_granted_projects_lists_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    code, _, err = token(
        capsys, "add", "w1", "--project", "beta", "--project", "acme/a", "--db", db
    )
    assert code == 0 and "beta, acme/a" in err
    code, out, _ = token(capsys, "list", "--json", "--db", db)
    assert json.loads(out)[0]["projects"] == ["acme/a", "beta"]
    code, _, err = token(capsys, "add", "w2", "--project", "*", "--db", db)
    assert code == 1 and "leave out --project" in err
