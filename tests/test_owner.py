"""The GitHub owner is one placeholder, OWNER, written in the places packaging/owner.py
lists (CARRIERS) and packaging/README.md names, all agreeing; no other file names an
owner; the release step (`python packaging/owner.py ACCOUNT`) fills every place at once,
leaving a server.json the registry's schema accepts and a README whose mcp-name line is
server.json's name."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_server_json import validator

ROOT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "node_modules", ".mypy_cache", ".ruff_cache"}
TEXT_SUFFIXES = {".md", ".json", ".toml", ".py", ".txt", ".yml", ".yaml", ".html", ".cfg"}
# The release step and this test name owners as patterns and examples.
ABOUT_OWNERS = {"packaging/owner.py", "tests/test_owner.py"}


def owner_module() -> ModuleType:
    """packaging/owner.py by its path: `packaging` on sys.path is the PyPI library."""
    spec = importlib.util.spec_from_file_location("release_owner", ROOT / "packaging/owner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def project_files() -> list[Path]:
    """The project's text files (not the environments and caches beside them)."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [name for name in dirs if name not in SKIPPED_DIRS]
        found += [Path(folder, name) for name in files if Path(name).suffix in TEXT_SUFFIXES]
    return found


def test_every_carrier_names_the_same_owner() -> None:
    found = owner_module().owners()
    assert sorted(found) == ["README.md", "pyproject.toml", "server.json"]
    assert all(len(places) == 2 for places in found.values()), found
    assert len({owner for places in found.values() for owner in places}) == 1, found


def test_no_other_file_names_an_owner() -> None:
    """A new place (a docs page, a plugin's homepage) must be added to CARRIERS, so the
    release step fills it too."""
    owner = owner_module()
    carriers = set(owner.CARRIERS) | ABOUT_OWNERS
    strays = [
        f"{path.relative_to(ROOT)}: {match[0]}"
        for path in project_files()
        if str(path.relative_to(ROOT)) not in carriers
        for match in owner.ANY_CARRIER.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert strays == []


def test_the_packaging_readme_names_the_placeholder_and_its_files() -> None:
    owner = owner_module()
    text = (ROOT / "packaging" / "README.md").read_text(encoding="utf-8")
    assert f"`{owner.PLACEHOLDER}`" in text and "python packaging/owner.py ACCOUNT" in text
    assert [name for name in owner.CARRIERS if f"`{name}`" not in text] == []


def test_the_release_step_fills_every_place(tmp_path: Path) -> None:
    owner = owner_module()
    for name in owner.CARRIERS:
        shutil.copy(ROOT / name, tmp_path / name)
    written = owner.fill("octo-org", tmp_path)
    assert sorted(path.name for path in written) == sorted(owner.CARRIERS)
    assert {o for places in owner.owners(tmp_path).values() for o in places} == {"octo-org"}
    server = json.loads((tmp_path / "server.json").read_text(encoding="utf-8"))
    validator().validate(server)
    assert server["name"] == "io.github.octo-org/memory-mcp"
    assert server["repository"]["url"] == "https://github.com/octo-org/memory-mcp"
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert f"<!-- mcp-name: {server['name']} -->" in readme
    assert "claude plugin marketplace add octo-org/memory-mcp\n" in readme
    # Again, another account: the step changes a filled owner too.
    owner.fill("octo-2", tmp_path)
    assert {o for places in owner.owners(tmp_path).values() for o in places} == {"octo-2"}


@pytest.mark.parametrize("account", ["", "-octo", "octo-", "oc--to", "octo/org", "x" * 40])
def test_the_release_step_refuses_what_github_would_and_writes_nothing(
    tmp_path: Path, account: str
) -> None:
    owner = owner_module()
    for name in owner.CARRIERS:
        shutil.copy(ROOT / name, tmp_path / name)
    before = {name: (tmp_path / name).read_text(encoding="utf-8") for name in owner.CARRIERS}
    with pytest.raises(ValueError, match="is not a GitHub account name"):
        owner.fill(account, tmp_path)
    assert {name: (tmp_path / name).read_text(encoding="utf-8") for name in before} == before


def test_a_carrier_missing_its_place_stops_the_release_step(tmp_path: Path) -> None:
    owner = owner_module()
    for name in owner.CARRIERS:
        shutil.copy(ROOT / name, tmp_path / name)
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8").replace("mcp-name:", "mcp name:"))
    before = (tmp_path / "server.json").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="README.md: 0 places match"):
        owner.fill("octo-org", tmp_path)
    assert (tmp_path / "server.json").read_text(encoding="utf-8") == before
