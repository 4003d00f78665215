"""The release artefacts, as a person installing them gets them (`make dist`, built once
for this file): the wheel and the model's wheel installed with plain pip into a fresh
virtual environment (the registry for everything else) give a `memory-mcp serve` that
finds by meaning in a fresh HOME, without torch; Claude Code 2.1.328 (npm, a temp HOME,
no login) validates the plugin, installs it from this repository's marketplace and
reports its server connected; mcpb 2.1.2 accepts the Claude Desktop bundle, whose server
starts from the unpacked bundle the way Claude Desktop starts a "uv" bundle.

Downloads are kept between runs in .venv/cache: the dependencies' wheels (pip download,
into cache/wheels, the first run or when the wheels need one it lacks) and uv's cache. The
fresh environment then installs with --no-index: no network, pip resolving the wheels'
own metadata against those files. `rm -rf .venv/cache/wheels` resolves against today's
registry again."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from memory_mcp import __version__
from tests.conftest import call

ROOT = Path(__file__).resolve().parent.parent
NPM_BIN = ROOT / ".venv" / "npm" / "node_modules" / ".bin"
CACHE = ROOT / ".venv" / "cache"
WHEELHOUSE = CACHE / "wheels"  # the dependencies' wheels, from the registry
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # the venv's own Python's base
PYPI_FILE_LIMIT = 100 * 1024 * 1024
HEAVY = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$", re.IGNORECASE)


def run(*command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = attempt(*command, env=env, cwd=cwd)
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def attempt(
    *command: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=900,
        check=False,
    )


# The distribution's name on PyPI (the command is memory-mcp).
PUBLISHED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
OURS = {"memory_mcp_kit", "memory_mcp_minilm"}  # the wheels `make dist` builds


def fetch(into: Path, *requirements: str | Path) -> None:
    """Download `requirements` and everything they depend on from the registry into
    WHEELHOUSE, but for this project's own wheels: a stale copy of those must never be
    a candidate beside the ones just built."""
    run(sys.executable, "-m", "pip", "download", "--quiet", "--dest", into, *requirements)
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    for wheel in into.iterdir():
        if wheel.name.split("-")[0] not in OURS:
            shutil.move(wheel, WHEELHOUSE / wheel.name)


# Options pip reads from the environment, in `make dist`'s isolated build of the wheel too:
# every install below is from WHEELHOUSE, none from the network.
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    make = ("make", "--no-print-directory", "-s", "dist", f"DIST={out}")
    env = {**os.environ, **OFFLINE}
    if attempt(*make, env=env, cwd=ROOT).returncode != 0:  # setuptools not fetched yet
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        fetch(tmp_path_factory.mktemp("fetched"), *pyproject["build-system"]["requires"])
        run(*make, env=env, cwd=ROOT)
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment with the two wheels, by plain pip: this environment's
    pip installing into it (`pip --python`), so the new one needs no pip of its own (its
    ensurepip cost ~3.5 s of CPU, and nothing here runs it). The dependencies come from
    WHEELHOUSE; when the wheels need one it lacks (the first run, a changed dependency),
    the two wheels' dependencies are fetched from the registry and the install retried."""
    venv = tmp_path_factory.mktemp("venv")
    run(BASE_PYTHON, "-m", "venv", "--without-pip", venv)
    wheels = sorted(dist.glob("*.whl"))
    # --no-compile: pip's byte-compiling of every dependency's files (~6 s of CPU) is not
    # what is tested; the servers below compile what they import.
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python"]
    install = [*pip, "install", "--quiet", "--no-compile", *wheels]
    env = {**os.environ, **OFFLINE}
    started = time.monotonic()
    if attempt(*install, env=env).returncode != 0:
        fetch(tmp_path_factory.mktemp("fetched"), *wheels)
        run(*install, env=env)
    print(f"\npip install of {len(wheels)} wheels: {time.monotonic() - started:.1f} s")
    yield venv


def user_env(home: Path) -> dict[str, str]:
    """A person who has configured nothing, living in `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_MCP_")}
    return {
        **env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "UV_CACHE_DIR": str(CACHE / "uv"),
        "UV_PYTHON": BASE_PYTHON,
    }


def test_every_published_file_is_under_the_registry_limit(dist: Path) -> None:
    files = {path.name: path.stat().st_size for path in dist.iterdir()}
    assert set(files) == {
        f"memory_mcp_kit-{__version__}-py3-none-any.whl",
        "memory_mcp_minilm-1.1.0-py3-none-any.whl",
        f"memory-mcp-{__version__}.mcpb",
    }
    assert all(size < PYPI_FILE_LIMIT for size in files.values()), files
    # The weights travel once, in the model's wheel: a release of the server stays small.
    assert files[f"memory_mcp_kit-{__version__}-py3-none-any.whl"] < 2 * 1024 * 1024, files


def test_the_wheel_holds_the_product_and_not_the_lab(dist: Path) -> None:
    """The benchmarks are a project of their own beside the package (bench/pyproject.toml):
    not one of their modules ships."""
    with zipfile.ZipFile(dist / f"memory_mcp_kit-{__version__}-py3-none-any.whl") as wheel:
        names = wheel.namelist()
    assert {name.split("/")[0] for name in names} == {
        "memory_mcp",
        f"memory_mcp_kit-{__version__}.dist-info",
    }
    assert [name for name in names if "bench" in name.split("/")[-1]] == []


def test_the_installed_wheels_pull_no_torch(installed: Path) -> None:
    (site,) = (installed / "lib").glob("python3*/site-packages")
    names = {d.metadata["Name"] for d in importlib.metadata.distributions(path=[str(site)])}
    assert {"memory-mcp-kit", "memory-mcp-minilm", "onnxruntime"} <= names
    assert [name for name in names if HEAVY.match(name)] == []


def test_pip_show_of_the_installed_wheels_says_their_licences(installed: Path) -> None:
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", installed / "bin" / "python"]
    pip.append("show")
    server, model = PUBLISHED, "memory-mcp-minilm"
    assert "License-Expression: MIT\n" in run(*pip, server)
    assert "License-Expression: Apache-2.0 AND MIT\n" in run(*pip, model)


def test_the_installed_wheel_gives_the_command_under_both_names(installed: Path) -> None:
    """`memory-mcp` (the documented command) and `memory-mcp-kit` (the package's name,
    which `uvx memory-mcp-kit` runs) are the same program."""
    for name in ("memory-mcp", "memory-mcp-kit"):
        assert run(installed / "bin" / name, "--version").strip() == f"memory-mcp {__version__}"


def interpreter(version: str) -> Path:
    """A CPython of `version` on this machine: the venv's own base, or pyenv's (uv never
    downloads one here: UV_PYTHON_DOWNLOADS=never below)."""
    candidates = [Path(BASE_PYTHON).resolve()]
    found = shutil.which(f"python{version}")  # pyenv's shim, where pyenv is installed
    roots = [Path(os.environ["PYENV_ROOT"])] if os.environ.get("PYENV_ROOT") else []
    roots += [Path(found).parent.parent] if found else []
    for root in roots:
        candidates += sorted(root.glob(f"versions/{version}.*/bin/python{version}"))
    candidates += [Path(found)] if found else []
    for candidate in candidates:
        done = attempt(candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    raise AssertionError(f"no Python {version} on this machine (tried {candidates})")


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_uvx_runs_our_command_by_the_published_name(
    dist: Path, version: str, tmp_path: Path
) -> None:
    """`uvx --python X NAME@VERSION --version` as a user types it, with the built wheels
    where PyPI will have them and the registry for the rest: our memory-mcp, on each
    Python we support (the first published name gave another project's, or none on 3.11)."""
    python = interpreter(version)
    env = {
        **user_env(tmp_path),
        "PATH": f"{python.parent}{os.pathsep}{ROOT / '.venv' / 'bin'}{os.pathsep}"
        + os.environ["PATH"],
        "UV_FIND_LINKS": str(dist),
        "UV_PYTHON_DOWNLOADS": "never",
    }
    del env["UV_PYTHON"]
    command = ("uvx", "--python", version, f"{PUBLISHED}@{__version__}", "--version")
    done = attempt(*command, env=env)
    assert (done.returncode, done.stdout) == (0, f"memory-mcp {__version__}\n"), done.stderr


def test_the_installed_command_offers_no_bench(installed: Path) -> None:
    """The lab stays in the clone (make bench): the installed CLI lists no `bench`."""
    shown = run(installed / "bin" / "memory-mcp", "--help")
    assert "usage: memory-mcp" in shown
    assert "bench" not in shown
    assert attempt(installed / "bin" / "memory-mcp", "bench", "--help").returncode == 2


async def meaning_hit(exe: Path, home: Path) -> dict[str, Any]:
    env = {
        **user_env(home),
        # The model loads in the background after the handshake: let the first search wait
        # for it instead of answering by words.
        "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "300",
        "MEMORY_MCP_WATCH": "false",
    }
    params = StdioServerParameters(command=str(exe), args=["serve"], env=env)
    with (home / "server.log").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as c:
            # Waits for the model (the shipped graph, loaded), so that the memories below
            # are embedded as they are stored.
            first = await call(c, "memory-search", query="anything")
            assert first["semantic"] is True, first
            await call(
                c,
                "memory-store",
                key="deploy",
                value="Staging deploys run from the release branch through the CI pipeline.",
            )
            await call(c, "memory-store", key="lunch", value="Lunch is at noon on Fridays.")
            return await call(c, "memory-search", query="How does code reach pre-production?")


def test_the_installed_server_finds_by_meaning_in_a_fresh_home(
    installed: Path, tmp_path: Path
) -> None:
    found = anyio.run(meaning_hit, installed / "bin" / "memory-mcp", tmp_path)
    assert found["semantic"] is True, found
    top = found["results"][0]
    assert (top["key"], top["matched_by"]) == ("deploy", "vector"), found
    # The model's wheel's graph ran: no start built one, into the environment or the home.
    assert not list(installed.rglob("share/memory-mcp/*.onnx")), "a graph was built"
    assert not list(tmp_path.rglob("*.onnx")), "a graph was built"
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "memory_mcp_minilm/model/model.onnx" in log, log


def claude(*args: str | Path, env: dict[str, str]) -> str:
    return run(NPM_BIN / "claude", *args, env=env, cwd=Path(env["HOME"]))


def connected_line(listed: str) -> str:
    return next(line for line in listed.splitlines() if "plugin:memory-mcp:memory" in line)


def test_claude_code_installs_the_plugin_from_the_marketplace(dist: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    tools = tmp_path / "bin"  # uvx alone on PATH: the plugin runs what a user has
    tools.mkdir()
    (tools / "uvx").symlink_to(ROOT / ".venv" / "bin" / "uvx")
    env = {
        **user_env(home),
        "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
        "UV_FIND_LINKS": str(dist),  # the unpublished wheels, where PyPI would have them
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    assert "Validation passed" in claude("plugin", "validate", ROOT, env=env)
    assert "Validation passed" in claude("plugin", "validate", ROOT / "plugins/memory-mcp", env=env)
    claude("plugin", "marketplace", "add", ROOT, env=env)
    claude("plugin", "install", "memory-mcp@memory-mcp", env=env)
    # What the first start of a published install does: uv fetches and installs once
    # (the plugin's own server command, asked for its version instead of serving).
    plugin = json.loads((ROOT / "plugins/memory-mcp/.mcp.json").read_text(encoding="utf-8"))
    server: dict[str, Any] = plugin["mcpServers"]["memory"]
    args: list[str] = server["args"]
    assert (server["command"], args[-1]) == ("uvx", "serve"), server
    assert f"memory-mcp {__version__}" in run("uvx", *args[:-1], "--version", env=env)
    listed = claude("mcp", "list", env=env)
    assert "✔ Connected" in connected_line(listed), listed
    details = claude("plugin", "details", "memory-mcp@memory-mcp", env=env)
    assert re.search(r"MCP servers \(1\)\s+memory", details), details
    hooks = json.loads((ROOT / "plugins/memory-mcp/hooks/hooks.json").read_text(encoding="utf-8"))
    assert re.search(rf"Hooks \({len(hooks['hooks'])}\)", details), details


async def bundle_session(command: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=600) as c:
            assert c.server_info is not None and c.server_info.version == __version__
            return await call(c, "memory-store", key="desk", value="Set up from the bundle.")


def test_the_bundle_passes_mcpb_and_its_server_starts(dist: Path, tmp_path: Path) -> None:
    bundle = dist / f"memory-mcp-{__version__}.mcpb"
    assert f"File: memory-mcp-{__version__}.mcpb" in run(NPM_BIN / "mcpb", "info", bundle)
    unpacked = tmp_path / "bundle"
    run(NPM_BIN / "mcpb", "unpack", bundle, unpacked)
    assert "passes" in run(NPM_BIN / "mcpb", "validate", unpacked / "manifest.json")
    config = json.loads((unpacked / "manifest.json").read_text(encoding="utf-8"))["server"]
    # As Claude Desktop fills it: the bundle's folder, the user's settings (the agent id
    # set, the store left empty: memory-mcp's default store in the user's data folder).
    chosen = {"${__dirname}": str(unpacked), "${user_config.agent_id}": "desktop-1"}
    command = [config["mcp_config"]["command"], *config["mcp_config"]["args"]]
    command = [chosen.get(part, part) for part in command]
    assert command[0] == "uv"
    command[0] = str(ROOT / ".venv" / "bin" / "uv")
    home = tmp_path / "home"
    env = user_env(home)
    for name, value in config["mcp_config"]["env"].items():
        env[name] = chosen.get(value, value)
    stored = anyio.run(bundle_session, command, env, tmp_path / "bundle.log")
    assert stored["agent_id"] == "desktop-1"
    assert (home / ".local" / "share" / "memory-mcp" / "memory.db").is_file()
