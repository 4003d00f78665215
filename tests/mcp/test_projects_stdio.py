"""Projects over real stdio servers, as Claude Code runs them: `memory-mcp serve` started in
one git work tree or another (made by the real `git`), or outside any, all on one store
(SQLite and PostgreSQL), with the real embedding model. Each server's project is its work
tree's, and every read path keeps to it and `*`: search (both arms, expansion), list, get,
delete by key, history, the context resource and prompt, the knowledge-graph profile, the
similar-check and the write-time context; the CLI and the hooks take theirs from their
working folder and the payload's `cwd`. Then a task's working memories: seen only by
those who name the task, archived or handed on when it is completed.

On SQLite every server is a process of its own, as the user runs them, and so is every
command and hook whose folder is the point (the commands that name their project or
cover the whole store run in this process, in their folder). Which project a folder is
does not depend on the store, so on PostgreSQL the same scenarios run in this process:
the servers over the SDK's in-memory transport, each given by name the project `serve`
finds in its folder, the commands and hooks in their folder. Every read path still goes
through PostgreSQL's own read filter, without paying a process's imports a dozen times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent, TextResourceContents

from memory_mcp.app.opener import open_app_when_called
from memory_mcp.cli.common import settings_from
from memory_mcp.cli.main import build_parser
from memory_mcp.cli.main import main as cli_main
from memory_mcp.hooks.runner import main as hook_main
from memory_mcp.mcp.server import build_server
from memory_mcp.rules.projects import current_project
from memory_mcp.semantic.embeddings import Embedder
from tests.conftest import BACKENDS, call, call_error, in_process, store_db
from tests.rules.test_projects import repository

pytestmark = pytest.mark.anyio

EXE = str(Path(sys.executable).with_name("memory-mcp"))
ALPHA, BETA = "acme/alpha", "acme/beta"


@dataclass
class Trees:
    """Two work trees of two repositories and a folder outside any, sharing a store.
    With `embedder`, the servers, commands and hooks run in this process (module doc)."""

    db: str
    home: Path
    alpha: Path
    beta: Path
    outside: Path
    embedder: Embedder | None = None

    def variables(self, **extra: str) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / "xdg"),
            "MEMORY_MCP_MEMORY_DIR": str(self.home / "notes"),
            "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "120",  # judge by words and meaning
            "HF_HUB_OFFLINE": "1",
            **extra,
        }

    @asynccontextmanager
    async def server(self, cwd: Path, *args: str, agent: str = "me") -> AsyncIterator[Client]:
        argv = ["serve", "--db", self.db, "--agent-id", agent, "--no-watch", *args]
        if self.embedder is not None:
            # `serve`'s own flags and settings (the fixture set the variables), and the
            # project it would find in `cwd`, by name: this process has one folder.
            project = current_project(None, cwd) or "*"
            settings = settings_from(build_parser().parse_args([*argv, "--project", project]))
            server = build_server(settings, self.embedder, open_app=open_app_when_called)
            async with Client(server, read_timeout_seconds=180) as client:
                yield client
            return
        params = StdioServerParameters(
            command=EXE, args=argv, env={**os.environ, **self.variables()}, cwd=str(cwd)
        )
        async with Client(params, read_timeout_seconds=180) as client:
            yield client

    def cli(self, cwd: Path, *args: str, stdin: str | None = None) -> str:
        argv = [*args, "--db", self.db] if args[0] != "hook" else list(args)
        variables = self.variables(MEMORY_MCP_DB=self.db, MEMORY_MCP_AGENT_ID="me")
        if self.embedder is not None:
            return in_this_process(argv, cwd, variables, stdin)
        done = subprocess.run(
            [EXE, *argv],
            cwd=cwd,
            env={**os.environ, **variables},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return done.stdout

    def here(self, cwd: Path, *args: str) -> str:
        """A command whose folder is not the point (it names its project, or covers the
        whole store): in this process, in `cwd`, on either store."""
        argv = [*args, "--db", self.db]
        return in_this_process(argv, cwd, self.variables(MEMORY_MCP_AGENT_ID="me"), None)


def in_this_process(
    argv: list[str], cwd: Path, variables: dict[str, str], stdin: str | None
) -> str:
    """`memory-mcp ARGV` run in `cwd` in this process (conftest.in_process), failing as
    `check=True` would: its stdout. A hook runs without its watchdog, which would end
    pytest."""

    def run() -> int:
        if argv[0] == "hook":
            payload = (stdin or "").encode()
            return hook_main(argv[1:], payload, watchdog=False, open_app=open_app_when_called)
        return cli_main(argv)

    code, out, err = in_process(run, variables=variables, cwd=cwd)
    assert code == 0, f"memory-mcp {' '.join(argv)} exited {code}: {err}"
    return out


@pytest.fixture(params=BACKENDS)
def trees(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Trees]:
    in_process = request.param == "postgresql"
    with store_db(request.param, tmp_path, request) as db:
        made = Trees(
            db,
            tmp_path / "home",
            repository(tmp_path / "alpha", "git@github.com:acme/alpha.git"),
            repository(tmp_path / "beta", "https://github.com/acme/beta.git"),
            tmp_path,  # not a work tree: no project
            request.getfixturevalue("real_embedder") if in_process else None,
        )
        if in_process:  # what a spawned one gets: its settings read them
            for name, value in made.variables().items():
                monkeypatch.setenv(name, value)
        yield made


def keys(result: dict[str, Any], name: str = "results") -> set[str]:
    return {item["key"] for item in result[name]}


async def store(client: Client, key: str, value: str, **arguments: Any) -> dict[str, Any]:
    return await call(client, "memory-store", key=key, value=value, **arguments)


async def block_keys(client: Client) -> tuple[set[str], set[str]]:
    """The keys in the context resource, and in the prompt for "otters"."""
    resource = (await client.read_resource("memory://context")).contents[0]
    assert isinstance(resource, TextResourceContents)
    prompt = (await client.get_prompt("memory-context", {"query": "otters"})).messages[0]
    assert isinstance(prompt.content, TextContent)

    def found(text: str) -> set[str]:
        return {part.split('"')[0] for part in text.split(' key="')[1:]}

    return found(resource.text), found(prompt.content.text)


async def test_every_read_path_keeps_to_the_project(trees: Trees) -> None:
    """One set of servers for the read paths and the task tier (each spawn loads the
    model): alpha and beta in their work trees, one outside any, and two more agents
    and a lead in alpha."""
    async with (
        trees.server(trees.alpha, agent="w1") as alpha,
        trees.server(trees.beta, agent="w1") as beta,
        trees.server(trees.outside, agent="w1") as nowhere,
        trees.server(trees.alpha, agent="w2") as w2,
        trees.server(trees.alpha, "--role", "lead", agent="lead") as lead,
    ):
        await reads_keep_to_the_project(alpha, beta, nowhere)
        await links_and_context_keep_to_the_project(alpha, beta)
        await a_tasks_working_memories(alpha, w2, lead, beta)


async def reads_keep_to_the_project(alpha: Client, beta: Client, nowhere: Client) -> None:
    made = await store(alpha, "alpha-otters", "Otters in the alpha river hold hands")
    assert made["project"] == ALPHA
    assert (await store(beta, "beta-otters", "Otters in the beta lake crack shells"))[
        "project"
    ] == BETA
    assert (await store(nowhere, "every-otters", "The user likes otters"))["project"] == "*"
    # The same key in alpha and in `*`: two memories.
    await store(alpha, "deploy", "alpha deploys with make ship")
    await store(nowhere, "deploy", "deploy on Fridays")

    query = {"query": "otters", "limit": 10}
    otters = {"alpha-otters", "beta-otters", "every-otters"}

    async def found(client: Client, **more: Any) -> set[str]:
        return keys(await call(client, "memory-search", **query, **more)) & otters

    assert await found(alpha) == {"alpha-otters", "every-otters"}
    assert await found(beta) == {"beta-otters", "every-otters"}
    assert await found(nowhere) == otters
    assert await found(alpha, project="*") == otters
    assert await found(alpha, project=BETA) == {"beta-otters", "every-otters"}
    # Every result says where it is.
    hits = (await call(alpha, "memory-search", **query))["results"]
    assert {hit["key"]: hit["project"] for hit in hits}["every-otters"] == "*"

    listed = keys(await call(alpha, "memory-list"), "memories")
    assert "alpha-otters" in listed and "beta-otters" not in listed
    assert "beta-otters" in keys(await call(alpha, "memory-list", project=BETA), "memories")

    # By id: a memory of another project is explicit, and readable (stdio: every
    # project is the user's); its history too.
    beta_id = (await call(beta, "memory-search", **query))["results"]
    beta_id = next(hit["id"] for hit in beta_id if hit["key"] == "beta-otters")
    assert (await call(alpha, "memory-get", id=beta_id))["project"] == BETA
    assert (await call(alpha, "memory-history", id=beta_id))["versions"]

    # A key resolves in the current project first, then in `*`.
    await call(alpha, "memory-delete", key="deploy")
    left = await call(nowhere, "memory-search", query="deploy", limit=10)
    assert [h["project"] for h in left["results"] if h["key"] == "deploy"] == ["*"]

    resource, prompt = await block_keys(alpha)
    assert "alpha-otters" in resource and "beta-otters" not in resource
    assert "alpha-otters" in prompt and "beta-otters" not in prompt
    assert "beta-otters" in (await block_keys(beta))[0]

    # The similar-check looks in the memory's project and `*` only.
    twin = await store(beta, "beta-twin", "Otters in the alpha river hold hands")
    assert twin["similar_checked"]
    assert "alpha-otters" not in {m["key"] for m in twin["similar"]}
    twin = await store(alpha, "alpha-twin", "Otters in the alpha river hold hands")
    similar = {m["key"] for m in twin["similar"]}
    assert "alpha-otters" in similar and "beta-twin" not in similar


async def links_and_context_keep_to_the_project(alpha: Client, beta: Client) -> None:
    # Written one after the other in one session, the middle one in another project:
    # its words must not reach beta through the context of the memory after it.
    await store(alpha, "kiln", "The kiln runs at 1200 degrees for porcelain")
    await store(alpha, "beta-glaze", "Glaze recipe number seven", project=BETA)
    await store(alpha, "glaze-notes", "Glaze recipe number seven, alpha copy")

    async def matched_by(client: Client, key: str) -> str:
        found = await call(client, "memory-search", query="porcelain kiln degrees")
        return str(next(hit["matched_by"] for hit in found["results"] if hit["key"] == key))

    # In the same project its context (the kiln) holds the words; across, nothing.
    assert await matched_by(alpha, "glaze-notes") != "vector"
    assert await matched_by(beta, "beta-glaze") == "vector"

    # A link from an alpha memory to a beta one: beta's end is not expanded into an
    # alpha search, though by id both are the user's.
    kiln = (await call(alpha, "memory-search", query="kiln porcelain", limit=1))["results"]
    glaze = (await call(beta, "memory-search", query="glaze recipe", limit=1))["results"]
    await call(alpha, "memory-link", id=kiln[0]["id"], to=glaze[0]["id"], relation="needs")
    expanded = await call(alpha, "memory-search", query="kiln porcelain", expand=True)
    assert "beta-glaze" not in keys(expanded)
    related = await call(alpha, "memory-related", id=kiln[0]["id"])
    assert [m["key"] for m in related["neighbours"]] == ["beta-glaze"]


async def test_the_graph_profile_reads_and_writes_its_project(trees: Trees) -> None:
    """Beta's entity comes from the reference server's file, imported into beta."""
    lathe = {"type": "entity", "name": "Lathe", "entityType": "tool", "observations": ["b"]}
    graph_file = trees.home.parent / "beta-graph.json"
    graph_file.write_text(json.dumps(lathe) + "\n")
    trees.here(trees.outside, "import", str(graph_file), "--from", "memory-json", "--project", BETA)
    async with trees.server(trees.alpha, "--profile", "knowledge-graph") as alpha:
        entity = {"name": "Kiln", "entityType": "tool", "observations": ["alpha's"]}
        await call(alpha, "create_entities", entities=[entity])
        assert [e["name"] for e in (await call(alpha, "read_graph"))["entities"]] == ["Kiln"]
        found = await call(alpha, "search_nodes", query="Lathe tool")
        assert "Lathe" not in [e["name"] for e in found["entities"]]
        error = await call_error(
            alpha, "add_observations", observations=[{"entityName": "Lathe", "contents": ["y"]}]
        )
        assert "Lathe not found" in error
    beta = json.loads(trees.cli(trees.beta, "list", "--json"))
    assert keys(beta, "memories") == {"entity:Lathe"}


def test_the_cli_and_the_hooks_take_the_project_of_their_folder(trees: Trees) -> None:
    lines = trees.home.parent / "herons.jsonl"
    for project, where in ((ALPHA, "stands in the alpha reeds"), (BETA, "fishes in the pond")):
        name = "alpha-heron" if project == ALPHA else "beta-heron"
        lines.write_text(json.dumps({"key": name, "value": f"A heron {where}"}) + "\n")
        trees.here(trees.outside, "import", str(lines), "--project", project)
    found = json.loads(trees.cli(trees.alpha, "search", "heron", "--json"))
    assert keys(found) == {"alpha-heron"}
    found = json.loads(trees.here(trees.alpha, "search", "heron", "--json", "--project", "*"))
    assert keys(found) == {"alpha-heron", "beta-heron"}
    exported = trees.here(trees.alpha, "export", "--project", BETA)
    assert [json.loads(line)["key"] for line in exported.splitlines()] == ["beta-heron"]
    everything = trees.here(trees.outside, "export").splitlines()
    assert {json.loads(line)["project"] for line in everything} == {ALPHA, BETA}
    counts = json.loads(trees.here(trees.outside, "projects", "--json"))
    assert counts == {ALPHA: 1, BETA: 1}

    # The session-start hook's block is the payload's work tree's, wherever it runs.
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(trees.beta)})
    block = trees.cli(trees.outside, "hook", "session-start", stdin=payload)
    assert "beta-heron" in block and "alpha-heron" not in block

    # A note in the repository's .memory/ folder is its project's (the PostToolUse hook).
    note = trees.alpha / ".memory" / "birds.md"
    note.parent.mkdir()
    note.write_text("# Birds\nThe heron nests by the alpha weir.\n")
    payload = json.dumps(
        {"tool_name": "Write", "tool_input": {"file_path": str(note)}, "cwd": str(trees.alpha)}
    )
    trees.cli(trees.outside, "hook", "post-tool-use", stdin=payload)

    # A move keeps the id and is seen at once (by the searches below: one process per
    # folder answers for the note and the move).
    moved = trees.here(trees.outside, "projects", "move", "--to", ALPHA, "--key", "beta-heron")
    assert f"{BETA} -> {ALPHA}" in moved

    def heron_and_note(tree: Path) -> tuple[set[str], set[tuple[str, str]]]:
        found = json.loads(trees.cli(tree, "search", "heron weir", "--json"))["results"]
        notes = {(h["project"], h["scope"]) for h in found if h["key"].startswith("file:")}
        return {h["key"] for h in found} & {"alpha-heron", "beta-heron"}, notes

    assert heron_and_note(trees.alpha) == ({"alpha-heron", "beta-heron"}, {(ALPHA, "swarm")})
    assert heron_and_note(trees.beta) == (set(), set())


async def a_tasks_working_memories(w1: Client, w2: Client, lead: Client, elsewhere: Client) -> None:
    plan = await store(w1, "plan", "Split the migration into batches", task="t1")
    assert (plan["scope"], plan["project"], plan["task"]) == ("swarm", ALPHA, "t1")
    await store(w1, "notes", "Batches of ten thousand rows", task="t1")
    await store(w1, "plan", "Another task's plan", task="t2")
    query = {"query": "migration batches rows"}

    async def working(client: Client, **more: Any) -> set[str]:
        found = keys(await call(client, "memory-search", **query, **more))
        listed = keys(await call(client, "memory-list", **more), "memories")
        assert found & {"plan", "notes"} == listed & {"plan", "notes"}
        return found & {"plan", "notes"}

    assert await working(w1) == set()  # a search that names no task
    assert await working(w1, task="t1") == {"plan", "notes"}
    assert await working(w2, task="t1") == {"plan", "notes"}  # every agent of the task
    assert await working(elsewhere, task="t1") == set()  # another project's t1

    error = await call_error(w2, "memory-complete-task", task="t1")
    assert "only an agent that wrote in it or the lead may complete it" in error
    error = await call_error(w1, "memory-complete-task", task="t1", handoff_to="t2")
    assert "'plan'" in error  # t2 has a plan already: nothing moves
    assert await working(w1, task="t1") == {"plan", "notes"}

    done = await call(w1, "memory-complete-task", task="t1", handoff_to="t3")
    assert (done["handed_off"], done["archived"], done["project"]) == (2, 0, ALPHA)
    assert await working(w1, task="t1") == set()
    assert await working(w2, task="t3") == {"plan", "notes"}

    done = await call(lead, "memory-complete-task", task="t3")  # the lead: any task
    assert done["archived"] == 2
    assert await working(w1, task="t3") == set()
    assert await working(w1, task="t3", include_archived=True) == {"plan", "notes"}
    kept = await call(w2, "memory-get", id=plan["id"])
    assert (kept["task"], kept["archived_at"] is not None) == ("t3", True)
    assert len((await call(w2, "memory-history", id=plan["id"]))["versions"]) == 1
