"""The <memories> block's budget in tokens, wherever it is put into a context: the
SessionStart hook (a real process), the memory-context prompt and resource (over MCP) and
`memory-mcp context`. Whole memories by priority (pinned, learnings, then the order of
relevance), never one cut mid-way; a budget too small for one says there is more."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent, TextResourceContents

from memory_mcp.app.root import open_app
from memory_mcp.cli.main import main as cli_main
from memory_mcp.mcp.server import build_server
from memory_mcp.models import MemoryRecord, Scope, Source, StoreRequest
from memory_mcp.rules.memories_block import BlockLimits, render_block
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, call, in_process, opened

HOOKS = Path(__file__).resolve().parents[2] / "hooks"
LONG = "The release checklist: " + "verify the changelog, tag, build, sign, upload; " * 12


def record(i: int, value: str, *, key: str = "", pinned: bool = False) -> MemoryRecord:
    return MemoryRecord(
        id=i,
        key=key or f"k{i}",
        value=value,
        scope=Scope.AGENT,
        agent_id="a",
        session_id="",
        source=Source.MANUAL,
        tags=["learning"] if key.startswith("learning:") else [],
        metadata={},
        flags=[],
        confidence=None,
        pinned=pinned,
        version=1,
        content_hash="",
        created_at=0.0,
        updated_at=0.0,
        expires_at=None,
        last_accessed_at=None,
        access_count=0,
    )


def test_a_budget_smaller_than_one_memory_says_there_is_more() -> None:
    block = render_block([record(7, LONG)], BlockLimits(max_tokens=60))
    root = ET.fromstring(block)
    assert root.findall("memory") == []
    more = root.find("more")
    assert more is not None
    assert more.attrib == {"count": "1", "ids": "7"}
    assert "60 tokens" in (more.text or "")
    assert "release checklist" not in block, "never a memory cut mid-way"


def test_the_budget_is_filled_by_priority_with_whole_memories() -> None:
    plain = [record(i, f"fact {i} " + "x" * 300) for i in range(1, 4)]
    learning = record(20, "Run the linter before pushing.", key="learning:best-practice:ab")
    pinned = record(30, "The user's name is Ada.", pinned=True)
    big = record(40, LONG)
    small = record(50, "Deploys happen on Tuesdays.")
    from memory_mcp.rules.memories_block import by_priority

    ordered = by_priority([*plain[:1], big, learning, small, pinned, *plain[1:]])
    assert [r.id for r in ordered][:2] == [30, 20], "pinned, then learnings"
    block = render_block(ordered, BlockLimits(max_tokens=300))
    root = ET.fromstring(block)
    shown = {int(m.attrib["id"]): m.text for m in root.findall("memory")}
    assert len(block) <= 300 * 4
    assert 30 in shown and 20 in shown and 1 in shown
    assert 40 not in shown, "too big for what was left"
    assert shown[50] == "Deploys happen on Tuesdays.", "a smaller one after it still fits"
    by_id = {r.id: r.value for r in ordered}
    assert all(text == by_id[i] for i, text in shown.items()), "each memory whole"
    more = root.find("more")
    assert more is not None and "40" in more.attrib["ids"].split()


def seed(settings: Settings) -> None:
    async def run() -> None:
        async with opened(settings) as app:
            await app.service.store_memory(app.caller, StoreRequest("checklist", LONG))

    anyio.run(run)


@pytest.mark.skipif(sys.platform == "win32", reason="the hooks are POSIX shell scripts")
def test_the_session_start_hook_honours_its_budget(tmp_path: Path) -> None:
    settings = Settings(db=str(tmp_path / "memory.db"), data_dir=tmp_path / "data")
    seed(settings)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORY_MCP_")}
    env.update(
        MEMORY_MCP_DB=str(tmp_path / "memory.db"),
        MEMORY_MCP_DATA_DIR=str(tmp_path / "data"),
        MEMORY_MCP_MEMORY_DIR=str(tmp_path / "memory"),
    )
    payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}

    def block(tokens: str | None) -> ET.Element:
        variables = {"MEMORY_MCP_CONTEXT_MAX_TOKENS": tokens} if tokens else {}
        done = subprocess.run(
            [str(HOOKS / "session-start")],
            input=json.dumps(payload),
            env={**env, **variables},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        return ET.fromstring(done.stdout)

    small = block("50")
    assert small.findall("memory") == []
    more = small.find("more")
    assert more is not None and more.attrib["count"] == "1"
    (whole,) = block(None).findall("memory")  # the default budget, 1,000 tokens
    assert whole.text == LONG


def test_memory_mcp_context_honours_max_tokens(tmp_path: Path) -> None:
    flags = ["--db", str(tmp_path / "memory.db"), "--memory-dir", str(tmp_path / "memory")]
    seed(Settings(db=str(tmp_path / "memory.db"), data_dir=tmp_path / "data"))
    code, out, err = in_process(lambda: cli_main(["context", "--max-tokens", "50", *flags]))
    assert code == 0, err
    root = ET.fromstring(out)
    assert root.findall("memory") == [] and root.find("more") is not None
    code, out, err = in_process(lambda: cli_main(["context", "--limit", "40", *flags]))
    assert code == 0, err  # the count is a setting now, no longer at most 12
    assert ET.fromstring(out).find("memory") is not None
    code, _, err = in_process(lambda: cli_main(["context", "--max-tokens", "0", *flags]))
    assert code == 2 and "max-tokens" in err


@pytest.mark.anyio
async def test_the_memory_context_prompt_and_resource_honour_max_tokens(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings(context_max_tokens=50)
    async with Client(build_server(settings, FakeEmbedder(), open_app=open_app)) as client:
        await call(client, "memory-store", key="checklist", value=LONG)
        read = await client.read_resource("memory://context")
        contents = read.contents[0]
        assert isinstance(contents, TextResourceContents)
        resource = ET.fromstring(contents.text)
        assert resource.findall("memory") == [] and resource.find("more") is not None

        prompt = await client.get_prompt("memory-context", {"max_tokens": "2000"})
        message = prompt.messages[0].content
        assert isinstance(message, TextContent)
        (whole,) = ET.fromstring(message.text).findall("memory")
        assert whole.text == LONG

        prompt = await client.get_prompt("memory-context", {"query": "release", "max_tokens": "40"})
        message = prompt.messages[0].content
        assert isinstance(message, TextContent)
        assert ET.fromstring(message.text).find("more") is not None

        with pytest.raises(MCPError, match="max_tokens"):
            await client.get_prompt("memory-context", {"max_tokens": "lots"})
