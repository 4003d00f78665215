"""memory-link, memory-related, the links memory-get and memory-history show, and
memory-search's expand, through an in-process MCP client on both stores. Who may see and
change links across agents: tests/rules/test_link_permissions.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client

from memory_mcp.app.root import open_app
from memory_mcp.mcp.server import build_server
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error

pytestmark = [pytest.mark.anyio, BOTH_BACKENDS]


@pytest.fixture
def make_settings(make_settings: Callable[..., Settings]) -> Callable[..., Settings]:
    return lambda **overrides: make_settings(**{"watch": False, **overrides})


async def stored(client: Client, key: str, value: str, **more: Any) -> int:
    result = await call(client, "memory-store", key=key, value=value, **more)
    return int(result["id"])


async def test_link_is_shown_from_both_ends_and_removed_again(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        fix = await stored(client, "fix-42", "Raised the pool size to 20")
        bug = await stored(client, "bug-42", "Requests time out under load")
        made = await call(client, "memory-link", id=fix, to=bug, relation="fixes")
        again = await call(client, "memory-link", id=fix, to=bug, relation="fixes")
        from_fix = await call(client, "memory-get", id=fix)
        from_bug = await call(client, "memory-get", id=bug)
        removed = await call(client, "memory-link", id=fix, to=bug, relation="fixes", remove=True)
        after = await call(client, "memory-get", id=fix)
        history = await call(client, "memory-history", id=fix)
    assert made == {"id": fix, "to": bug, "relation": "fixes", "linked": True, "changed": True}
    assert again["changed"] is False
    assert [(x["relation"], x["direction"], x["id"], x["key"]) for x in from_fix["links"]] == [
        ("fixes", "out", bug, "bug-42")
    ]
    assert [(x["direction"], x["id"]) for x in from_bug["links"]] == [("in", fix)]
    assert (removed["linked"], removed["changed"]) == (False, True)
    assert "links" not in after  # none left: left out like the other empty extras
    assert from_fix["version"] == after["version"] == 1  # a link is not a new version
    [record] = history["links"]
    assert (record["relation"], record["current"], record["removed_by"]) == (
        "fixes",
        False,
        "default",
    )


async def test_deleting_a_target_removes_its_links_and_history_keeps_them(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        a = await stored(client, "a", "service A calls B")
        b = await stored(client, "b", "service B")
        await call(client, "memory-link", id=a, to=b, relation="depends_on")
        await call(client, "memory-delete", id=b)
        got = await call(client, "memory-get", id=a)
        history = await call(client, "memory-history", id=a)
        related = await call(client, "memory-related", id=a)
    assert "links" not in got
    assert related["neighbours"] == []
    [record] = history["links"]
    assert record["id"] == b and record["current"] is False and "removed_by" not in record
    assert record["removed_at"]


async def test_related_walks_depth_direction_and_relation(
    make_settings: Callable[..., Settings],
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        api = await stored(client, "api", "The API service")
        db = await stored(client, "db", "The database")
        disk = await stored(client, "disk", "The disk array")
        doc = await stored(client, "doc", "API runbook")
        await call(client, "memory-link", id=api, to=db, relation="depends_on")
        await call(client, "memory-link", id=db, to=disk, relation="depends_on")
        await call(client, "memory-link", id=doc, to=api, relation="describes")
        one = await call(client, "memory-related", id=api)
        two = await call(client, "memory-related", id=api, depth=2, direction="out")
        only = await call(client, "memory-related", id=api, depth=3, relation="describes")
        into = await call(client, "memory-related", id=db, direction="in")
    assert {(n["id"], n["depth"], n["relation"], n["direction"]) for n in one["neighbours"]} == {
        (db, 1, "depends_on", "out"),
        (doc, 1, "describes", "in"),
    }
    assert [(n["id"], n["depth"], n["via"]) for n in two["neighbours"]] == [
        (db, 1, api),
        (disk, 2, db),
    ]
    assert [n["id"] for n in only["neighbours"]] == [doc]
    assert [n["id"] for n in into["neighbours"]] == [api]
    assert not two["truncated"]


async def test_related_is_bounded_and_says_so(make_settings: Callable[..., Settings]) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        hub = await stored(client, "hub", "everyone names this")
        spokes = [await stored(client, f"spoke-{i}", f"spoke {i}") for i in range(25)]
        for spoke in spokes:
            await call(client, "memory-link", id=spoke, to=hub, relation="mentions")
        default = await call(client, "memory-related", id=hub)
        few = await call(client, "memory-related", id=hub, limit=5)
    # The newest 20 links of a memory each way (its fan-out), newest first.
    assert [n["id"] for n in default["neighbours"]] == spokes[::-1][:20]
    assert default["truncated"] is True
    assert len(few["neighbours"]) == 5 and few["truncated"] is True


@pytest.mark.parametrize(
    ("arguments", "field", "words"),
    [
        ({"to": "SELF", "relation": "x"}, "to", "cannot link to itself"),
        ({"to": 999_999, "relation": "x"}, "", "memory 999999 not found"),
        ({"to": "OTHER", "relation": "  "}, "relation", "must be a non-empty text"),
        ({"to": "OTHER", "relation": "a" * 129}, "relation", "the limit is 128"),
        ({"to": "OTHER", "relation": "two\nlines"}, "relation", "one line"),
    ],
)
async def test_bad_links_are_refused_naming_the_argument(
    make_settings: Callable[..., Settings], arguments: dict[str, Any], field: str, words: str
) -> None:
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        one = await stored(client, "one", "first")
        other = await stored(client, "other", "second")
        given = {k: {"SELF": one, "OTHER": other}.get(v, v) for k, v in arguments.items()}
        error = await call_error(client, "memory-link", id=one, **given)
        got = await call(client, "memory-get", id=one)
    assert words in error and (not field or f"invalid {field}" in error), error
    assert "links" not in got  # nothing written


async def test_a_memory_holds_at_most_so_many_links(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory_mcp.rules.linking.MAX_LINKS_PER_MEMORY", 2)
    async with Client(build_server(make_settings(), FakeEmbedder(), open_app=open_app)) as client:
        ids = [await stored(client, f"m{i}", f"memory {i}") for i in range(4)]
        for target in ids[1:3]:
            await call(client, "memory-link", id=ids[0], to=target, relation="r")
        error = await call_error(client, "memory-link", id=ids[0], to=ids[3], relation="r")
        got = await call(client, "memory-get", id=ids[0])
    assert "at most 2" in error
    assert len(got["links"]) == 2


async def test_expand_brings_in_a_linked_memory_and_explains_it(
    make_settings: Callable[..., Settings], real_embedder: OnnxEmbedder
) -> None:
    """The answer to "where does the payments service keep its data" is in two memories:
    the one about payments says which database; only its link reaches the other."""
    async with Client(build_server(make_settings(), real_embedder, open_app=open_app)) as client:
        payments = await stored(
            client, "payments", "The payments service keeps its data in the ledger database"
        )
        ledger = await stored(client, "ledger", "Ledger runs on host db-7 in Frankfurt, 3 replicas")
        for i in range(40):
            await stored(client, f"noise-{i}", f"Payments dashboard tile {i} shows weekly totals")
        query = "Where does the payments service keep its data?"
        plain = await call(client, "memory-search", query=query, limit=3)
        await call(client, "memory-link", id=payments, to=ledger, relation="stored_in")
        unlinked = await call(client, "memory-search", query=query, limit=3, expand=False)
        expanded = await call(
            client, "memory-search", query=query, limit=3, expand=True, explain=True
        )
    assert ledger not in [hit["id"] for hit in plain["results"]]
    assert [hit["id"] for hit in unlinked["results"]] == [hit["id"] for hit in plain["results"]]
    ids = [hit["id"] for hit in expanded["results"]]
    assert ids[0] == payments and ledger in ids
    hit = expanded["results"][ids.index(ledger)]
    assert hit["matched_by"] == "link"
    via = hit["explain"]["via"]
    assert (via["id"], via["relation"], via["direction"]) == (payments, "stored_in", "out")
    assert "linked to a strong hit" in hit["explain"]["why"]
