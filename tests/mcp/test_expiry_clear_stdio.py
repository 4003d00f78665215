"""Removing a memory's expiry, over a real `memory-mcp serve` on stdio: `expires_at:
"never"` on an update keeps the memory for good and changes nothing it was not asked to
(issue 47: only `replace: true` could, and it reset every field left out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio


async def test_never_removes_an_expiry_and_keeps_the_rest(tmp_path: Path) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        stored = await call(
            client,
            "store_memory",
            key="freeze",
            value="Code freeze until the release ships",
            tags=["release"],
            metadata={"ticket": "REL-9"},
            pinned=True,
            confidence=0.8,
            kind="decision",
            ttl_seconds=3600,
        )
        before = await call(client, "memory-get", id=stored["id"])
        assert before["expires_at"] is not None

        kept = await call(
            client,
            "store_memory",
            key="freeze",
            value="Code freeze until the release ships",
            expires_at="never",
        )
        assert (kept["id"], kept["version"]) == (stored["id"], 2)
        after = await call(client, "memory-get", id=stored["id"])
        assert after["expires_at"] is None
        unchanged = ("tags", "metadata", "pinned", "confidence", "kind", "scope", "source")
        assert {name: after[name] for name in unchanged} == {
            name: before[name] for name in unchanged
        }

        # A later update that says nothing of the expiry keeps "never".
        await call(client, "store_memory", key="freeze", value="Code freeze until 2.0 ships")
        assert (await call(client, "memory-get", id=stored["id"]))["expires_at"] is None

        # In a batch too; and on a new memory it overrides the source's own lifetime
        # (task_completion: 7 days).
        batch = await call(
            client,
            "store_memory",
            memories=[
                {"key": "done", "value": "Migrated the users table", "source": "task_completion"},
                {
                    "key": "kept-done",
                    "value": "Migrated the orders table",
                    "source": "task_completion",
                    "expires_at": "Never",
                },
            ],
        )
        ids = [answer["id"] for answer in batch["stored"]]
        default, never = [await call(client, "memory-get", id=i) for i in ids]
        assert default["expires_at"] is not None and never["expires_at"] is None

        # The refusals say how: not both, and ttl_seconds 0 points at "never".
        both = await call_error(
            client, "store_memory", key="freeze", value="x", ttl_seconds=60, expires_at="never"
        )
        assert "ttl_seconds" in both and "not both" in both
        zero = await call_error(client, "store_memory", key="freeze", value="x", ttl_seconds=0)
        assert '"never"' in zero
        assert (await call(client, "memory-get", id=stored["id"]))["version"] == 3
