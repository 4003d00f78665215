"""The entry the seeds describe (RFC-0015's `memory.get(agent_id, key)`, a JSON value, batch
upserts, promotion to the swarm, caps with LRU eviction), each over a real
`memory-mcp serve` on stdio, the way an agent's client runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio


async def test_get_by_key(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        mine = await call(client, "store_memory", key="deploy-day", value="Tuesdays")
        read = await call(client, "memory-get", key="deploy-day")
        shared = await call(
            client, "store_memory", key="deploy-day", value="Tuesdays, team-wide", scope="swarm"
        )
        several = await call_error(client, "memory-get", key="deploy-day")
        picked = await call(client, "memory-get", key="deploy-day", scope="swarm")
    assert (read["id"], read["value"]) == (mine["id"], "Tuesdays")
    assert f"memory {mine['id']}" in several and f"memory {shared['id']}" in several
    assert "give scope to pick one" in several
    assert (picked["id"], picked["value"]) == (shared["id"], "Tuesdays, team-wide")
