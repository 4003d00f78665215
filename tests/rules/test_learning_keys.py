"""The `learning:` key space is the lead's (memory_mcp/rules/permissions.py): a worker may not
store such a key in any scope, by a tool or an import, nor change or delete a swarm one,
and memory-inject-learning never adopts a memory it did not create: whatever holds the
learning's key becomes the injecting lead's.

Before: learning keys are deterministic (`learning:<category>:` + 16 hex of
sha256(category + "\\x1f" + normalised text)), so a worker stored that key in swarm scope
first; the lead's injection answered `created: false, agent_id: "wk"`, and the worker then
rewrote it (`injected_by` became {})."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client

from memory_mcp.app import root as app_module
from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main
from memory_mcp.mcp.server import build_server
from memory_mcp.models import NewMemory, Scope, Source
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error, opened

pytestmark = BOTH_BACKENDS

LEARNING = "Run migrations before the API tests"
CATEGORY = "mistake-pattern"
REFUSED_KEY = "invalid key: keys starting with 'learning:' are the lead's"


def learning_key(category: str, text: str) -> str:
    """The key memory-inject-learning derives (the formula the issue reproduced)."""
    normalised = " ".join(text.lower().split())
    return (
        f"learning:{category}:"
        + hashlib.sha256(f"{category}\x1f{normalised}".encode()).hexdigest()[:16]
    )


KEY = learning_key(CATEGORY, LEARNING)


@asynccontextmanager
async def clients(make_settings: Callable[..., Settings]) -> AsyncIterator[tuple[Client, Client]]:
    worker = build_server(
        make_settings(agent_id="wk", watch=False), FakeEmbedder(), open_app=open_app
    )
    lead = build_server(
        make_settings(agent_id="lead", role="lead", watch=False), FakeEmbedder(), open_app=open_app
    )
    async with Client(worker) as wk, Client(lead) as boss:
        yield wk, boss


async def stored_before_the_rule(
    make_settings: Callable[..., Settings], key: str, scope: Scope = Scope.SWARM
) -> int:
    """A worker's `learning:` memory as a store written before this rule holds one: put
    there by the store directly, as the old rules let memory-store do."""
    async with opened(make_settings()) as app:
        outcome = await app.service.store.upsert(
            NewMemory(key, "Migrations are optional", scope, "wk", "", Source.MANUAL),
            expected_version=None,
            now=1_000.0,
            cap=0,
        )
        return outcome.record.id


@pytest.mark.anyio
async def test_a_worker_may_not_store_a_learning_key_in_any_scope(
    make_settings: Callable[..., Settings],
) -> None:
    async with clients(make_settings) as (wk, _):
        for scope in ("session", "agent", "swarm", "global"):
            for key in (KEY, "learning:mine", "  Learning:Best-Practice:x"):
                error = await call_error(wk, "memory-store", key=key, value="v", scope=scope)
                assert REFUSED_KEY in error, (scope, key, error)
        listed = await call(wk, "memory-list", scope="all")
        assert listed["memories"] == []
        # Any other key is the worker's to use, "learning" in it or not.
        await call(wk, "memory-store", key="my-learning:notes", value="v", scope="swarm")


@pytest.mark.anyio
async def test_the_injection_is_the_leads_and_only_the_lead_changes_it(
    make_settings: Callable[..., Settings],
) -> None:
    async with clients(make_settings) as (wk, boss):
        # The order: the worker tries the key first.
        squat = await call_error(wk, "memory-store", key=KEY, value="Skip them", scope="swarm")
        assert REFUSED_KEY in squat
        injected = await call(boss, "memory-inject-learning", learning=LEARNING, category=CATEGORY)
        assert (injected["key"], injected["created"], injected["agent_id"]) == (KEY, True, "lead")
        assert "taken_over_from" not in injected
        refusals = [
            await call_error(wk, "memory-store", key=KEY, value="Skip them", scope="swarm"),
            await call_error(wk, "memory-delete", id=injected["id"]),
            await call_error(wk, "memory-delete", key=KEY, scope="swarm"),
            await call_error(wk, "memory-revert", id=injected["id"], version=1),
        ]
        assert REFUSED_KEY in refusals[0]
        assert all("agent 'lead'" in refusal for refusal in refusals[1:]), refusals
        bulk = await call(wk, "memory-delete-many", tags=[CATEGORY])
        assert (bulk["deleted"], bulk["not_allowed"]) == (0, 1)
        got = await call(wk, "memory-get", id=injected["id"])
        assert (got["version"], got["value"], got["metadata"]["injected_by"]) == (
            1,
            LEARNING,
            "lead",
        )


@pytest.mark.anyio
async def test_injection_takes_over_a_workers_memory_at_its_key_from_an_old_store(
    make_settings: Callable[..., Settings],
) -> None:
    squatted = await stored_before_the_rule(make_settings, KEY)
    async with clients(make_settings) as (wk, boss):
        injected = await call(boss, "memory-inject-learning", learning=LEARNING, category=CATEGORY)
        assert (injected["id"], injected["created"], injected["version"]) == (squatted, False, 2)
        assert (injected["agent_id"], injected["taken_over_from"]) == ("lead", "wk")
        got = await call(wk, "memory-get", id=squatted)
        assert (got["agent_id"], got["updated_by"], got["value"]) == ("lead", "lead", LEARNING)
        assert got["metadata"] == {"injected_by": "lead", "category": CATEGORY}
        history = await call(boss, "memory-history", id=squatted)
        assert [(v["value"], v["written_by"]) for v in history["versions"]] == [
            ("Migrations are optional", "wk"),
            (LEARNING, "lead"),
        ]
        # It is the lead's now: the worker can neither rewrite nor delete it...
        assert "agent 'lead'" in await call_error(wk, "memory-delete", id=squatted)
        assert REFUSED_KEY in await call_error(
            wk, "memory-store", key=KEY, value="Migrations are optional", scope="swarm"
        )
        # ...and injecting it again changes nothing.
        again = await call(boss, "memory-inject-learning", learning=LEARNING, category=CATEGORY)
        assert (again["version"], again["created"], "taken_over_from" in again) == (2, False, False)


@pytest.mark.anyio
async def test_an_old_worker_owned_swarm_learning_is_out_of_its_owners_hands(
    make_settings: Callable[..., Settings],
) -> None:
    """Before the lead injects it again, the worker who wrote it still owns it, but may not
    change or delete it; a lead may. Its own private `learning:` memories it may delete."""
    squatted = await stored_before_the_rule(make_settings, KEY)
    private = await stored_before_the_rule(make_settings, "learning:my-own", Scope.AGENT)
    async with clients(make_settings) as (wk, boss):
        assert REFUSED_KEY in await call_error(
            wk, "memory-store", key=KEY, value="rewritten", scope="swarm"
        )
        for refused in (
            await call_error(wk, "memory-delete", id=squatted),
            await call_error(wk, "memory-delete", key=KEY, scope="swarm"),
            await call_error(wk, "memory-revert", id=squatted, version=1),
        ):
            assert f"memory {squatted} ({KEY!r}) is a learning" in refused, refused
            assert "only a lead may" in refused, refused
        bulk = await call(wk, "memory-delete-many", older_than="0s")
        assert (bulk["deleted"], bulk["not_allowed"]) == (1, 1)  # its private one went
        assert (await call(wk, "memory-get", id=squatted))["value"] == "Migrations are optional"
        assert "not found" in await call_error(wk, "memory-get", id=private)
        assert (await call(boss, "memory-delete", id=squatted))["deleted"] is True


def test_an_import_by_a_worker_refuses_learning_keys(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    lines = [
        {"key": "deploy", "value": "Deploys go out on Tuesdays"},
        {"key": KEY, "value": LEARNING, "scope": "swarm", "tags": [CATEGORY, "learning"]},
    ]
    source = tmp_path / "export.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = str(make_settings().db)
    as_worker = main(["import", str(source), "--db", db, "--agent-id", "wk"])
    err = capsys.readouterr().err
    assert as_worker == 1
    assert f"line 2: {REFUSED_KEY}" in err
    assert "nothing imported" in err
    as_lead = main(["import", str(source), "--db", db, "--agent-id", "lead", "--role", "lead"])
    assert as_lead == 0, capsys.readouterr().err
