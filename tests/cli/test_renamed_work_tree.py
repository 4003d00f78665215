"""A repository renamed under its memories: it gains an `origin` remote, so its project
`gamma-<hash>` becomes `acme/gamma`. Its `.memory/` notes follow on their own (the server
that next reads them carries them, same ids); `doctor` names what is left under the old
name with the command that moves it, and running that command leaves each note found once
under the new name and the other memories moved with their history and links, also from a
store where a note was indexed under both names (what an older version left). Real `git`
work trees, real `memory-mcp serve` processes on stdio, the real CLI as processes of their
own, one SQLite store (issue 47, item 6(b))."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.cli.test_cli import EXE
from tests.conftest import call
from tests.rules.test_projects import git, repository

pytestmark = pytest.mark.anyio

NEW = "acme/gamma"
NOTE = (
    "# Deploy\nBlue-green, then watch the error rate.\n\n"
    "## Rollback\nRun deploy --to previous and tell the channel.\n"
)
KEYS = {"file:ops/deploy.md#deploy", "file:ops/deploy.md#deploy/rollback"}
DEADLINE_SECONDS = 90


def variables(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "MEMORY_MCP_DB": str(tmp_path / "store.db"),
        "MEMORY_MCP_AGENT_ID": "me",
        "MEMORY_MCP_MEMORY_DIR": str(tmp_path / "personal"),
        "HF_HUB_OFFLINE": "1",
    }


@asynccontextmanager
async def serving(tmp_path: Path, tree: Path) -> AsyncIterator[Client]:
    """`memory-mcp serve` started in `tree`, as Claude Code starts it: it watches (and so
    indexes) the work tree's `.memory/` folder."""
    params = StdioServerParameters(
        command=EXE, args=["serve"], env=variables(tmp_path), cwd=str(tree)
    )
    async with Client(params, read_timeout_seconds=120) as client:
        yield client


def cli(tmp_path: Path, tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args],
        cwd=tree,
        env=variables(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def everything(tmp_path: Path, tree: Path) -> list[dict[str, Any]]:
    """Every memory of the store, in every project."""
    done = cli(tmp_path, tree, "list", "--project", "*", "--json", "--limit", "100")
    assert done.returncode == 0, done.stderr
    memories: list[dict[str, Any]] = json.loads(done.stdout)["memories"]
    return memories


async def notes_in_sight(client: Client) -> list[dict[str, Any]]:
    """The note memories the server's project sees, once both chunks are there."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        found = await call(client, "memory-list", source="file_index", limit=50)
        notes: list[dict[str, Any]] = found["memories"]
        if {m["key"] for m in notes} == KEYS or time.monotonic() > deadline:
            return notes
        await anyio.sleep(0.2)


def gamma(tmp_path: Path) -> Path:
    tree = repository(tmp_path / "gamma")
    (tree / ".memory" / "ops").mkdir(parents=True)
    (tree / ".memory" / "ops" / "deploy.md").write_text(NOTE)
    return tree


async def remember_before_the_remote(tmp_path: Path, tree: Path) -> dict[str, int]:
    """What a user's sessions left in the repository before it had a remote: the notes,
    a runbook changed once, linked to a release memory and to the rollback note."""
    async with serving(tmp_path, tree) as client:
        notes = {m["key"]: m for m in await notes_in_sight(client)}
        assert set(notes) == KEYS
        assert {m["project"] for m in notes.values()} == {old_name(tree)}
        await call(client, "store_memory", key="runbook", value="Restart the worker first")
        runbook = await call(
            client, "store_memory", key="runbook", value="Restart the worker, then the queue"
        )
        release = await call(client, "store_memory", key="release", value="Tag, then ship")
        rollback = notes["file:ops/deploy.md#deploy/rollback"]["id"]
        for target, relation in ((release["id"], "depends_on"), (rollback, "explained_by")):
            await call(client, "memory-link", id=runbook["id"], to=target, relation=relation)
    return {"runbook": runbook["id"], "release": release["id"], "rollback": rollback}


def old_name(tree: Path) -> str:
    done = cli(tree.parent, tree, "doctor")
    named = re.search(r"^project: (\S+)", done.stdout, re.MULTILINE)
    assert named is not None, done.stdout
    return named.group(1)


def the_printed_move(tmp_path: Path, tree: Path) -> list[str]:
    """The command `doctor` prints for what is left under the old name (and checks that
    `projects` prints it too), as arguments."""
    done = cli(tmp_path, tree, "doctor")
    found = re.search(r"memory-mcp (projects move --from \S+ --to \S+ --all)", done.stdout)
    assert found is not None, done.stdout
    assert found.group(0) in cli(tmp_path, tree, "projects").stderr
    return found.group(1).split()


def each_note_once_under_the_new_name(memories: list[dict[str, Any]]) -> None:
    notes = [(m["key"], m["project"]) for m in memories if m["source"] == "file_index"]
    assert sorted(notes) == sorted((key, NEW) for key in KEYS)


async def test_after_the_remote_notes_follow_and_the_printed_move_takes_the_rest(
    tmp_path: Path,
) -> None:
    tree = gamma(tmp_path)
    before = old_name(tree)
    ids = await remember_before_the_remote(tmp_path, tree)
    git("remote", "add", "origin", "git@github.com:acme/gamma.git", cwd=tree)

    # Never moved by hand: the server started in the renamed tree finds the notes under
    # the new name (the same memories, carried), once, and not under the old one.
    async with serving(tmp_path, tree) as client:
        notes = await notes_in_sight(client)
        assert {(m["key"], m["project"]) for m in notes} == {(key, NEW) for key in KEYS}
        assert ids["rollback"] in {m["id"] for m in notes}
        found = await call(client, "memory-search", query="roll back to the previous release")
        assert [r["key"] for r in found["results"]].count("file:ops/deploy.md#deploy/rollback") == 1
        old = await call(client, "memory-list", project=before, source="file_index")
        assert old["memories"] == []
    each_note_once_under_the_new_name(everything(tmp_path, tree))

    # What is left is said, with the command: only the two memories the notes are not.
    assert f"2 memories are in project {before}" in cli(tmp_path, tree, "doctor").stdout
    move = the_printed_move(tmp_path, tree)
    dry = cli(tmp_path, tree, *move, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would move 2 memories" in dry.stderr
    done = cli(tmp_path, tree, *move)
    assert done.returncode == 0, done.stderr

    memories = everything(tmp_path, tree)
    each_note_once_under_the_new_name(memories)
    assert sorted((m["key"], m["project"]) for m in memories if m["source"] != "file_index") == [
        ("release", NEW),
        ("runbook", NEW),
    ]
    assert "memories are in project" not in cli(tmp_path, tree, "doctor").stdout
    async with serving(tmp_path, tree) as client:
        runbook = await call(client, "memory-get", id=ids["runbook"])
        assert runbook["project"] == NEW and runbook["metadata"]["moved_from"] == before
        assert {(link["id"], link["relation"]) for link in runbook["links"]} == {
            (ids["release"], "depends_on"),
            (ids["rollback"], "explained_by"),
        }
        history = await call(client, "memory-history", id=ids["runbook"])
        values = [v["value"] for v in history["versions"]]
        assert "Restart the worker first" in values and len(values) == 3, history


async def test_a_note_indexed_under_both_names_is_one_after_the_printed_move(
    tmp_path: Path,
) -> None:
    """A store an older version left: after the remote, the changed chunk was indexed
    again under the new name while its old copy stayed under the old one. The printed
    move drops the stale copy into the one there (its links carried), instead of refusing
    on the key, and moves the rest."""
    tree = gamma(tmp_path)
    before = old_name(tree)
    ids = await remember_before_the_remote(tmp_path, tree)
    git("remote", "add", "origin", "git@github.com:acme/gamma.git", cwd=tree)
    copy = twice_indexed(tmp_path, tree, "file:ops/deploy.md#deploy/rollback")

    move = the_printed_move(tmp_path, tree)
    dry = cli(tmp_path, tree, *move, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"{ids['rollback']}\t{before} -> {NEW}\tfile:ops/deploy.md#deploy/rollback\t" in (
        dry.stdout
    )
    assert f"into {copy}" in dry.stdout and "would drop 1 stale copies" in dry.stderr
    done = cli(tmp_path, tree, *move)
    assert done.returncode == 0, done.stderr
    memories = everything(tmp_path, tree)
    each_note_once_under_the_new_name(memories)
    assert copy in {m["id"] for m in memories}
    assert ids["rollback"] not in {m["id"] for m in memories}  # dropped into the copy
    async with serving(tmp_path, tree) as client:
        runbook = await call(client, "memory-get", id=ids["runbook"])
        assert (copy, "explained_by") in {(x["id"], x["relation"]) for x in runbook["links"]}
        assert len(await notes_in_sight(client)) == 2


async def test_a_note_indexed_under_both_names_is_one_once_the_server_reads_it(
    tmp_path: Path,
) -> None:
    """The same store, never moved by hand: the next server in the tree keeps the copy
    under the new name and drops the stale one into it."""
    tree = gamma(tmp_path)
    ids = await remember_before_the_remote(tmp_path, tree)
    git("remote", "add", "origin", "git@github.com:acme/gamma.git", cwd=tree)
    copy = twice_indexed(tmp_path, tree, "file:ops/deploy.md#deploy/rollback")
    async with serving(tmp_path, tree) as client:
        notes = await notes_in_sight(client)
        assert len(notes) == 2 and copy in {m["id"] for m in notes}
        runbook = await call(client, "memory-get", id=ids["runbook"])
        assert (copy, "explained_by") in {(x["id"], x["relation"]) for x in runbook["links"]}
    each_note_once_under_the_new_name(everything(tmp_path, tree))


def twice_indexed(tmp_path: Path, tree: Path, key: str) -> int:
    """Seed what an older version's indexer wrote after the rename when the chunk
    changed: a second memory of the chunk under the new name, the old one left. Written
    the way that indexer wrote it (store_note_chunk, in the work tree's project), in a
    process of its own. Its id."""
    script = f"""
import anyio, json
from pathlib import Path
from memory_mcp.app.root import open_app
from memory_mcp.cli.common import settings_from
from memory_mcp.cli.main import build_parser
from memory_mcp.models import NoteChunk, Scope
from memory_mcp.rules.permissions import Origin

async def main():
    settings = settings_from(build_parser().parse_args(["serve", "--no-watch"]))
    async with open_app(settings) as app:
        path = str(Path(".memory/ops/deploy.md").resolve())
        old = [r for r in await app.service.note_memories.note_records(
            app.caller, Scope.SWARM, path) if r.key == {key!r}][0]
        chunk = NoteChunk(path, Scope.SWARM, old.key, old.value + " Then page on-call.",
                          old.metadata, old.expires_at, project={NEW!r})
        out = await app.service.note_memories.store_note_chunk(app.caller, chunk, Origin.FOLDER)
        print(json.dumps(out.record.id))

anyio.run(main)
"""
    done = subprocess.run(
        [str(Path(EXE).with_name("python")), "-c", script],
        cwd=tree,
        env=variables(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    copy: int = json.loads(done.stdout)
    keyed = [(m["id"], m["project"]) for m in everything(tmp_path, tree) if m["key"] == key]
    assert len(keyed) == 2 and (copy, NEW) in keyed  # the state an older version left
    return copy
