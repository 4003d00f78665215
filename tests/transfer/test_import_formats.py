"""`memory-mcp import --from memory-json | mcp-memory-service`: other memory servers' files
(samples in tests/data) become memories through the same checked, batched import as our
JSONL. Called in-process with the FAKE embedder (what is stored, not what it means)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio
import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli.main import IMPORT_FORMATS, main
from memory_mcp.models import MemoryRecord
from memory_mcp.settings import Settings
from memory_mcp.transfer.importers import FORMATS
from tests.conftest import FakeEmbedder, opened

DATA = Path(__file__).parent.parent / "data"
GRAPH = DATA / "reference_memory.json"
EXPORT = DATA / "mcp_memory_service_export.json"


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


class Run(Protocol):
    def __call__(self, *args: str) -> Ran: ...


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    for name in list(os.environ):
        if name.startswith("MEMORY_MCP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str) -> Ran:
        code = main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "m.db")


def stored(db: str, tmp_path: Path) -> dict[str, MemoryRecord]:
    async def read() -> dict[str, MemoryRecord]:
        async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
            return {r.key: r async for r in app.service.all_records()}

    return anyio.run(read)


def test_the_cli_offers_every_format() -> None:
    assert IMPORT_FORMATS == tuple(FORMATS)


# --- the reference memory server's memory.json


def links(db: str, tmp_path: Path) -> set[tuple[str, str, str]]:
    """(from key, relation, to key) of every current link in the store."""

    async def read() -> set[tuple[str, str, str]]:
        async with opened(Settings(db=db, data_dir=tmp_path, watch=False)) as app:
            records = {r.id: r async for r in app.service.all_records()}
            found = await app.service.links.links_among(app.caller, list(records))
            return {(records[x.source_id].key, x.relation, records[x.target_id].key) for x in found}

    return anyio.run(read)


def test_graph_import_makes_a_memory_per_entity_and_links_its_relations(
    run: Run, db: str, tmp_path: Path
) -> None:
    imported = run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    assert imported.returncode == 0, imported.stderr
    assert len(stored(db, tmp_path)) == 5  # the entities; the 4 relations are links
    assert "linked 4 relations" in imported.stderr
    assert links(db, tmp_path) == {
        ("entity:default_user", "works_on", "entity:checkout-service"),
        ("entity:checkout-service", "depends_on", "entity:Acme_Payments"),
        ("entity:Maria_Lopez", "leads", "entity:checkout-service"),
        ("entity:checkout-service", "ships_in", "entity:Q3_launch"),
    }


def test_an_entity_holds_its_name_type_and_observations(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    maria = stored(db, tmp_path)["entity:Maria_Lopez"]
    assert maria.value == (
        "Maria_Lopez (person)\n- Tech lead of the payments team\n- Reviews every schema migration"
    )


def test_an_entity_is_tagged_with_its_type(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    assert stored(db, tmp_path)["entity:Acme_Payments"].tags == ["entity", "organization"]


DANGLING = {"type": "relation", "from": "Maria_Lopez", "to": "Berlin", "relationType": "visits"}


def with_lines(tmp_path: Path, *extra: dict[str, Any], keep: int = 9) -> Path:
    lines = GRAPH.read_text().splitlines()[:keep] + [json.dumps(line) for line in extra]
    path = tmp_path / "graph.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_relation_to_no_entity_stays_a_sentence(run: Run, db: str, tmp_path: Path) -> None:
    """The reference allows a relation whose end is no entity: nothing of it is lost."""
    run("import", "--from", "memory-json", str(with_lines(tmp_path, DANGLING)), "--db", db)
    visits = stored(db, tmp_path)["relation:Maria_Lopez -[visits]-> Berlin"]
    assert visits.value == "Maria_Lopez visits Berlin"
    assert visits.tags == ["relation", "visits"]
    assert visits.metadata == {
        "imported_from": "memory-json",
        "from": "Maria_Lopez",
        "to": "Berlin",
        "relation_type": "visits",
    }


def test_a_sentence_becomes_a_link_once_its_entity_arrives(
    run: Run, db: str, tmp_path: Path
) -> None:
    run("import", "--from", "memory-json", str(with_lines(tmp_path, DANGLING)), "--db", db)
    berlin = {"type": "entity", "name": "Berlin", "entityType": "city", "observations": []}
    run("import", "--from", "memory-json", str(with_lines(tmp_path, DANGLING, berlin)), "--db", db)
    assert "relation:Maria_Lopez -[visits]-> Berlin" not in stored(db, tmp_path)
    assert ("entity:Maria_Lopez", "visits", "entity:Berlin") in links(db, tmp_path)


def test_graph_memories_belong_to_the_importing_agent(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db, "--agent-id", "ann")
    assert {r.agent_id for r in stored(db, tmp_path).values()} == {"ann"}


def test_graph_import_can_share_with_the_swarm(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db, "--scope", "swarm")
    assert {r.scope.value for r in stored(db, tmp_path).values()} == {"swarm"}


def test_importing_the_graph_twice_writes_nothing_new(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    before = {key: r.version for key, r in stored(db, tmp_path).items()}
    again = run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    assert "imported 0 memories (5 unchanged" in again.stderr
    assert "linked 0 relations" in again.stderr
    assert {key: r.version for key, r in stored(db, tmp_path).items()} == before


def test_a_new_observation_updates_the_entity_in_place(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "memory-json", str(GRAPH), "--db", db)
    grown = tmp_path / "memory.json"
    lines = GRAPH.read_text().splitlines()
    entity = json.loads(lines[4])
    entity["observations"].append("Launch date moved to October 14")
    lines[4] = json.dumps(entity)
    grown.write_text("\n".join(lines) + "\n")
    run("import", "--from", "memory-json", str(grown), "--db", db)
    launch = stored(db, tmp_path)["entity:Q3_launch"]
    assert (launch.version, launch.value.splitlines()[-1]) == (
        2,
        "- Launch date moved to October 14",
    )


def broken_graph(tmp_path: Path, bad_line: dict[str, Any] | str) -> Path:
    lines = GRAPH.read_text().splitlines()
    lines.insert(2, bad_line if isinstance(bad_line, str) else json.dumps(bad_line))
    path = tmp_path / "broken.json"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        (
            {"type": "entity", "name": "X", "entityType": "t"},
            "line 3: observations: Field required",
        ),
        (
            {"type": "entity", "name": "X", "entityType": "t", "observations": "no"},
            "line 3: observations",
        ),
        ({"type": "relation", "from": "a", "relationType": "r"}, "line 3: to: Field required"),
        ({"type": "relation", "from": "", "to": "b", "relationType": "r"}, "line 3: from:"),
        ({"type": "node", "name": "X"}, 'line 3: type: expected "entity" or "relation"'),
        ("{not json", "line 3: not JSON"),
        (
            {"type": "entity", "name": "X" * 300, "entityType": "t", "observations": []},
            "line 3: name:",
        ),
    ],
)
def test_a_bad_graph_line_is_named_and_nothing_is_stored(
    run: Run, db: str, tmp_path: Path, bad_line: dict[str, Any] | str, message: str
) -> None:
    refused = run(
        "import", "--from", "memory-json", str(broken_graph(tmp_path, bad_line)), "--db", db
    )
    assert (refused.returncode, message in refused.stderr) == (1, True), refused.stderr
    assert stored(db, tmp_path) == {}


def test_skip_invalid_imports_the_rest_of_the_graph(run: Run, db: str, tmp_path: Path) -> None:
    path = broken_graph(tmp_path, {"type": "node"})
    run("import", "--from", "memory-json", str(path), "--db", db, "--skip-invalid")
    assert len(stored(db, tmp_path)) == 5
    assert len(links(db, tmp_path)) == 4


def test_a_secret_in_an_observation_is_redacted_and_reported_by_line(
    run: Run, db: str, tmp_path: Path
) -> None:
    token = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"  # a fake, in pieces
    leaky = {
        "type": "entity",
        "name": "ci",
        "entityType": "system",
        "observations": [f"pushes with the token {token}"],
    }
    imported = run(
        "import", "--from", "memory-json", str(broken_graph(tmp_path, leaky)), "--db", db
    )
    assert imported.returncode == 0, imported.stderr
    assert "line 3: value: github-pat redacted (characters" in imported.stderr
    assert token[4:] not in imported.stderr
    memories = stored(db, tmp_path)
    assert len(memories) == 6  # 5 entities and this one; the relations are links
    assert not [r for r in memories.values() if token[4:] in r.value]
    assert [r for r in memories.values() if "[REDACTED:github-pat]" in r.value]


def test_scope_is_only_for_other_servers_files(run: Run, db: str) -> None:
    refused = run("import", str(GRAPH), "--db", db, "--scope", "swarm")
    assert refused.returncode == 2


# --- mcp-memory-service's JSON export


def test_export_import_makes_a_memory_per_entry(run: Run, db: str, tmp_path: Path) -> None:
    imported = run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert imported.returncode == 0, imported.stderr
    assert len(stored(db, tmp_path)) == 4


def exported(db: str, tmp_path: Path, digest_start: str) -> MemoryRecord:
    (record,) = [
        r
        for key, r in stored(db, tmp_path).items()
        if key.startswith(f"mcp-memory-service:{digest_start}")
    ]
    return record


def test_an_entry_keeps_its_content(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert exported(db, tmp_path, "a3e9").value.startswith("Decision: use Alembic")


def test_comma_separated_tags_and_the_memory_type_become_tags(
    run: Run, db: str, tmp_path: Path
) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert exported(db, tmp_path, "a3e9").tags == ["architecture", "migrations", "decision"]


def test_an_entry_keeps_its_metadata_and_origin(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert exported(db, tmp_path, "a3e9").metadata == {
        "project": "checkout-service",
        "decided_by": "Maria",
        "imported_from": "mcp-memory-service",
        "content_hash": "a3e9d1c7b5f3e1d9c7b5a3f1e9d7c5b3a1f9e7d5c3b1a9f7e5d3c1b9a7f5e3d1",
        "memory_type": "decision",
        "export_source": "dev-laptop",
    }


def test_an_entry_keeps_its_own_time_in_epoch_seconds(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert exported(db, tmp_path, "a3e9").updated_at == 1758704800.0  # whole seconds


def test_an_entry_keeps_its_own_time_in_iso(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert exported(db, tmp_path, "0b1c").created_at == 1789913100.0  # 2026-09-20T14:05:00Z


def test_importing_the_export_twice_writes_nothing_new(run: Run, db: str, tmp_path: Path) -> None:
    run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    again = run("import", "--from", "mcp-memory-service", str(EXPORT), "--db", db)
    assert "imported 0 memories (4 unchanged" in again.stderr


def test_an_entry_without_hash_is_keyed_by_its_content(run: Run, db: str, tmp_path: Path) -> None:
    path = tmp_path / "bare.json"
    path.write_text(json.dumps([{"content": "Use ruff for linting"}]))
    run("import", "--from", "mcp-memory-service", str(path), "--db", db)
    run("import", "--from", "mcp-memory-service", str(path), "--db", db)
    assert [r.value for r in stored(db, tmp_path).values()] == ["Use ruff for linting"]


def broken_export(tmp_path: Path, entry: object) -> Path:
    data = json.loads(EXPORT.read_text())
    data["memories"].insert(1, entry)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"content_hash": "abc", "tags": []}, "memory 2: content: Field required"),
        ({"content": "x", "tags": [1, 2]}, "memory 2: tags"),
        ({"content": "x", "metadata": "not an object"}, "memory 2: metadata"),
        ({"content": "x", "created_at": "last tuesday"}, "memory 2: invalid created_at"),
        ({"content": "x", "updated_at": -5.0}, "memory 2: invalid updated_at"),
        ("just a string", "memory 2: "),
    ],
)
def test_a_bad_entry_is_named_and_nothing_is_stored(
    run: Run, db: str, tmp_path: Path, entry: object, message: str
) -> None:
    refused = run(
        "import", "--from", "mcp-memory-service", str(broken_export(tmp_path, entry)), "--db", db
    )
    assert (refused.returncode, message in refused.stderr) == (1, True), refused.stderr
    assert stored(db, tmp_path) == {}


def test_a_file_that_is_not_json_names_line_and_column(run: Run, db: str, tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_text(EXPORT.read_text()[:400])
    refused = run("import", "--from", "mcp-memory-service", str(path), "--db", db)
    assert "not valid JSON" in refused.stderr
    assert "line " in refused.stderr


def test_a_json_file_of_another_shape_is_refused(run: Run, db: str, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"entities": []}))
    refused = run("import", "--from", "mcp-memory-service", str(path), "--db", db)
    assert (refused.returncode, "not an mcp-memory-service export" in refused.stderr) == (1, True)
