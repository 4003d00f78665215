"""Browsing, history and bulk deletes through real `memory-mcp serve` processes over stdio,
two agents on one database file: one pages through the memories while the other writes."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio


async def test_two_processes_page_revert_and_bulk_delete(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        w1 = await stack.enter_async_context(spawned(tmp_path, "--agent-id", "w1"))
        w2 = await stack.enter_async_context(spawned(tmp_path, "--agent-id", "w2"))

        for n in range(40):
            await call(w1, "store_memory", key=f"note-{n:02}", value=f"note {n}", tags=["notes"])
        await call(w2, "store_memory", key="w2-private", value="never listed for w1")

        seen: list[str] = []

        async def page_through() -> None:
            cursor = None
            while True:
                arguments: dict[str, Any] = {"limit": 6, "scope": "all"}
                if cursor is not None:
                    arguments["cursor"] = cursor
                page = await call(w1, "memory-list", **arguments)
                seen.extend(m["key"] for m in page["memories"])
                cursor = page["next_cursor"]
                if cursor is None:
                    return

        async def write_meanwhile() -> None:
            for n in range(15):
                await call(w2, "store_memory", key=f"late-{n}", value="late", scope="swarm")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write_meanwhile)
            tasks.start_soon(page_through)

        notes = [key for key in seen if key.startswith("note-")]
        assert notes == [f"note-{n:02}" for n in reversed(range(40))]
        assert len(seen) == len(set(seen)), "no memory on two pages"
        assert "w2-private" not in seen

        first = await call(w1, "store_memory", key="editor", value="vim", scope="swarm")
        await call(w1, "store_memory", key="editor", value="nano", scope="swarm")
        refused = await call_error(w2, "memory-revert", id=first["id"], version=1)
        assert "only its owner or the lead" in refused
        reverted = await call(w1, "memory-revert", id=first["id"], version=1)
        history = await call(w2, "memory-history", id=first["id"])
        assert reverted["version"] == 3
        assert [(v["value"], v["written_by"]) for v in history["versions"]] == [
            ("vim", "w1"),
            ("nano", "w1"),
            ("vim", "w1"),
        ]

        preview = await call(w1, "memory-delete-many", tags=["notes"], limit=25, dry_run=True)
        done = await call(w1, "memory-delete-many", tags=["notes"], limit=25)
        rest = await call(w1, "memory-delete-many", tags=["notes"], limit=25)
        assert (preview["deleted"], preview["matched"], preview["remaining"]) == (0, 40, 15)
        assert (done["deleted"], done["remaining"]) == (25, 15)
        assert [m["id"] for m in done["memories"]] == [m["id"] for m in preview["memories"]]
        assert rest["deleted"] == 15
        left = await call(w2, "memory-list", tags=["notes"])
        assert left["memories"] == []
