"""Where the store may be created: only the default location silently; a --db whose folder
is missing is an error; commands that only read never create anything. And `context`'s
arguments: a bounded --limit, and --query that searches by meaning like the MCP prompt."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest

from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.hooks.runner import main as hook_main
from memory_mcp.models import StoreRequest
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import opened


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))  # listed by created()
    monkeypatch.chdir(tmp_path)


def created(tmp_path: Path) -> list[str]:
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.mark.parametrize(
    "command",
    [
        ["context"],
        ["context", "--query", "deploys"],
        ["export"],
        ["export", "--output", "out.jsonl"],
    ],
)
def test_a_reading_command_never_creates_a_store(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--db", "nothing-here.db"]) == 1
    err = capsys.readouterr().err
    assert "no memory store at" in err
    assert "nothing-here.db" in err
    assert main(command) == 1  # the default location: not created by reading either
    assert created(tmp_path) == [], "nothing at all was created"


def test_the_session_start_hook_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_MCP_DB", str(tmp_path / "hooked.db"))
    payload = {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"}
    assert (
        hook_main(
            ["session-start"], json.dumps(payload).encode(), watchdog=False, open_app=open_app
        )
        == 0
    )
    assert capsys.readouterr() == ("", "")
    assert created(tmp_path) == []


@pytest.mark.parametrize("command", [["serve", "--no-watch"], ["import", "in.jsonl"]])
def test_a_db_in_a_missing_folder_is_an_error_not_a_new_folder(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.jsonl").write_text('{"key": "k", "value": "v"}\n')
    assert main([*command, "--db", str(tmp_path / "no" / "such" / "x.db")]) == 1
    err = capsys.readouterr().err
    assert f"the folder {tmp_path / 'no' / 'such'} does not exist" in err
    assert not (tmp_path / "no").exists()


def test_the_default_location_is_created_by_a_writing_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.jsonl").write_text('{"key": "k", "value": "a short value"}\n')
    assert main(["purge"]) == 0
    assert (tmp_path / "xdg-data" / "memory-mcp" / "memory.db").is_file()


@pytest.mark.parametrize("limit", ["0", "201", "999", "-1", "three"])
def test_context_limit_is_1_to_200(
    limit: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["context", "--limit", limit, "--db", str(tmp_path / "m.db")])
    assert exit_info.value.code == 2
    assert "not a whole number from 1 to 200" in capsys.readouterr().err


def test_context_query_searches_by_meaning(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    real_embedder: Embedder,
) -> None:
    settings = Settings(db=str(tmp_path / "m.db"), data_dir=tmp_path / "data", watch=False)

    async def store() -> None:
        async with opened(settings, real_embedder) as app:
            for key, value in [
                ("deploy", "Deploys use blue-green switching behind the load balancer"),
                ("lunch", "The cafeteria serves lunch at noon on weekdays"),
                ("style", "Python code is formatted with ruff"),
            ]:
                await app.service.store_memory(app.caller, StoreRequest(key, value))
            await app.service.vectors.embed_pending()

    anyio.run(store)

    query = "how do we ship a new release to production servers?"  # no word in common
    code = main(["context", "--query", query, "--limit", "1", "--db", settings.db or ""])
    assert code == 0
    out = capsys.readouterr().out
    (item,) = ET.fromstring(out).findall("memory")
    assert item.attrib["key"] == "deploy"
