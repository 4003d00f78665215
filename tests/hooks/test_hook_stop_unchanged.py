"""A Stop hook fires after every turn: on an unchanged transcript it must leave the
session's summary alone (same version), and bump it only when the session went on."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memory_mcp.app.root import open_app
from memory_mcp.hooks.runner import main as hook_main
from memory_mcp.models import MemoryRecord
from tests.conftest import opened
from tests.hooks.test_hooks import settings_for, write_transcript


def summaries(tmp_path: Path) -> list[MemoryRecord]:
    async def read() -> list[MemoryRecord]:
        async with opened(settings_for(tmp_path)) as app:
            return [
                r
                async for r in app.service.store.iter_records()
                if r.key == "session-summary:eb5b0174"
            ]

    return anyio.run(read)


def test_a_stop_hook_on_an_unchanged_transcript_keeps_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_for(tmp_path)
    monkeypatch.setenv("MEMORY_MCP_DB", settings.db or "")
    monkeypatch.setenv("MEMORY_MCP_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.setenv("MEMORY_MCP_AGENT_ID", settings.agent_id)
    transcript = tmp_path / "eb5b0174.jsonl"
    write_transcript(transcript, events=-1)
    stop = json.dumps(
        {
            "session_id": "eb5b0174",
            "transcript_path": str(transcript),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    ).encode()

    for _ in range(3):
        assert hook_main(["stop"], stop, watchdog=False, open_app=open_app) == 0
    (memory,) = summaries(tmp_path)
    assert memory.version == 1, "nothing changed, so nothing was rewritten"

    write_transcript(transcript)  # the conversation went on
    assert hook_main(["stop"], stop, watchdog=False, open_app=open_app) == 0
    (memory,) = summaries(tmp_path)
    assert memory.version == 2
