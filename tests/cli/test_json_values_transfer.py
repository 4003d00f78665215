"""A JSON value through `export` and `import` (transfer/jsonl.py): an object or an array is
written as such and comes back typed; a string that reads as JSON stays a string. In
process with the FAKE embedder (what is stored and written is the point)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli.main import main
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened

LINES: list[dict[str, Any]] = [
    {"key": "service", "value": {"owner": "Ann", "tools": ["pytest", "ruff"]}},
    {"key": "steps", "value": ["build", {"then": "deploy"}]},
    {"key": "quoted", "value": '{"owner": "Ann"}'},
]


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    for name in list(os.environ):
        if name.startswith("MEMORY_MCP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


def run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 0
    return capsys.readouterr().out


def test_json_values_round_trip_through_export_and_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    first = str(tmp_path / "a.db")
    run(capsys, "import", str(source), "--db", first, "--agent-id", "me")
    exported = run(capsys, "export", "--db", first, "--all")
    lines: list[dict[str, Any]] = [json.loads(line) for line in exported.splitlines()]
    values = {line["key"]: line["value"] for line in lines}
    assert values == {line["key"]: line["value"] for line in LINES}

    again = tmp_path / "again.jsonl"
    again.write_text(exported)
    second = str(tmp_path / "b.db")
    run(capsys, "import", str(again), "--db", second, "--keep-owners")
    assert run(capsys, "export", "--db", second, "--all") == exported

    async def stored() -> dict[str, tuple[str, bool]]:
        async with opened(Settings(db=second, data_dir=tmp_path, watch=False)) as app:
            return {r.key: (r.value, r.value_json) async for r in app.service.store.iter_records()}

    records = anyio.run(stored)
    assert records["service"] == ('{"owner":"Ann","tools":["pytest","ruff"]}', True)
    assert records["quoted"] == ('{"owner": "Ann"}', False)
