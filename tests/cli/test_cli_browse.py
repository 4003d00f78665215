"""`memory-mcp search | get | delete | stats` for people, called in-process with the FAKE
embedder (these tests are about who sees what and what is printed, not about meaning;
tests/cli/test_cli.py runs each with the real model, in process; its quiet and --verbose
searches as real processes).

The store holds, for every test: bob's own memories, a swarm memory of the lead, and
alice's private memory, which bob (a worker) must never see through any command."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli.main import main
from tests.conftest import FakeEmbedder

ALICE_SECRET = "Alice's private plan: rewrite the tokenizer in Rust"
LINES: list[dict[str, Any]] = [
    {"key": "deploy", "value": "Deploys use blue-green switching", "tags": ["ops"]},
    {"key": "escape", "value": "Deploy colours \x1b[31mred\x1b[0m and [bold]markup[/bold]"},
    {
        "key": "team-rule",
        "value": "Two reviewers per deploy change",
        "scope": "swarm",
        "agent_id": "lead",
    },
    {"key": "plan", "value": ALICE_SECRET, "agent_id": "alice", "tags": ["deploy"]},
    {
        "key": "summary",
        "value": "Deploy session went fine",
        "source": "session_summary",
    },
]


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
    monkeypatch.setenv("COLUMNS", "200")  # rich's width off a terminal: whole rows


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str) -> Ran:
        code = main(list(args))
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


@pytest.fixture
def db(tmp_path: Path, run: Run) -> str:
    source = tmp_path / "seed.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    path = str(tmp_path / "m.db")
    seeded = run("import", str(source), "--db", path, "--agent-id", "bob", "--keep-owners")
    assert seeded.returncode == 0, seeded.stderr
    return path


def ids_by_key(run: Run, db: str, agent: str = "bob") -> dict[str, int]:
    found = run("search", "deploy", "--db", db, "--agent-id", agent, "--json", "-n", "50")
    return {hit["key"]: hit["id"] for hit in json.loads(found.stdout)["results"]}


def test_search_json_has_the_tool_result_shape(run: Run, db: str) -> None:
    found = run("search", "blue-green", "--db", db, "--agent-id", "bob", "--json")
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert set(data) >= {"results", "semantic"}
    assert data["results"][0]["key"] == "deploy"


def test_search_table_shows_the_key_and_value(run: Run, db: str) -> None:
    found = run("search", "blue-green", "--db", db, "--agent-id", "bob")
    assert "Deploys use blue-green switching" in found.stdout


def test_search_filters_by_tag(run: Run, db: str) -> None:
    found = run("search", "deploy", "--tag", "ops", "--db", db, "--agent-id", "bob", "--json")
    assert [hit["key"] for hit in json.loads(found.stdout)["results"]] == ["deploy"]


def test_search_filters_by_scope(run: Run, db: str) -> None:
    found = run("search", "deploy", "--scope", "swarm", "--db", db, "--agent-id", "bob", "--json")
    assert [hit["key"] for hit in json.loads(found.stdout)["results"]] == ["team-rule"]


def test_search_filters_by_source(run: Run, db: str) -> None:
    found = run(
        "search", "deploy", "--source", "session_summary", "--db", db, "--agent-id", "bob", "--json"
    )
    assert [hit["key"] for hit in json.loads(found.stdout)["results"]] == ["summary"]


def test_search_with_nothing_found_says_so(run: Run, db: str) -> None:
    found = run("search", "zebra", "--db", db, "--agent-id", "bob")
    assert "no memories found" in found.stdout


def test_search_filters_by_time_as_memory_search_does(run: Run, db: str) -> None:
    def keys(*flags: str) -> list[str]:
        found = run("search", "deploy", "--db", db, "--agent-id", "bob", "--json", *flags)
        assert found.returncode == 0, found.stderr
        return sorted(hit["key"] for hit in json.loads(found.stdout)["results"])

    everything = ["deploy", "escape", "summary", "team-rule"]
    assert keys("--since", "1d") == everything
    assert keys("--until", "2000-01-01") == []
    assert keys("--since", "2000-01-01", "--until", "1h") == []  # all changed within the hour
    refused = run("search", "deploy", "--db", db, "--since", "last tuesday")
    assert refused.returncode == 1
    assert "invalid since" in refused.stderr


def test_search_min_score_cuts_the_weak_tail(run: Run, db: str) -> None:
    def scores(*flags: str) -> list[float]:
        found = run(
            "search", "blue-green deploy", "--db", db, "--agent-id", "bob", "--json", *flags
        )
        return [hit["score"] for hit in json.loads(found.stdout)["results"]]

    every = scores()
    cut = (every[0] + every[-1]) / 2
    assert every[0] > every[-1]
    assert scores("--min-score", str(cut)) == [score for score in every if score >= cut]


def test_search_explain_says_why(run: Run, db: str) -> None:
    found = run("search", "blue-green", "--db", db, "--agent-id", "bob", "--json", "--explain")
    hits = json.loads(found.stdout)["results"]
    assert hits and all(hit["explain"]["why"] for hit in hits)
    assert {"keyword", "vector", "recency", "prior"} <= set(hits[0]["explain"])
    plain = run("search", "blue-green", "--db", db, "--agent-id", "bob", "--json")
    assert all("explain" not in hit for hit in json.loads(plain.stdout)["results"])
    table = run("search", "blue-green", "--db", db, "--agent-id", "bob", "--explain")
    header = table.stdout.splitlines()[0].split()
    assert header[-1] == "why"
    assert hits[0]["explain"]["why"] in table.stdout


def test_a_piped_table_keeps_keys_and_tags_whole(
    run: Run, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a terminal (here: captured) with no COLUMNS, rich laid tables out in 80
    columns: keys were cut to 12 characters a line and tags to 3."""
    monkeypatch.delenv("COLUMNS")
    key = "deployment-runbook-for-the-payments-service"
    tags = ["infrastructure", "payments-service"]
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps({"key": key, "value": "Runbook: drain, deploy, check", "tags": tags})
    )
    assert run("import", str(extra), "--db", db, "--agent-id", "bob").returncode == 0
    for command in (("search", "runbook"), ("list",)):
        shown = run(*command, "--db", db, "--agent-id", "bob")
        (row,) = [line for line in shown.stdout.splitlines() if key in line]
        assert "Runbook: drain, deploy, check" in row
        assert "infrastructure, payments-service" in row
        assert row == row.rstrip() or len(row) < 400  # no line padded to a huge width


def test_search_limit_out_of_range_is_a_usage_error(run: Run, db: str) -> None:
    with pytest.raises(SystemExit) as exited:
        run("search", "deploy", "--limit", "51", "--db", db)
    assert exited.value.code == 2


def test_a_worker_never_finds_another_agents_private_memory(run: Run, db: str) -> None:
    found = run("search", "Alice private plan tokenizer", "--db", db, "--agent-id", "bob")
    assert ALICE_SECRET not in found.stdout


def test_its_owner_finds_it(run: Run, db: str) -> None:
    found = run("search", "Alice private plan tokenizer", "--db", db, "--agent-id", "alice")
    assert ALICE_SECRET in found.stdout


def test_a_lead_does_not_find_a_workers_private_memory_either(run: Run, db: str) -> None:
    found = run("search", "Alice private plan", "--db", db, "--agent-id", "lead", "--role", "lead")
    assert ALICE_SECRET not in found.stdout


def test_get_of_another_agents_private_memory_is_not_found(run: Run, db: str) -> None:
    alice_id = ids_by_key(run, db, agent="alice")["plan"]
    got = run("get", str(alice_id), "--db", db, "--agent-id", "bob")
    assert got.returncode == 1
    assert "not found" in got.stderr
    assert ALICE_SECRET not in got.stdout + got.stderr


@pytest.mark.parametrize("command", ["get", "delete", "history"])
def test_an_id_past_the_stores_integers_is_an_input_error(run: Run, db: str, command: str) -> None:
    """Before: the driver's OverflowError escaped as a traceback."""
    ran = run(command, str(2**63), "--db", db, "--agent-id", "bob")
    assert ran.returncode == 1
    assert "invalid id" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_get_json_is_memory_get_s_shape(run: Run, db: str) -> None:
    memory_id = ids_by_key(run, db)["deploy"]
    got = run("get", str(memory_id), "--db", db, "--agent-id", "bob", "--json")
    data = json.loads(got.stdout)
    assert (data["id"], data["value"], data["expired"]) == (
        memory_id,
        "Deploys use blue-green switching",
        False,
    )


def test_get_counts_the_read(run: Run, db: str) -> None:
    memory_id = str(ids_by_key(run, db)["deploy"])
    run("get", memory_id, "--db", db, "--agent-id", "bob")
    again = run("get", memory_id, "--db", db, "--agent-id", "bob", "--json")
    assert json.loads(again.stdout)["access_count"] == 2


def test_get_shows_a_memory_inert(run: Run, db: str) -> None:
    """Escape sequences are removed; rich markup in a value is printed as written."""
    got = run("get", str(ids_by_key(run, db)["escape"]), "--db", db, "--agent-id", "bob")
    assert "Deploy colours red and [bold]markup[/bold]" in got.stdout


def test_get_never_prints_an_escape_sequence(run: Run, db: str) -> None:
    got = run("get", str(ids_by_key(run, db)["escape"]), "--db", db, "--agent-id", "bob")
    assert "\x1b" not in got.stdout


def test_reading_commands_never_create_a_store(run: Run, tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    ran = run("search", "x", "--db", str(missing))
    assert (ran.returncode, missing.exists()) == (1, False)


def test_delete_own_memory(run: Run, db: str) -> None:
    memory_id = ids_by_key(run, db)["deploy"]
    deleted = run("delete", str(memory_id), "--db", db, "--agent-id", "bob", "--json")
    assert json.loads(deleted.stdout) == {"deleted": True, "id": memory_id}


def test_a_deleted_memory_is_gone(run: Run, db: str) -> None:
    memory_id = str(ids_by_key(run, db)["deploy"])
    run("delete", memory_id, "--db", db, "--agent-id", "bob")
    assert run("get", memory_id, "--db", db, "--agent-id", "bob").returncode == 1


def test_a_worker_may_not_delete_the_leads_swarm_memory(run: Run, db: str) -> None:
    memory_id = str(ids_by_key(run, db)["team-rule"])
    refused = run("delete", memory_id, "--db", db, "--agent-id", "bob")
    assert (refused.returncode, "only its owner or the lead" in refused.stderr) == (1, True)


def test_a_worker_may_not_delete_another_agents_private_memory(run: Run, db: str) -> None:
    memory_id = str(ids_by_key(run, db, agent="alice")["plan"])
    refused = run("delete", memory_id, "--db", db, "--agent-id", "bob")
    assert "not found" in refused.stderr


def test_the_lead_may_delete_a_swarm_memory(run: Run, db: str) -> None:
    memory_id = str(ids_by_key(run, db)["team-rule"])
    deleted = run("delete", memory_id, "--db", db, "--agent-id", "boss", "--role", "lead")
    assert deleted.stdout == f"deleted memory {memory_id}\n"


def stats_of(run: Run, db: str, *flags: str) -> dict[str, Any]:
    ran = run("stats", "--db", db, "--json", *flags)
    assert ran.returncode == 0, ran.stderr
    data: dict[str, Any] = json.loads(ran.stdout)
    return data


def test_stats_count_what_the_agent_sees(run: Run, db: str) -> None:
    assert stats_of(run, db, "--agent-id", "bob")["total"] == 4  # not alice's


def test_stats_per_agent_leave_out_other_agents_private_memories(run: Run, db: str) -> None:
    assert stats_of(run, db, "--agent-id", "bob")["by_agent"] == {"bob": 3, "lead": 1}


def test_stats_per_scope(run: Run, db: str) -> None:
    assert stats_of(run, db, "--agent-id", "bob")["by_scope"] == {"agent": 3, "swarm": 1}


def test_stats_per_source(run: Run, db: str) -> None:
    by_source = stats_of(run, db, "--agent-id", "bob")["by_source"]
    assert by_source == {"manual": 3, "session_summary": 1}


def test_stats_embedded_share_after_import(run: Run, db: str) -> None:
    assert stats_of(run, db, "--agent-id", "bob")["embedded_share"] == 1.0


def test_stats_name_the_model(run: Run, db: str) -> None:
    assert stats_of(run, db)["model"].startswith(FakeEmbedder.model_name)


def test_stats_database_size_is_the_files(run: Run, db: str) -> None:
    assert stats_of(run, db)["db_bytes"] >= Path(db).stat().st_size


def test_stats_table(run: Run, db: str) -> None:
    shown = run("stats", "--db", db, "--agent-id", "bob")
    assert "by scope" in shown.stdout


def test_stats_table_never_names_an_invisible_owner(run: Run, db: str) -> None:
    shown = run("stats", "--db", db, "--agent-id", "bob")
    assert "alice" not in shown.stdout


# --- list and history (MemoryService.list_memories / history)


def listed(run: Run, db: str, *flags: str) -> dict[str, Any]:
    ran = run("list", "--db", db, "--json", *flags)
    assert ran.returncode == 0, ran.stderr
    data: dict[str, Any] = json.loads(ran.stdout)
    return data


def test_list_shows_what_the_agent_may_see(run: Run, db: str) -> None:
    keys = {m["key"] for m in listed(run, db, "--agent-id", "bob")["memories"]}
    assert keys == {"deploy", "escape", "team-rule", "summary"}


def test_list_never_shows_another_agents_private_memory(run: Run, db: str) -> None:
    shown = run("list", "--db", db, "--agent-id", "bob", "--limit", "100")
    assert "Alice" not in shown.stdout


def test_list_pages_with_the_cursor(run: Run, db: str) -> None:
    first = listed(run, db, "--agent-id", "bob", "--limit", "3")
    second = listed(run, db, "--agent-id", "bob", "--limit", "3", "--cursor", first["next_cursor"])
    keys = [m["key"] for m in first["memories"] + second["memories"]]
    assert sorted(keys) == ["deploy", "escape", "summary", "team-rule"]


def test_the_last_page_has_no_cursor(run: Run, db: str) -> None:
    assert listed(run, db, "--agent-id", "bob", "--limit", "10")["next_cursor"] is None


def test_the_table_says_how_to_get_the_next_page(run: Run, db: str) -> None:
    shown = run("list", "--db", db, "--agent-id", "bob", "--limit", "1")
    assert "--cursor " in shown.stdout


def test_list_by_owner(run: Run, db: str) -> None:
    page = listed(run, db, "--agent-id", "bob", "--owner", "lead")
    assert [m["key"] for m in page["memories"]] == ["team-rule"]


def test_list_by_tag(run: Run, db: str) -> None:
    page = listed(run, db, "--agent-id", "bob", "--tag", "ops")
    assert [m["key"] for m in page["memories"]] == ["deploy"]


def test_list_until_long_ago_is_empty(run: Run, db: str) -> None:
    assert listed(run, db, "--agent-id", "bob", "--until", "2000-01-01")["memories"] == []


def test_list_since_a_relative_time(run: Run, db: str) -> None:
    assert len(listed(run, db, "--agent-id", "bob", "--since", "1d")["memories"]) == 4


def test_list_with_a_bad_time_names_it(run: Run, db: str) -> None:
    refused = run("list", "--db", db, "--since", "last tuesday")
    assert (refused.returncode, "since" in refused.stderr) == (1, True)


def rewrite_deploy(run: Run, db: str, tmp_path: Path) -> int:
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps({"key": "deploy", "value": "Deploys are canary now"}) + "\n")
    assert run("import", str(changed), "--db", db, "--agent-id", "bob").returncode == 0
    return ids_by_key(run, db)["deploy"]


def test_history_lists_every_version(run: Run, db: str, tmp_path: Path) -> None:
    memory_id = rewrite_deploy(run, db, tmp_path)
    shown = run("history", str(memory_id), "--db", db, "--agent-id", "bob", "--json")
    versions = json.loads(shown.stdout)["versions"]
    assert [(v["version"], v["value"], v["current"]) for v in versions] == [
        (1, "Deploys use blue-green switching", False),
        (2, "Deploys are canary now", True),
    ]


def test_history_says_who_wrote_each_version(run: Run, db: str, tmp_path: Path) -> None:
    memory_id = rewrite_deploy(run, db, tmp_path)
    shown = run("history", str(memory_id), "--db", db, "--agent-id", "bob", "--json")
    assert {v["written_by"] for v in json.loads(shown.stdout)["versions"]} == {"bob"}


def test_history_table_shows_both_values(run: Run, db: str, tmp_path: Path) -> None:
    memory_id = rewrite_deploy(run, db, tmp_path)
    shown = run("history", str(memory_id), "--db", db, "--agent-id", "bob")
    assert "blue-green" in shown.stdout
    assert "canary" in shown.stdout


def test_history_pages_with_limit_and_before(run: Run, db: str, tmp_path: Path) -> None:
    memory_id = rewrite_deploy(run, db, tmp_path)
    args = ("history", str(memory_id), "--db", db, "--agent-id", "bob")
    newest = run(*args, "--limit", "1")
    older = json.loads(run(*args, "--limit", "1", "--before", "2", "--json").stdout)
    assert "canary" in newest.stdout
    assert "blue-green" not in newest.stdout
    assert "earlier: --before 2" in newest.stdout
    assert [v["value"] for v in older["versions"]] == ["Deploys use blue-green switching"]
    assert "earlier" not in older


def test_history_of_another_agents_private_memory_is_not_found(run: Run, db: str) -> None:
    alice_id = ids_by_key(run, db, agent="alice")["plan"]
    refused = run("history", str(alice_id), "--db", db, "--agent-id", "bob")
    assert (refused.returncode, ALICE_SECRET in refused.stdout) == (1, False)


def test_store_writes_one_memory_and_an_update_keeps_the_rest(run: Run, tmp_path: Path) -> None:
    """Issue 35: there was no command to store one memory. `store` is store_memory as
    the agent: an upsert, an update changing only what it gives (--replace: all)."""
    db = str(tmp_path / "new.db")
    me = ("--db", db, "--agent-id", "bob")
    first = run("store", "deploy", "Deploys are blue-green", "--tag", "ops", "--pinned", *me)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("stored memory 1 ('deploy', agent, version 1)")
    meta = '{"ticket": "ABC-1"}'
    second = run("store", "deploy", "Deploys are canary", "--metadata", meta, "--json", *me)
    assert json.loads(second.stdout)["version"] == 2
    got = json.loads(run("get", "1", "--json", *me).stdout)
    assert (got["value"], got["tags"], got["pinned"]) == ("Deploys are canary", ["ops"], True)
    assert got["metadata"] == {"ticket": "ABC-1"}
    unpinned = run("store", "deploy", "Deploys are canary", "--no-pinned", *me)
    assert unpinned.stdout.startswith("updated memory 1")
    assert json.loads(run("get", "1", "--json", *me).stdout)["pinned"] is False
    run("store", "deploy", "Deploys are canary", "--replace", *me)
    whole = json.loads(run("get", "1", "--json", *me).stdout)
    assert (whole["tags"], whole["metadata"]) == ([], {})
    bad = run("store", "k", "v", "--metadata", "{not json", *me)
    assert bad.returncode != 0 and "metadata" in bad.stderr
