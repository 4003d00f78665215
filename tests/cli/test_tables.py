"""`memory-mcp get` off a terminal prints its memory without rich (cli/tables.py,
piped_memory), and prints exactly what rich's grid printed there before: these tests
draw both and compare them character for character, on the values that move a layout
(wide characters, emoji, spaces at either end, blank lines, markup-like text), and check
that where the plain way would differ (a tab, a line break in a field, a line wider than
the pipe's width) it steps aside for rich."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memory_mcp.checks.text_safety import strip_terminal_controls
from memory_mcp.cli import tables
from memory_mcp.cli.main import main
from memory_mcp.models import StoreRequest
from memory_mcp.results.memories import Memory
from memory_mcp.settings import Settings
from tests.conftest import opened

FIELDS = [
    ("id", "12"),
    ("key", "deploy"),
    ("scope", "agent"),
    ("written by", "claude-code"),
    ("tags", ""),
    ("created", "2026-11-23 16:40"),
]
VALUES = [
    "Deploys use blue-green switching",
    "",
    "  spaces at both ends  ",
    "first\n\n  third after a blank line\n",
    "wide: 漢字かな 한국어, emoji 👍🏽 🇫🇷, combining é, zero width a\u200bb",
    "markup-like [bold]not bold[/bold] :smile: ~~x~~ <b>",
    "x" * 5_000,
]


def drawn_by_rich(
    capsys: pytest.CaptureFixture[str], fields: list[tuple[str, str]], value: str
) -> str:
    capsys.readouterr()
    tables.draw_memory(fields, value)
    return capsys.readouterr().out


@pytest.mark.parametrize("value", VALUES)
def test_the_plain_memory_is_rich_s_to_the_character(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for fields in (FIELDS, [*FIELDS, ("about agent", "ünïcödé-ägent 漢字"), ("flags", "")]):
        piped = tables.piped_memory(fields, value)
        assert piped is not None
        assert piped == drawn_by_rich(capsys, fields, value)


@pytest.mark.parametrize(
    "change",
    [
        {"value": "a\ttab"},  # rich expands tabs
        {"file_path": "notes/two\nlines.md"},  # a field on two lines
        {"value": "y" * (tables.PIPED_WIDTH + 1)},  # rich folds the line
    ],
)
def test_where_the_layout_is_rich_s_own_rich_draws_it(
    change: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    memory = Memory.model_validate({**memory_json(), **change})
    fields = tables.memory_fields(memory)
    assert tables.piped_memory(fields, tables.value_text(memory.value)) is None
    tables.show_memory(memory)
    shown = capsys.readouterr().out
    assert shown == drawn_by_rich(capsys, fields, tables.value_text(memory.value))
    assert "\t" not in shown  # rich's layout: tabs expanded


def test_rich_decides_where_the_environment_asks_for_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert tables.surely_piped()  # capsys: not a terminal
    for name, value in (("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1")):
        with monkeypatch.context() as env:
            env.setenv(name, value)
            assert not tables.surely_piped()


def memory_json() -> dict[str, object]:
    return {
        "id": 1,
        "key": "k",
        "value": "v",
        "scope": "agent",
        "project": "*",
        "agent_id": "bob",
        "updated_by": "bob",
        "source": "manual",
        "tags": [],
        "metadata": {},
        "confidence": None,
        "pinned": False,
        "version": 1,
        "created_at": "2026-11-23T16:40:00+00:00",
        "updated_at": "2026-11-23T16:40:00+00:00",
        "last_accessed_at": None,
        "expires_at": None,
        "expired": False,
        "access_count": 0,
    }


def test_get_prints_what_rich_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: `memory-mcp get` on a memory with every optional field, through the
    light read, is the rich grid of the memory its --json shows."""
    monkeypatch.setenv("MEMORY_MCP_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    db = str(tmp_path / "m.db")
    settings = Settings(db=db, data_dir=tmp_path, agent_id="bob")
    request = StoreRequest(
        "deploy 漢字",
        "Deploys use blue-green 👍🏽\n\n  and [bold]canaries[/bold]",
        tags=["ops", "ünï"],
        metadata={"ticket": "ABC-1", "note": "ß"},
        confidence=0.75,
        pinned=True,
        about_agent="alice",
    )

    async def store() -> int:
        async with opened(settings) as app:
            return (await app.service.store_memory(app.caller, request)).record.id

    memory_id = str(anyio.run(store))
    assert main(["get", memory_id, "--db", db, "--agent-id", "bob", "--json"]) == 0
    memory = Memory.model_validate(json.loads(capsys.readouterr().out))
    assert main(["get", memory_id, "--db", db, "--agent-id", "bob"]) == 0
    shown = capsys.readouterr().out
    memory = memory.model_copy(update={"access_count": memory.access_count + 1})
    fields = tables.memory_fields(memory)
    assert {"confidence", "pinned", "about agent", "metadata"} <= {name for name, _ in fields}
    text = strip_terminal_controls(tables.value_text(memory.value))
    assert shown == drawn_by_rich(capsys, fields, text)
