"""The names we publish on PyPI are ours (packaging/pypi_names.py, run by `make dist`):
checked against the real registry (its JSON API) and, where the workplace keeps one, a
list of PyPI's names; folded as PyPI folds them. Nothing we ship names the distribution
this project first published under, which is another author's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
# The workplace's list of PyPI's names, where present (packaging/pypi_names.py --names-list).
NAMES_LIST = Path("/work/.library/env/packages/pypi.tsv")
# Spelled in two parts so that this file is not a hit of the test that looks for it.
FIRST_NAME = "memory-mcp" + "-server"


def names_script() -> ModuleType:
    """packaging/pypi_names.py by its path: `packaging` on sys.path is the PyPI library."""
    path = ROOT / "packaging" / "pypi_names.py"
    spec = importlib.util.spec_from_file_location("release_pypi_names", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_names_fold_as_pypi_folds_them() -> None:
    names = names_script()
    assert names.normalize("Memory_MCP.kit") == "memory-mcp-kit"
    assert names.normalize("memory--mcp-kit") == "memory-mcp-kit"
    assert names.ultranormalize("memorymcp") == names.ultranormalize("Memory-MCP")
    assert names.ultranormalize("mem0ry-mcp-k1t") == names.ultranormalize("memory-mcp-kit")
    assert names.ultranormalize("memory-mcp-kit") != names.ultranormalize("memory-mcp-minilm")


def test_a_listed_look_alike_is_taken_and_our_own_listing_is_left_to_the_registry(
    tmp_path: Path,
) -> None:
    names = names_script()
    ours = names.shipped()
    listing = tmp_path / "pypi.tsv"
    listing.write_text("name\tversion\nMemoryMcpKit\t0.1\nmemory-mcp-kit\t0.1\nother\t1\n")
    problems = names.list_problems(ours, names.listed_names(listing))
    assert problems == ["memory-mcp-kit: PyPI has 'MemoryMcpKit', the same name once folded"]


def test_a_name_on_the_registry_with_another_summary_is_taken() -> None:
    """The real registry: the first name this project used belongs to someone else."""
    names = names_script()
    theirs = names.Shipped(FIRST_NAME, "A durable, searchable memory", "the memory-mcp authors")
    problem = names.registry_problem(theirs, names.registry_entry(FIRST_NAME))
    assert problem is not None and "taken on PyPI by another project" in problem, problem


def test_the_names_we_ship_are_free_or_ours() -> None:
    """What `make dist` runs: the registry, and the list of names where there is one."""
    command = [sys.executable, str(ROOT / "packaging" / "pypi_names.py")]
    if NAMES_LIST.is_file():
        command += ["--names-list", str(NAMES_LIST)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "memory-mcp-kit, memory-mcp-minilm free or ours" in done.stderr


def test_nothing_we_ship_names_the_first_published_name() -> None:
    """Every tracked file but the history (CHANGELOG.md, docs/lab/) and this test."""
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    history = ("CHANGELOG.md", "docs/lab/", "tests/test_pypi_names.py")
    hits = []
    for name in tracked:
        path = ROOT / name
        if not name or name.startswith(history) or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace").lower()
        if FIRST_NAME in text or FIRST_NAME.replace("-", "_") in text:
            hits.append(name)
    assert hits == []
