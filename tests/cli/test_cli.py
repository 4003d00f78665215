"""The CLI's frame: every setting is a flag, every command has a handler, and loading
the CLI (or answering --version) imports no store, model, SDK or pydantic. Then each
command as a user runs it, with the real model: in this process (`cli`: `main` with its
output captured, the same parser, handlers and exit codes) where what is checked is the
command's work, and as a real process where the process is what is checked: --version,
a hook's exit code, `bench` naming itself, `model prepare`, and what a search prints on
stdout and stderr. tests/test_readme.py runs every command the README shows through the
`memory-mcp` entry point, tests/test_light_entry_points.py the light reads (`get`,
`context`) and hooks as processes; `serve` as a process is tests/mcp/test_stdio_e2e.py."""

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
from tests.conftest import in_process

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
    if typing.get_origin(annotation) is dict:
        return [flag, '{"fact": 30}'], {"fact": 30}
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
        ["token", "list"],
        ["search", "query"],
        ["get", "1"],
        ["delete", "1"],
        ["store", "k", "v"],
        ["stats"],
        ["list"],
        ["history", "1"],
        ["import", "--from", "memory-json", "memory.json"],
        ["decay", "--dry-run"],
        ["quarantine"],
        ["quarantine", "approve", "1"],
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


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`memory-mcp ARGV` in this process: `main` (what the `memory-mcp` script runs), its
    stdout and stderr captured and its return value the exit code. A process would spend
    ~0.2-0.8 s of CPU importing what this one has loaded already."""
    code, out, err = in_process(lambda: main(list(argv)))
    return subprocess.CompletedProcess([EXE, *argv], code, out, err)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user's environment, for this process (`cli`) and the processes `run` starts."""
    user = {
        "HF_HUB_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "notes"),
    }
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **user}


def run(env: dict[str, str], *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *argv], capture_output=True, text=True, timeout=600, input=stdin, env=env
    )


def test_process_version(env: dict[str, str]) -> None:
    assert run(env, "--version").stdout == f"memory-mcp {__version__}\n"


def test_import_then_export(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"key": "deploy", "value": "Deploys are blue-green"}) + "\n")
    db = str(tmp_path / "m.db")
    imported = cli("import", str(source), "--db", db)
    assert imported.returncode == 0, imported.stderr
    exported = cli("export", "--db", db)
    assert json.loads(exported.stdout)["key"] == "deploy"
    assert exported.stderr == (
        "exported 1 memory that agent 'default' may see, in every project "
        "(--project NAME: one project's)\n"
    )


def test_purge(tmp_path: Path, env: dict[str, str]) -> None:
    purged = cli("purge", "--db", str(tmp_path / "m.db"))
    assert purged.stderr.splitlines()[-1] == "purged 0 expired memories"


def test_index_then_context(tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "notes").mkdir()
    note = tmp_path / "notes" / "deploy.md"
    note.write_text("Deploys are blue-green, behind the load balancer.\n")
    db = str(tmp_path / "m.db")
    indexed = cli("index", str(note), "--db", db)
    assert indexed.returncode == 0, indexed.stderr
    context = cli("context", "--db", db)
    assert "blue-green" in context.stdout


def test_process_hook_exits_0_on_nonsense(env: dict[str, str]) -> None:
    assert run(env, "hook", "no-such-event", stdin="not json").returncode == 0


def test_doctor(tmp_path: Path, env: dict[str, str]) -> None:
    doctor = cli("doctor", "--db", str(tmp_path / "m.db"))
    assert "store (server)" in doctor.stdout


def test_process_model_prepare(env: dict[str, str]) -> None:
    prepared = run(env, "model", "prepare")
    assert prepared.returncode == 0, prepared.stderr


def test_process_help_offers_no_bench(env: dict[str, str]) -> None:
    """The benchmarks are a project of their own beside the package (bench/, make bench)."""
    shown = run(env, "--help").stdout
    assert shown.startswith("usage: memory-mcp"), shown[:80]
    assert "bench" not in shown
    assert run(env, "bench", "--help").returncode == 2


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


def test_import_graph_then_search(tmp_path: Path, env: dict[str, str]) -> None:
    db = str(tmp_path / "m.db")
    graph = str(DATA / "reference_memory.json")
    imported = cli("import", "--from", "memory-json", graph, "--db", db)
    assert imported.returncode == 0, imported.stderr
    found = cli("search", "who is the tech lead of payments", "--db", db, "--json")
    assert json.loads(found.stdout)["results"][0]["key"] == "entity:Maria_Lopez"


def test_process_search_logs_only_with_verbose(tmp_path: Path, env: dict[str, str]) -> None:
    """Every search printed 'INFO ... embedding model ... loaded' on stderr. The two
    searches are processes: their stdout and stderr, logging configured as a user's
    command configures it, are what is checked."""
    db = str(tmp_path / "m.db")
    graph = str(DATA / "reference_memory.json")
    assert cli("import", "--from", "memory-json", graph, "--db", db).returncode == 0
    quiet = run(env, "search", "tech lead of payments", "--db", db, "-n", "1")
    assert quiet.returncode == 0, quiet.stderr
    assert "Maria" in quiet.stdout
    assert quiet.stderr == ""
    loud = run(env, "search", "tech lead of payments", "--db", db, "-n", "1", "--verbose")
    assert " INFO memory_mcp.semantic" in loud.stderr
    assert "loaded" in loud.stderr


def test_a_worker_never_sees_another_agents_private_import(
    tmp_path: Path, env: dict[str, str]
) -> None:
    db = str(tmp_path / "m.db")
    export = str(DATA / "mcp_memory_service_export.json")
    imported = cli(
        "import", "--from", "mcp-memory-service", export, "--db", db, "--agent-id", "alice"
    )
    assert imported.returncode == 0, imported.stderr
    found = cli("search", "staging database reset", "--db", db, "--agent-id", "bob")
    assert found.returncode == 0, found.stderr
    assert "staging" not in found.stdout


def test_get_list_history_stats_delete(tmp_path: Path, env: dict[str, str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"key": "deploy", "value": "Deploys are blue-green"}) + "\n")
    db = str(tmp_path / "m.db")
    assert cli("import", str(source), "--db", db).returncode == 0
    got = cli("get", "1", "--db", db)
    assert "Deploys are blue-green" in got.stdout
    listed = cli("list", "--db", db, "--json")
    assert [m["key"] for m in json.loads(listed.stdout)["memories"]] == ["deploy"]
    history = cli("history", "1", "--db", db, "--json")
    assert [v["version"] for v in json.loads(history.stdout)["versions"]] == [1]
    stats = cli("stats", "--db", db, "--json")
    assert json.loads(stats.stdout)["total"] == 1
    deleted = cli("delete", "1", "--db", db)
    assert deleted.stdout == "deleted memory 1\n"
