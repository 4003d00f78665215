"""docs/ARCHITECTURE.md's picture of the package ("## The package") matches the tree: every
folder that holds modules, and every module in it, is named there, and nothing else is
(a package's __init__.py is left out of both). Its walks of a store and a search ("## Two
walks") name only modules and folders that are in the tree."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "memory_mcp"
DOC = ROOT / "docs" / "ARCHITECTURE.md"

# A folder's line starts with its path from the package (the package itself:
# "memory_mcp/"); its modules are the `name.py` words on it and the lines below it.
_FOLDER = re.compile(r"^([a-z_]+(?:/[a-z_]+)*)/(?:\s|$)")
_MODULE = re.compile(r"\b([a-z_][a-z0-9_]*\.py)\b")


def picture(text: str) -> dict[str, set[str]]:
    """Folder (relative to the package, "" for the package) -> the modules named in it,
    from the first code block after the "## The package" heading."""
    section = text.split("\n## The package\n", 1)[1]
    block = section.split("```\n", 2)[1]
    folders: dict[str, set[str]] = {}
    current: str | None = None
    for line in block.splitlines():
        found = _FOLDER.match(line)
        if found:
            name = found.group(1)
            current = "" if name == "memory_mcp" else name
            assert current not in folders, f"{name}/ is pictured twice"
            folders[current] = set()
        if current is not None:
            folders[current].update(_MODULE.findall(line))
    return folders


def tree(package: Path) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if "__pycache__" in path.parts or path.name == "__init__.py":
            continue
        folder = path.parent.relative_to(package).as_posix()
        folders.setdefault("" if folder == "." else folder, set()).add(path.name)
    return folders


def differences(pictured: dict[str, set[str]], actual: dict[str, set[str]]) -> list[str]:
    found = [f"{folder or 'memory_mcp'}/: not pictured" for folder in actual.keys() - pictured]
    found += [f"{folder}/: pictured, not in the tree" for folder in pictured.keys() - actual]
    for folder in actual.keys() & pictured.keys():
        where = folder or "memory_mcp"
        found += [f"{where}/{name}: not pictured" for name in actual[folder] - pictured[folder]]
        found += [f"{where}/{name}: not in the tree" for name in pictured[folder] - actual[folder]]
    return sorted(found)


def test_the_picture_matches_the_tree() -> None:
    assert differences(picture(DOC.read_text()), tree(PACKAGE)) == []


def test_a_module_or_folder_missing_from_the_picture_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "memory_mcp"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "newcomer.py").write_text("")
    (copy / "lobby").mkdir()
    (copy / "lobby" / "door.py").write_text("")
    (copy / "graph" / "entities.py").unlink()
    assert differences(picture(DOC.read_text()), tree(copy)) == [
        "graph/entities.py: not in the tree",
        "lobby/: not pictured",
        "rules/newcomer.py: not pictured",
    ]


# A module as the walks name it: `store/writes.py`, `rules/gate.Gate.write`, `checks/secret_scan/`.
_WALKED = re.compile(r"`((?:[a-z_]+/)+)([a-z_]+)?(?:\.py|\.[A-Za-z_]+[^`]*)?`")


def walked(text: str) -> set[str]:
    """The modules ("rules/gate.py") and folders ("checks/secret_scan/") the walks name."""
    section = text.split("\n## Two walks", 1)[1].split("\n## ", 1)[0]
    return {
        folder + (f"{module}.py" if module else "")
        for folder, module in _WALKED.findall(section)
        if not folder.startswith("tests/")  # the tests that check a walk, not the package
    }


def missing_from(named: set[str], package: Path) -> list[str]:
    return sorted(name for name in named if not (package / name).exists())


def test_the_walks_name_modules_of_the_tree() -> None:
    named = walked(DOC.read_text())
    assert {"rules/gate.py", "semantic/vectors.py", "store/writes.py"} <= named
    assert missing_from(named, PACKAGE) == []


def test_a_walk_naming_a_module_that_is_gone_is_named(tmp_path: Path) -> None:
    copy = tmp_path / "memory_mcp"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "gate.py").unlink()
    assert missing_from(walked(DOC.read_text()), copy) == ["rules/gate.py"]
