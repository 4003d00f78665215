"""The version has one source: memory_mcp/__init__.py."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import memory_mcp

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def test_pyproject_takes_the_version_from_the_package() -> None:
    project = tomllib.loads(PYPROJECT.read_text())
    assert "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "memory_mcp.__version__"}


def test_installed_metadata_matches_the_package() -> None:
    name = tomllib.loads(PYPROJECT.read_text())["project"]["name"]  # the published name
    assert version(name) == memory_mcp.__version__
