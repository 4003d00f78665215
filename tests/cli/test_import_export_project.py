"""Which project `import` and `export` use inside a repository (docs/GUIDE.md, "Projects"):
a line that names no project (another server's file, a hand-written one) is stored in the
current project, like `memory-store`; a line that names one keeps it; `export` writes the
whole store (a backup taken in one repository must not drop the others) and says so. The
real CLI in real git work trees."""

from __future__ import annotations

import json
from pathlib import Path

from memory_mcp.cli.main import main as cli_main
from tests.conftest import in_process
from tests.rules.test_projects import repository


def run(tmp_path: Path, cwd: Path, *args: str) -> tuple[int, str, str]:
    variables = {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "HF_HUB_OFFLINE": "1",
    }
    return in_process(lambda: cli_main(list(args)), variables=variables, cwd=cwd)


def test_import_stores_where_memory_store_does_and_export_says_what_it_wrote(
    tmp_path: Path,
) -> None:
    beta = repository(tmp_path / "beta", "git@github.com:acme/beta.git")
    lines = tmp_path / "lines.jsonl"
    lines.write_text(
        json.dumps({"key": "plain", "value": "a line naming no project"})
        + "\n"
        + json.dumps({"key": "elsewhere", "value": "named", "project": "acme/other"})
        + "\n"
    )
    graph = tmp_path / "memory.json"
    graph.write_text(json.dumps({"type": "entity", "name": "Kiln", "entityType": "tool",
                                 "observations": ["fires at 1200"]}) + "\n")  # fmt: skip
    assert run(tmp_path, beta, "import", str(lines))[0] == 0
    assert run(tmp_path, beta, "import", str(graph), "--from", "memory-json")[0] == 0
    assert run(tmp_path, beta, "store", "stored", "by memory-mcp store")[0] == 0
    _, out, _ = run(tmp_path, tmp_path, "list", "--json", "--project", "*")
    where = {m["key"]: m["project"] for m in json.loads(out)["memories"]}
    assert where == {
        "plain": "acme/beta",
        "entity:Kiln": "acme/beta",
        "stored": "acme/beta",
        "elsewhere": "acme/other",
    }
    code, out, err = run(tmp_path, beta, "export")
    assert code == 0 and len(out.splitlines()) == 4
    assert "in every project (--project NAME: one project's)" in err
    _, out, err = run(tmp_path, beta, "export", "--project", "acme/beta")
    assert len(out.splitlines()) == 3 and "in project acme/beta and *" in err


def test_since_takes_months_and_years(tmp_path: Path) -> None:
    """`since: "1 month"` was refused ("needs a unit": `m` is minutes)."""
    assert run(tmp_path, tmp_path, "store", "fresh", "stored now")[0] == 0
    for age in ("1 month", "2mo", "1 year"):
        code, out, err = run(tmp_path, tmp_path, "list", "--since", age, "--json")
        assert code == 0, err
        assert [m["key"] for m in json.loads(out)["memories"]] == ["fresh"]
