"""Contradiction candidates on write (rules/conflicts.py): the rules on pairs of facts,
and memory-store's `conflicts` through the tools with the real model (the similar check
is half of it), whose `supersede` call closes the old memory's window."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.rules.conflicts import difference
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.settings import Settings
from tests.conftest import call

# (old, new, the kind of difference, or None: they can both be true)
PAIRS = [
    ("The API gateway listens on port 8080.", "The API gateway listens on port 9090.", "number"),
    ("The sprint ends on Friday.", "The sprint ends on Wednesday.", "date"),
    (
        "We use Docker for local development.",
        "We no longer use Docker for local development.",
        "negation",
    ),
    ("The user's editor is Neovim.", "The user's editor is VS Code.", "value"),
    (
        "The user prefers tabs over spaces in Go code.",
        "The user prefers spaces over tabs in Go code.",
        "value",
    ),
    ("The frontend is built with Vite.", "The frontend is built with webpack.", "value"),
    ("PostgreSQL runs on port 5433 in dev.", "Redis runs on port 6380 in dev.", None),
    ("Run the test suite with make test.", "To run the tests use make test.", None),
    ("Use pnpm, not npm, in the web/ folder.", "In web/, use pnpm rather than npm.", None),
    ("The user's editor is Neovim.", "The user's Neovim config lives in ~/.config/nvim.", None),
    (
        "Never push directly to main; open a pull request.",
        "Do not push directly to main, always open a pull request.",
        None,
    ),
]


@pytest.mark.parametrize(("old", "new", "kind"), PAIRS)
def test_a_difference_that_matters(old: str, new: str, kind: str | None) -> None:
    found = difference(old, new)
    assert (found.kind if found else None) == kind


@pytest.mark.anyio
async def test_memory_store_names_a_contradiction_and_the_call_that_closes_it(
    make_settings: Callable[..., Settings], real_embedder: Embedder
) -> None:
    await real_embedder.wait_ready()
    server = build_server(make_settings(watch=False), real_embedder, open_app=open_app)
    async with Client(server) as client:
        for number, text in enumerate(
            ["The staging database is refreshed every night.", "Alice owns billing."]
        ):
            await call(client, "memory-store", key=f"other-{number}", value=text)
        old = await call(
            client,
            "memory-store",
            key="gateway-port",
            value="The API gateway listens on port 8080.",
        )
        same = await call(
            client, "memory-store", key="gateway", value="The API gateway listens on port 8080 ."
        )
        new = await call(
            client,
            "memory-store",
            key="gateway-port-now",
            value="The API gateway listens on port 9090.",
        )
        conflicts = {c["id"]: c for c in new["conflicts"]}
        await call(client, "memory-link", id=new["id"], to=old["id"], relation="supersedes")
        found = await call(client, "memory-search", query="API gateway port")

    assert "conflicts" not in old and "conflicts" not in same  # a repeat is no conflict
    assert set(conflicts) == {old["id"], same["id"]}  # both hold the old port
    conflict = conflicts[old["id"]]
    assert "8080 -> 9090" in conflict["why"]
    assert conflict["supersede"] == (
        f'memory-link(id={new["id"]}, to={old["id"]}, relation="supersedes")'
    )
    assert old["id"] not in [hit["id"] for hit in found["results"]]
