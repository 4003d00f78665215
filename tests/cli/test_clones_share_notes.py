"""Two git work trees of one repository are one project, so a `.memory/` note they both
hold is one memory per chunk: whichever tree indexes it again leaves it as it is (no new
version, no text flipped back) unless its own file changed since; a note only one tree
holds is never removed by the other's reconcile. Real `git worktree`, the real
`memory-mcp index` as processes of their own, one SQLite store."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.test_cli import EXE
from tests.cli.test_renamed_work_tree import variables
from tests.rules.test_projects import git, repository

SAME, ONLY_A, APART = "ops/deploy.md", "ops/only-a.md", "ops/owner.md"


def cli(tmp_path: Path, tree: Path, *args: str) -> str:
    done = subprocess.run(
        [EXE, *args],
        cwd=tree,
        env=variables(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def notes(tmp_path: Path, tree: Path) -> dict[str, dict[str, Any]]:
    """Every note memory in the store, by key."""
    out = cli(tmp_path, tree, "list", "--project", "*", "--json", "--limit", "100")
    found = [m for m in json.loads(out)["memories"] if m["source"] == "file_index"]
    assert len({m["key"] for m in found}) == len(found), found  # one memory per chunk
    return {m["key"]: m for m in found}


def two_trees(tmp_path: Path) -> tuple[Path, Path]:
    a = repository(tmp_path / "a", "git@github.com:acme/x.git")
    (a / ".memory" / "ops").mkdir(parents=True)
    (a / ".memory" / SAME).write_text("# Deploy\nBlue-green.\n")
    (a / ".memory" / ONLY_A).write_text("# Only A\nOn the feature branch.\n")
    (a / ".memory" / APART).write_text("# Owner\nAda owns it.\n")
    git("add", "-A", cwd=a)
    git("-c", "user.email=a@x", "-c", "user.name=a", "commit", "-qm", "notes", cwd=a)
    b = tmp_path / "b"
    git("worktree", "add", "-q", str(b), cwd=a)
    (b / ".memory" / ONLY_A).unlink()
    return a, b


def test_two_work_trees_keep_one_memory_per_note_without_churn(tmp_path: Path) -> None:
    a, b = two_trees(tmp_path)
    cli(tmp_path, a, "index", ".memory")
    first = notes(tmp_path, a)
    assert set(first) == {
        "file:ops/deploy.md#deploy",
        "file:ops/only-a.md#only-a",
        "file:ops/owner.md#owner",
    }
    # The other tree, and each again (a server restarting in it): nothing rewritten,
    # nothing removed; the note only tree A holds stays.
    for tree in (b, a, b):
        said = cli(tmp_path, tree, "index", ".memory")
        assert "0 notes indexed" in said and "0 removed" in said, said
        assert {k: (m["id"], m["version"]) for k, m in notes(tmp_path, a).items()} == {
            k: (m["id"], m["version"]) for k, m in first.items()
        }

    # The same path, different text: the tree whose file changed last wins, and the
    # other tree indexing again (its file unchanged) does not take it back.
    (b / ".memory" / APART).write_text("# Owner\nGrace owns it now.\n")
    cli(tmp_path, b, "index", ".memory")
    cli(tmp_path, a, "index", ".memory")
    owner = notes(tmp_path, a)["file:ops/owner.md#owner"]
    assert "Grace" in owner["value"]
    assert (owner["id"], owner["version"]) == (first["file:ops/owner.md#owner"]["id"], 2)
