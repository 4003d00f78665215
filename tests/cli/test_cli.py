"""The CLI's frame: every setting is a flag, every command has a handler, and loading
the CLI (or answering --version) imports no store, model, SDK or pydantic. Plus one real
process per command, as a user runs it (the in-process tests call `main` directly);
`serve` as a process is tests/mcp/test_stdio_e2e.py."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from memory_mcp import __version__
from memory_mcp.cli.common import NOT_FLAGS
from memory_mcp.cli.main import build_parser, main, serve_flags
from memory_mcp.settings import Settings

EXE = str(Path(sys.executable).with_name("memory-mcp"))


def flag_value(name: str) -> tuple[list[str], object]:
    """Command-line words for setting `name`, and the value the settings should get."""
    annotation = Settings.model_fields[name].annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # X | None
        (annotation,) = [a for a in typing.get_args(annotation) if a is not type(None)]
    flag = f"--{name.replace('_', '-')}"
    if typing.get_origin(annotation) is typing.Literal:
        choice = typing.get_args(annotation)[-1]
        return [flag, str(choice)], choice
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        member = list(annotation)[-1]
        return [flag, str(member.value)], member.value
    if annotation is bool:
        return [f"--no-{name.replace('_', '-')}"], False
    if typing.get_origin(annotation) is list:
        return [flag, "a", "b"], ["a", "b"]
    if annotation is int:
        return [flag, "7"], 7
    if annotation is float:
        return [flag, "2.5"], 2.5
    if annotation is Path:
        return [flag, "/tmp/somewhere"], Path("/tmp/somewhere")
    return [flag, "abc"], "abc"


@pytest.mark.parametrize("name", [n for n in Settings.model_fields if n not in NOT_FLAGS])
def test_every_setting_is_a_serve_flag(name: str) -> None:
    words, value = flag_value(name)
    assert serve_flags(words) == {name: value}


@pytest.mark.parametrize("name", NOT_FLAGS)
def test_the_team_server_token_is_no_flag(name: str) -> None:
    with pytest.raises(SystemExit):
        serve_flags([f"--{name}", "x"])


def test_no_flag_given_overrides_nothing() -> None:
    assert serve_flags([]) == {}


@pytest.mark.parametrize(
    "argv",
    [
        ["serve"],
        ["import", "x.jsonl"],
        ["export"],
        ["purge"],
        ["index", "note.md"],
        ["context"],
        ["hook", "stop"],
        ["doctor"],
        ["model", "prepare"],
        ["bench", "latency"],
        ["token", "list"],
        ["search", "query"],
        ["get", "1"],
        ["delete", "1"],
        ["store", "k", "v"],
        ["stats"],
        ["list"],
        ["history", "1"],
        ["import", "--from", "memory-json", "memory.json"],
    ],
)
def test_every_command_has_a_handler(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert callable(args.handler)


def test_a_bad_setting_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["purge", "--db", str(tmp_path / "m.db"), "--agent-id", " "]) == 2
    assert "bad configuration: agent_id" in capsys.readouterr().err


def test_version_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"memory-mcp {__version__}\n"


HEAVY = ("pydantic", "anyio", "sqlalchemy", "mcp", "numpy", "memory_mcp.app.root")


def test_loading_the_cli_and_version_import_nothing_heavy() -> None:
    code = (
        "import sys; from memory_mcp.cli.main import main; main(['--version']); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.stdout.splitlines()[-1] == "[]"


# One real process per command.


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "notes"),
    }


def run(env: dict[str, str], *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *argv], capture_output=True, text=True, timeout=600, input=stdin, env=env
    )


def test_process_version(env: dict[str, str]) -> None:
    assert run(env, "--version").stdout == f"memory-mcp {__version__}\n"


def test_process_import_then_export(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"key": "deploy", "value": "Deploys are blue-green"}) + "\n")
    db = str(tmp_path / "m.db")
    imported = run(env, "import", str(source), "--db", db)
    assert imported.returncode == 0, imported.stderr
    exported = run(env, "export", "--db", db)
    assert json.loads(exported.stdout)["key"] == "deploy"
    assert exported.stderr == "exported 1 memory that agent 'default' may see\n"


def test_process_purge(tmp_path: Path, env: dict[str, str]) -> None:
    purged = run(env, "purge", "--db", str(tmp_path / "m.db"))
    assert purged.stderr.splitlines()[-1] == "purged 0 expired memories"


def test_process_index_then_context(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "notes").mkdir()
    note = tmp_path / "notes" / "deploy.md"
    note.write_text("Deploys are blue-green, behind the load balancer.\n")
    db = str(tmp_path / "m.db")
    indexed = run(env, "index", str(note), "--db", db)
    assert indexed.returncode == 0, indexed.stderr
    context = run(env, "context", "--db", db)
    assert "blue-green" in context.stdout


def test_process_hook_exits_0_on_nonsense(env: dict[str, str]) -> None:
    assert run(env, "hook", "no-such-event", stdin="not json").returncode == 0


def test_process_doctor(tmp_path: Path, env: dict[str, str]) -> None:
    doctor = run(env, "doctor", "--db", str(tmp_path / "m.db"))
    assert "store (server)" in doctor.stdout


def test_process_model_prepare(env: dict[str, str]) -> None:
    prepared = run(env, "model", "prepare")
    assert prepared.returncode == 0, prepared.stderr


def test_process_bench_help(env: dict[str, str]) -> None:
    shown = run(env, "bench", "--help").stdout
    assert "locomo" in shown
    assert shown.startswith("usage: memory-mcp bench"), shown[:80]  # not "python -m bench"


def test_import_help_lists_what_changes_an_import(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: `import --help` listed 134 lines, every server flag among them."""
    with pytest.raises(SystemExit):
        main(["import", "--help"])
    shown = capsys.readouterr().out
    assert len(shown.splitlines()) < 80
    for flag in ("--db", "--agent-id", "--keep-owners", "--max-memories-per-agent", "--embedder"):
        assert flag in shown, flag
    for flag in ("--port", "--oauth", "--transport", "--memory-dir"):
        assert flag not in shown, flag


DATA = Path(__file__).parent.parent / "data"


def test_process_import_graph_then_search(tmp_path: Path, env: dict[str, str]) -> None:
    db = str(tmp_path / "m.db")
    graph = str(DATA / "reference_memory.json")
    imported = run(env, "import", "--from", "memory-json", graph, "--db", db)
    assert imported.returncode == 0, imported.stderr
    found = run(env, "search", "who is the tech lead of payments", "--db", db, "--json")
    assert json.loads(found.stdout)["results"][0]["key"] == "entity:Maria_Lopez"


def test_process_search_logs_only_with_verbose(tmp_path: Path, env: dict[str, str]) -> None:
    """Every search printed 'INFO ... embedding model ... loaded' on stderr."""
    db = str(tmp_path / "m.db")
    graph = str(DATA / "reference_memory.json")
    assert run(env, "import", "--from", "memory-json", graph, "--db", db).returncode == 0
    quiet = run(env, "search", "tech lead of payments", "--db", db, "-n", "1")
    assert quiet.returncode == 0, quiet.stderr
    assert "Maria" in quiet.stdout
    assert quiet.stderr == ""
    loud = run(env, "search", "tech lead of payments", "--db", db, "-n", "1", "--verbose")
    assert " INFO memory_mcp.semantic" in loud.stderr
    assert "loaded" in loud.stderr


def test_process_a_worker_never_sees_another_agents_private_import(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    export = str(DATA / "mcp_memory_service_export.json")
    imported = run(
        env, "import", "--from", "mcp-memory-service", export, "--db", db, "--agent-id", "alice"
    )
    assert imported.returncode == 0, imported.stderr
    found = run(env, "search", "staging database reset", "--db", db, "--agent-id", "bob")
    assert "staging" not in found.stdout


def test_process_get_list_history_stats_delete(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"key": "deploy", "value": "Deploys are blue-green"}) + "\n")
    db = str(tmp_path / "m.db")
    assert run(env, "import", str(source), "--db", db).returncode == 0
    got = run(env, "get", "1", "--db", db)
    assert "Deploys are blue-green" in got.stdout
    listed = run(env, "list", "--db", db, "--json")
    assert [m["key"] for m in json.loads(listed.stdout)["memories"]] == ["deploy"]
    history = run(env, "history", "1", "--db", db, "--json")
    assert [v["version"] for v in json.loads(history.stdout)["versions"]] == [1]
    stats = run(env, "stats", "--db", db, "--json")
    assert json.loads(stats.stdout)["total"] == 1
    deleted = run(env, "delete", "1", "--db", db)
    assert deleted.stdout == "deleted memory 1\n"
