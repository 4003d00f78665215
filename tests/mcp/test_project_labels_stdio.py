"""Every read a person or a model sees says which project each memory is of: the
`<memories>` block (the context resource and prompt of a real stdio server, `memory-mcp
context`, the SessionStart and UserPromptSubmit hooks), memory-get's links,
memory-related's neighbours, and the CLI's search, list and get tables. Three real `git`
work trees' `deploy` memories and one of `*` share a key: outside any repository (Claude
Desktop) the block shows every one of them, each naming its project; inside one it names
the current project once and labels only the memories of another."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent, TextResourceContents

from memory_mcp.cli.main import main as cli_main
from tests.conftest import call, in_process
from tests.rules.test_projects import repository

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))
ALPHA, BETA = "acme/alpha", "acme/beta"


def variables(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "notes"),
        "HF_HUB_OFFLINE": "1",
    }


def cli(tmp_path: Path, cwd: Path, *args: str) -> str:
    code, out, err = in_process(
        lambda: cli_main(list(args)), variables=variables(tmp_path), cwd=cwd
    )
    assert code == 0, f"memory-mcp {' '.join(args)}: {err}"
    return out


def hook(tmp_path: Path, event: str, payload: dict[str, Any]) -> str:
    """The hook as Claude Code runs it: a process of its own, the payload on stdin."""
    done = subprocess.run(
        [EXE, "hook", event],
        input=json.dumps(payload),
        env={**os.environ, **variables(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def items(block: str) -> dict[str, dict[str, str]]:
    """The block's memories: each item's value -> its attributes."""
    return {str(item.text): item.attrib for item in ET.fromstring(block).findall("memory")}


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """Two repositories and a folder outside any, each with its `deploy` (CLI stores)."""
    alpha = repository(tmp_path / "alpha", "git@github.com:acme/alpha.git")
    beta = repository(tmp_path / "beta", "https://github.com/acme/beta.git")
    outside = tmp_path / "desk"
    outside.mkdir()
    cli(tmp_path, alpha, "store", "deploy", "alpha deploys with make ship")
    cli(tmp_path, alpha, "store", "alpha-kiln", "the alpha kiln runs hot")
    cli(tmp_path, beta, "store", "deploy", "beta deploys with helm")
    cli(tmp_path, outside, "store", "deploy", "deploy on Fridays never")
    return {"alpha": alpha, "beta": beta, "outside": outside}


async def test_the_block_shows_each_projects_memory_and_names_it(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    # Outside any repository: every project's `deploy`, each labelled.
    expected = {
        "alpha deploys with make ship": ALPHA,
        "beta deploys with helm": BETA,
        "deploy on Fridays never": "*",
    }
    params = StdioServerParameters(
        command=EXE,
        args=["serve", "--no-watch"],
        env={**os.environ, **variables(tmp_path)},
        cwd=str(world["outside"]),
    )
    async with Client(params, read_timeout_seconds=180) as client:
        resource = (await client.read_resource("memory://context")).contents[0]
        assert isinstance(resource, TextResourceContents)
        shown = items(resource.text)
        assert {value: shown[value].get("project") for value in expected} == expected
        prompt = (await client.get_prompt("memory-context", {"query": "deploy"})).messages[0]
        assert isinstance(prompt.content, TextContent)
        shown = items(prompt.content.text)
        assert {value: shown[value].get("project") for value in expected} == expected

        # memory-get's links and memory-related's neighbours say the far memory's project.
        hits = (await call(client, "memory-search", query="deploy", limit=10))["results"]
        ids = {hit["project"]: hit["id"] for hit in hits if hit["key"] == "deploy"}
        await call(client, "memory-link", id=ids[ALPHA], to=ids[BETA], relation="mirrors")
        got = await call(client, "memory-get", id=ids[ALPHA])
        assert [(link["id"], link["project"]) for link in got["links"]] == [(ids[BETA], BETA)]
        related = await call(client, "memory-related", id=ids[BETA])
        assert related["project"] == BETA
        assert [(n["id"], n["project"]) for n in related["neighbours"]] == [(ids[ALPHA], ALPHA)]

    # `memory-mcp context` outside: the same, on the light path.
    shown = items(cli(tmp_path, world["outside"], "context"))
    assert {value: shown[value].get("project") for value in expected} == expected


async def test_in_a_repository_the_block_names_its_project_once(
    tmp_path: Path, world: dict[str, Path]
) -> None:
    alpha = world["alpha"]
    for block in (
        cli(tmp_path, alpha, "context"),
        hook(tmp_path, "session-start", {"hook_event_name": "SessionStart", "cwd": str(alpha)}),
    ):
        root = ET.fromstring(block)
        assert root.attrib["project"] == ALPHA
        shown = items(block)
        # Its own memories go unlabelled; what holds everywhere says `*`; beta's is not here.
        assert "project" not in shown["alpha deploys with make ship"]
        assert "project" not in shown["the alpha kiln runs hot"]
        assert shown["deploy on Fridays never"]["project"] == "*"
        assert "beta deploys with helm" not in shown
    said = hook(
        tmp_path,
        "user-prompt",
        {"hook_event_name": "UserPromptSubmit", "cwd": str(alpha), "prompt": "deploy"},
    )
    block = json.loads(said)["hookSpecificOutput"]["additionalContext"]
    assert ET.fromstring(block).attrib["project"] == ALPHA
    shown = items(block)
    assert shown["deploy on Fridays never"]["project"] == "*"
    assert "project" not in shown["alpha deploys with make ship"]


def test_the_cli_tables_show_the_project(tmp_path: Path, world: dict[str, Path]) -> None:
    outside = world["outside"]
    rows = cli(tmp_path, outside, "search", "deploy").splitlines()
    assert "project" in rows[0].split()
    deploys = {row.split()[3] for row in rows[1:] if " deploy " in row}
    assert deploys == {ALPHA, BETA, "*"}
    rows = cli(tmp_path, outside, "list").splitlines()
    assert "project" in rows[0].split()
    assert {row.split()[3] for row in rows[1:] if " deploy " in row} == {ALPHA, BETA, "*"}
    listed = json.loads(cli(tmp_path, outside, "list", "--json"))["memories"]
    beta_id = next(m["id"] for m in listed if m["project"] == BETA)
    shown = cli(tmp_path, outside, "get", str(beta_id)).splitlines()
    assert any(line.split()[:2] == ["project", BETA] for line in shown)
