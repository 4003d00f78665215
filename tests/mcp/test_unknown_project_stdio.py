"""A read that names a project with no memories says so, over a real stdio server in a git
work tree: `project: "acme/Alpha"` (a case away) and a name that is no project returned the
memories of `*` alone without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call
from tests.mcp.test_tasks_stdio import Tree

pytestmark = pytest.mark.anyio


async def test_an_unknown_project_is_said(tmp_path: Path) -> None:
    tree = Tree(tmp_path)
    async with tree.server("me") as alpha:
        await call(alpha, "memory-store", key="kiln", value="The kiln fires at 1200 degrees")
        found = await call(alpha, "memory-search", query="kiln", project="acme/Alpha")
        assert found["results"] == []
        assert "did you mean 'acme/alpha'" in " ".join(found["notices"])
        listed = await call(alpha, "memory-list", project="nobody/nothing")
        assert listed["memories"] == []
        assert "memory-mcp projects" in " ".join(listed["notices"])
        # A project that holds memories: no notice.
        found = await call(alpha, "memory-search", query="kiln", project="acme/alpha")
        assert "notices" not in found and [h["key"] for h in found["results"]] == ["kiln"]
        assert "notices" not in await call(alpha, "memory-list")
