"""memory-mcp is MIT-licensed, and every place a user or a directory reads a licence says
so: the LICENSE file, the package's metadata, the Claude Code plugin's manifest, the
Claude Desktop bundle's manifest and the README. (The built wheel's metadata, as `pip
show` prints it: tests/test_packaging.py.)"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def test_the_licence_file_is_mit_for_the_authors() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n"), text[:40]
    assert "Copyright (c) 2026 the memory-mcp authors" in text


def test_the_package_metadata_says_mit() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT"
    assert "LICENSE" in project["license-files"]


def test_the_model_wheel_says_both_its_licences() -> None:
    """The weights are Apache-2.0 (the model's authors'); the package's code is ours."""
    minilm = ROOT / "packaging" / "minilm" / "pyproject.toml"
    project = tomllib.loads(minilm.read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0 AND MIT"
    assert set(project["license-files"]) == {"LICENSE", "LICENSE-MIT"}


def test_the_plugin_manifest_says_mit() -> None:
    manifest = ROOT / "plugins" / "memory-mcp" / ".claude-plugin" / "plugin.json"
    assert json.loads(manifest.read_text(encoding="utf-8"))["license"] == "MIT"


def bundle_script() -> ModuleType:
    """packaging/mcpb.py by its path: `packaging` on sys.path is the PyPI library."""
    spec = importlib.util.spec_from_file_location("release_mcpb", ROOT / "packaging/mcpb.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bundle_manifest_says_mit() -> None:
    assert bundle_script().manifest([])["license"] == "MIT"


def test_the_readme_names_the_licence() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Licence\n\nMIT: see [LICENSE](LICENSE)." in readme
