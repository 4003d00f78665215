"""`memory-mcp serve --profile knowledge-graph` beside the real reference server
(`@modelcontextprotocol/server-memory` 2026.8.31, installed into .venv/npm by the Makefile):
the same script of tool calls over stdio to both, the same answers and the same graph read
back; the tools have the reference's names, arguments and result shapes; search_nodes
answers as the reference does when its substring match finds something, and by meaning
where it finds nothing. Real processes,
the real embedding model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import EXE, server_env

pytestmark = pytest.mark.anyio

REFERENCE = Path(sys.prefix) / "npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
GRAPH_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}

ENTITIES = [
    {"name": "Alice", "entityType": "person", "observations": ["works on payments", "likes tea"]},
    {"name": "Acme", "entityType": "organization", "observations": ["makes anvils"]},
    {
        "name": "Ledger",
        "entityType": "service",
        "observations": ["stores payment records", "runs on PostgreSQL 16"],
    },
    {"name": "Bob", "entityType": "person", "observations": ["on call this week"]},
]
# (tool, arguments): every write the reference has, and its reads, in an order where each
# step's answer depends on the ones before.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("create_entities", {"entities": ENTITIES}),
    (
        "create_entities",
        {
            "entities": [
                {"name": "Alice", "entityType": "robot", "observations": ["ignored"]},
                {"name": "Carol", "entityType": "person", "observations": ["line one\nline two"]},
            ]
        },
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme", "relationType": "works_at"},
                {"from": "Bob", "to": "Acme", "relationType": "works_at"},
                {"from": "Alice", "to": "Ledger", "relationType": "maintains"},
                {"from": "Ledger", "to": "Acme", "relationType": "owned_by"},
                {"from": "Carol", "to": "Alice", "relationType": "reports_to"},
            ]
        },
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Alice", "to": "Acme", "relationType": "works_at"},
                {"from": "Bob", "to": "Alice", "relationType": "pairs_with"},
            ]
        },
    ),
    (
        "add_observations",
        {
            "observations": [
                {"entityName": "Alice", "contents": ["speaks Spanish", "likes tea"]},
                {"entityName": "Bob", "contents": ["prefers mornings"]},
            ]
        },
    ),
    ("read_graph", {}),
    (
        "delete_observations",
        {
            "deletions": [
                {"entityName": "Alice", "observations": ["likes tea"]},
                {"entityName": "Nobody", "observations": ["anything"]},
            ]
        },
    ),
    (
        "delete_relations",
        {"relations": [{"from": "Bob", "to": "Acme", "relationType": "works_at"}]},
    ),
    ("open_nodes", {"names": ["Alice", "Nobody"]}),
    ("delete_entities", {"entityNames": ["Ledger", "Nobody"]}),
    ("open_nodes", {"names": ["Acme"]}),
    ("read_graph", {}),
]
# Substring queries (both answer exactly the same: issue 35, "alice" also found Bob) and
# questions by meaning (the reference: nothing).
SUBSTRING = ["acme", "Spanish", "person", "alice"]
BY_MEANING = {
    "who manufactures anvils?": "Acme",
    "which colleague knows a foreign language?": "Alice",
    "who likes to start the day early?": "Bob",
    "who handles money transfers": "Alice",
}


def reference_params(memory_file: Path) -> StdioServerParameters:
    assert REFERENCE.exists(), f"{REFERENCE} is missing: run `make install-dev`"
    env = {"PATH": os.environ["PATH"], "MEMORY_FILE_PATH": str(memory_file)}
    return StdioServerParameters(command="node", args=[str(REFERENCE)], env=env)


def ours_params(tmp_path: Path, db: Path) -> StdioServerParameters:
    env = {**server_env(tmp_path), "MEMORY_MCP_SEARCH_MODEL_WAIT_SECONDS": "120"}
    args = ["serve", "--db", str(db), "--no-watch", "--profile", "knowledge-graph"]
    return StdioServerParameters(command=EXE, args=args, env=env)


@asynccontextmanager
async def both(tmp_path: Path) -> AsyncIterator[tuple[Client, Client]]:
    reference = Client(reference_params(tmp_path / "memory.jsonl"), read_timeout_seconds=60)
    ours = Client(ours_params(tmp_path, tmp_path / "memory.db"), read_timeout_seconds=180)
    async with reference, ours:
        yield reference, ours


def keys_of(schema: dict[str, Any]) -> tuple[list[str], list[str]]:
    return sorted(schema.get("properties", {})), sorted(schema.get("required", []))


async def test_the_same_script_gives_the_same_answers_and_graph(tmp_path: Path) -> None:
    async with both(tmp_path) as (reference, ours):
        theirs_tools = {tool.name: tool for tool in (await reference.list_tools()).tools}
        our_tools = {tool.name: tool for tool in (await ours.list_tools()).tools}
        answers = []
        for tool, arguments in SCRIPT:
            answers.append(
                (
                    tool,
                    await call(reference, tool, **arguments),
                    await call(ours, tool, **arguments),
                )
            )
        searches = [
            (
                query,
                await call(reference, "search_nodes", query=query),
                await call(ours, "search_nodes", query=query),
            )
            for query in [*SUBSTRING, *BY_MEANING]
        ]
        unknown = await call_error(
            ours, "add_observations", observations=[{"entityName": "Nobody", "contents": ["x"]}]
        )
        graph_after = await call(ours, "read_graph")
    assert set(our_tools) == set(theirs_tools) == GRAPH_TOOLS
    for name, listed in theirs_tools.items():
        own = our_tools[name]
        assert keys_of(own.input_schema) == keys_of(listed.input_schema), name
        assert own.output_schema is not None and listed.output_schema is not None
        assert keys_of(own.output_schema) == keys_of(listed.output_schema), name
        assert own.annotations is not None and listed.annotations is not None
        assert (own.annotations.read_only_hint, own.annotations.destructive_hint) == (
            listed.annotations.read_only_hint,
            listed.annotations.destructive_hint,
        ), name
    for step, theirs, mine in answers:
        assert mine == theirs, f"{step}: ours {json.dumps(mine)} reference {json.dumps(theirs)}"
    assert answers[-1][2]["entities"], "the final graph is not empty"
    for query, theirs, mine in searches:
        assert set(mine) == set(theirs) == {"entities", "relations"}
        found = [entity["name"] for entity in mine["entities"]]
        if query in BY_MEANING:
            assert theirs == {"entities": [], "relations": []}, query
            assert found and found[0] == BY_MEANING[query], (query, found)
        else:
            assert theirs["entities"] and mine == theirs, (query, mine, theirs)
        # every relation shown touches an entity found, as in the reference
        assert all({r["from"], r["to"]} & set(found) for r in mine["relations"]), query
    assert "Entity with name Nobody not found" in unknown
    assert graph_after == answers[-1][2]  # the failed call wrote nothing


def memory_mcp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *args], env=server_env(tmp_path), capture_output=True, text=True, timeout=300
    )


async def test_a_reference_file_imports_with_links_and_exports_back(tmp_path: Path) -> None:
    """memory.json written by the reference -> import (relations as links) -> the profile
    reads the same graph -> export -> the reference loads it and reads the same graph."""
    written = tmp_path / "reference.jsonl"
    async with Client(reference_params(written), read_timeout_seconds=60) as reference:
        for tool, arguments in SCRIPT[:5]:
            await call(reference, tool, **arguments)
        theirs = await call(reference, "read_graph")
    db = tmp_path / "memory.db"
    first = memory_mcp(tmp_path, "import", "--from", "memory-json", str(written), "--db", str(db))
    again = memory_mcp(tmp_path, "import", "--from", "memory-json", str(written), "--db", str(db))
    async with Client(ours_params(tmp_path, db), read_timeout_seconds=180) as ours:
        imported = await call(ours, "read_graph")
        related = await call(ours, "open_nodes", names=["Alice"])
    exported = tmp_path / "exported.jsonl"
    out = memory_mcp(
        tmp_path, "export", "--to", "memory-json", "-o", str(exported), "--db", str(db)
    )
    async with Client(reference_params(exported), read_timeout_seconds=60) as reference:
        loaded = await call(reference, "read_graph")
    assert first.returncode == 0, first.stderr
    assert "linked 6 relations" in first.stderr
    assert (
        "imported 0 memories (5 unchanged" in again.stderr and "linked 0 relations" in again.stderr
    )
    assert imported == theirs
    assert {r["to"] for r in related["relations"] if r["from"] == "Alice"} == {"Acme", "Ledger"}
    assert out.returncode == 0, out.stderr
    assert loaded == theirs


async def test_the_reference_tells_padded_names_apart(tmp_path: Path) -> None:
    """What graph.py's refusal of "Frank " stands for: the reference keeps "Frank " and
    "Frank" as two entities (a memory key cannot: tests/mcp/test_graph_writes.py)."""
    async with Client(reference_params(tmp_path / "memory.jsonl"), read_timeout_seconds=60) as ref:
        frank = {"name": "Frank", "entityType": "person", "observations": ["likes jazz"]}
        padded = {"name": "Frank ", "entityType": "robot", "observations": ["beeps"]}
        await call(ref, "create_entities", entities=[frank])
        made = await call(ref, "create_entities", entities=[padded])
        graph = await call(ref, "read_graph")
    assert made == {"entities": [padded]}
    assert graph["entities"] == [frank, padded]
