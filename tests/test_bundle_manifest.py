"""The Claude Desktop bundle's manifest lists exactly the tools its server shows: the
names tools/list gives a worker over stdio (a real `memory-mcp serve`, as the bundle
starts it with the settings' defaults), in the same order. Issue 47: the manifest listed
the two unlisted aliases (`memory-store`, `memory-inject-learning`) besides them."""

from __future__ import annotations

from pathlib import Path

import anyio

from memory_mcp.mcp.tool_names import ALIASES, LEAD_ONLY
from tests.mcp.test_stdio_e2e import spawned
from tests.test_licence import bundle_script


def test_the_manifest_lists_what_tools_list_shows(tmp_path: Path) -> None:
    listed = [tool["name"] for tool in bundle_script().manifest([])["tools"]]

    async def tools_list() -> list[str]:
        async with spawned(tmp_path) as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    assert listed == anyio.run(tools_list)
    assert not set(listed) & (set(ALIASES) | LEAD_ONLY)
