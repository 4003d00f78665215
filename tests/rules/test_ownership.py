"""Who may change a swarm memory, who wrote each version, and what an agent's export holds.
(Learnings' ownership: tests/mcp/test_tools_memory.py; every rule at once:
tests/rules/test_permission_matrix.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from memory_mcp.app.background import OpeningApp
from memory_mcp.app.context import AppContext
from memory_mcp.app.root import open_app
from memory_mcp.cli import main as cli
from memory_mcp.errors import InvalidInputError, PermissionDeniedError
from memory_mcp.mcp.server import build_server
from memory_mcp.models import NewMemory, Scope, Source, StoreRequest
from memory_mcp.settings import Settings
from tests.conftest import BOTH_BACKENDS, FakeEmbedder, call, call_error, opened

pytestmark = BOTH_BACKENDS


@pytest.mark.anyio
async def test_only_the_owner_or_the_lead_updates_a_swarm_memory(
    make_settings: Callable[..., Settings],
) -> None:
    def server(agent_id: str, role: str = "worker") -> MCPServer[OpeningApp[AppContext]]:
        settings = make_settings(agent_id=agent_id, role=role, watch=False)
        return build_server(settings, FakeEmbedder(), open_app=open_app)

    async with (
        Client(server("w1")) as w1,
        Client(server("w2")) as w2,
        Client(server("lead", "lead")) as lead,
    ):
        first = await call(
            w1,
            "memory-store",
            key="team-rule",
            value="Two reviewers",
            tags=["process"],
            scope="swarm",
        )
        assert (first["agent_id"], first["updated_by"]) == ("w1", "w1")

        error = await call_error(
            w2, "memory-store", key="team-rule", value="No reviews", scope="global"
        )
        assert "agent 'w1'" in error
        assert "owner or the lead" in error
        kept = await call(w2, "memory-get", id=first["id"])
        assert (kept["value"], kept["version"], kept["tags"]) == ("Two reviewers", 1, ["process"])

        by_lead = await call(
            lead, "memory-store", key="team-rule", value="Three reviewers", scope="swarm"
        )
        assert by_lead["id"] == first["id"]
        assert by_lead["version"] == 2
        assert (by_lead["agent_id"], by_lead["updated_by"]) == ("w1", "lead")
        got = await call(w2, "memory-get", id=first["id"])
        assert (got["agent_id"], got["updated_by"]) == ("w1", "lead")
        found = await call(w2, "memory-search", query="reviewers")
        assert [(r["id"], r["updated_by"]) for r in found["results"]] == [(first["id"], "lead")]

        by_owner = await call(
            w1, "memory-store", key="team-rule", value="Two reviewers again", scope="swarm"
        )
        assert (by_owner["version"], by_owner["updated_by"]) == (3, "w1")

    async with opened(make_settings()) as app:
        history = await app.service.store.history(first["id"])
    # Each replaced version says who wrote it.
    assert [(h["value"], h["updated_by"]) for h in history] == [
        ("Two reviewers", "w1"),
        ("Three reviewers", "lead"),
    ]


@pytest.mark.anyio
async def test_the_store_refuses_an_overwrite_under_its_write_lock(
    make_settings: Callable[..., Settings],
) -> None:
    """The rule is applied to the row the upsert reads inside its transaction, so a
    caller that skipped the service's checks (or raced another writer) is refused too."""
    async with opened(make_settings()) as app:
        store = app.service.store

        def swarm(agent_id: str, value: str) -> NewMemory:
            return NewMemory(
                key="k",
                value=value,
                scope=Scope.SWARM,
                agent_id=agent_id,
                session_id="",
                source=Source.MANUAL,
            )

        await store.upsert(swarm("w1", "mine"), expected_version=None, now=1.0, cap=0)
        with pytest.raises(PermissionDeniedError, match="agent 'w1'"):
            await store.upsert(swarm("w2", "theirs"), expected_version=None, now=2.0, cap=0)
        allowed = await store.upsert(
            swarm("w2", "theirs"), expected_version=None, now=3.0, cap=0, may_overwrite_others=True
        )
        assert (allowed.record.agent_id, allowed.record.updated_by) == ("w1", "w2")


# `memory-mcp export` runs its own event loop: the export test is a plain function.


def seed(db: Path) -> None:
    """w1 and w2 each store one memory per scope, in session s1."""

    async def store_all() -> None:
        for agent in ("w1", "w2"):
            settings = Settings(db=str(db), agent_id=agent, session_id="s1", watch=False)
            async with opened(settings) as app:
                for scope in Scope:
                    await app.service.store_memory(
                        app.caller,
                        StoreRequest(
                            f"{agent}-{scope.value}",
                            f"{agent} {scope.value} note",
                            scope=scope,
                        ),
                    )

    anyio.run(store_all)


def export(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "out.jsonl"
    out.unlink(missing_ok=True)
    code = cli.main(["export", "--db", str(tmp_path / "m.db"), "-o", str(out), *args])
    if code != 0:
        return code, set()
    return code, {json.loads(line)["key"] for line in out.read_text().splitlines()}


def test_export_holds_what_the_agent_may_see_and_all_needs_asking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_MCP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMORY_MCP_MEMORY_DIR", str(tmp_path / "notes"))
    seed(tmp_path / "m.db")

    # Another session: w2's own agent memory and every swarm memory, nothing of w1's.
    assert export(tmp_path, "--agent-id", "w2") == (0, {"w2-agent", "w1-swarm", "w2-swarm"})
    # In its session, its session memory too.
    assert export(tmp_path, "--agent-id", "w2", "--session-id", "s1") == (
        0,
        {"w2-session", "w2-agent", "w1-swarm", "w2-swarm"},
    )
    # The whole store only on purpose, and not mixed up with one agent's view.
    everything = {f"{agent}-{scope.value}" for agent in ("w1", "w2") for scope in Scope}
    assert export(tmp_path, "--all") == (0, everything)
    assert export(tmp_path, "--all", "--agent-id", "w2")[0] == 2
    with pytest.raises(SystemExit):
        cli.main(["export", "--help"])
    assert "operator's command" in capsys.readouterr().out


@pytest.mark.anyio
async def test_any_agent_keeps_the_shared_folder_in_step_but_workers_cannot_edit_its_notes(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """The shared folder owns its notes: whichever agent indexes an edited file updates
    them; a worker writing to the same key through store_memory does not."""
    shared = tmp_path / "shared"
    shared.mkdir()
    note = shared / "conventions.md"
    note.write_text("# Style\nUse ruff for linting.\n")
    async with opened(make_settings(agent_id="w1", shared_memory_dir=shared)) as app:
        first = (await app.notes.index_path(note)).report
        assert first is not None
        assert first.created == 1
    note.write_text("# Style\nUse ruff for linting and formatting.\n")
    async with opened(make_settings(agent_id="w2", shared_memory_dir=shared)) as app:
        second = (await app.notes.index_path(note)).report
        assert second is not None
        assert (second.updated, second.refused) == (1, [])
        [record] = [r async for r in app.service.visible_records(app.caller)]
        assert "formatting" in record.value
        assert (record.agent_id, record.updated_by) == ("w1", "w2")
        # Note keys are reserved for the indexer: refused before any owner check.
        with pytest.raises(InvalidInputError, match="reserved for notes"):
            await app.service.store_memory(
                app.caller, StoreRequest(record.key, "Use black", scope=Scope.SWARM)
            )
