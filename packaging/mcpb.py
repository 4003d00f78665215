"""Write the Claude Desktop bundle, dist/memory-mcp-VERSION.mcpb, from the wheels in dist/:
`python packaging/mcpb.py DIST MCPB` (MCPB: the npm `@anthropic-ai/mcpb` command; `make
dist` runs this).

A "uv" bundle (manifest 0.4): Claude Desktop runs `uv run` in the unpacked folder, which
installs the two wheels carried inside (memory-mcp-kit and its model, memory-mcp-minilm) and
their dependencies from PyPI into the bundle's own environment, then starts
packaging/mcpb_main.py. Nothing has to be published for the bundle to work, and no torch
is installed. The user sets the store, the agent id and the role in Claude Desktop's
settings for the extension (`user_config`), passed to the server as MEMORY_MCP_*
variables; one left empty keeps memory-mcp's default."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from memory_mcp import __version__

HERE = Path(__file__).resolve().parent
BUNDLE_NAME = "memory-mcp"
# What a user may set in Claude Desktop -> the server's setting, as an environment variable.
USER_CONFIG = {
    "db": (
        "MEMORY_MCP_DB",
        {
            "type": "string",
            "title": "Store",
            "description": "A SQLite file or a postgresql+asyncpg:// URL. Empty: the default "
            "store in your data folder (~/.local/share/memory-mcp/memory.db on Linux).",
            "required": False,
        },
    ),
    "agent_id": (
        "MEMORY_MCP_AGENT_ID",
        {
            "type": "string",
            "title": "Agent id",
            "description": "Who this client is in the store: its private memories are "
            "this agent's. Share one store between agents to share swarm memories.",
            "default": "claude-desktop",
            "required": False,
        },
    ),
    "role": (
        "MEMORY_MCP_ROLE",
        {
            "type": "string",
            "title": "Role",
            "description": "worker (the default) or lead: a lead may inject learnings and "
            "change any swarm memory.",
            "default": "worker",
            "required": False,
        },
    ),
}


def tool_summaries() -> list[dict[str, str]]:
    """The worker's tools as the manifest lists them: name and the description's first
    sentence (the server itself is the source; nothing is opened to list them). Exactly
    what tools/list shows the bundle's server (a worker, the settings' defaults): the
    registered tools less those its list leaves out (tool_names.unlisted: the aliases of
    earlier names, the lead's own)."""
    import anyio

    from memory_mcp.app.root import open_app
    from memory_mcp.mcp.server import build_server
    from memory_mcp.mcp.tool_names import unlisted
    from memory_mcp.settings import Settings

    settings = Settings(role="worker", watch=False)
    server = build_server(settings, open_app=open_app)
    hidden = unlisted(lead=False, list_aliases=settings.legacy_tool_names)
    tools = [tool for tool in anyio.run(server.list_tools) if tool.name not in hidden]
    summaries = []
    for tool in tools:
        text = " ".join((tool.description or "").split("Example:")[0].split())
        summaries.append({"name": tool.name, "description": text.split(". ")[0].rstrip(".")})
    return summaries


def manifest(wheels: list[str]) -> dict[str, object]:
    return {
        "manifest_version": "0.4",
        "name": BUNDLE_NAME,
        "display_name": "Memory (memory-mcp)",
        "version": __version__,
        "description": "A durable, searchable memory for Claude: store, search by meaning "
        "and by words, share with other agents.",
        "long_description": "Memories live in one SQLite file on this computer (or a "
        "PostgreSQL store shared by a team). Search finds them by meaning, with the bundled "
        "all-MiniLM-L6-v2 model run locally (no download, no API key), and by exact words "
        "and identifiers. Private, per-session and shared scopes; history and undo.",
        "author": {"name": "the memory-mcp authors"},
        "license": "MIT",
        "server": {
            "type": "uv",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--quiet", "--directory", "${__dirname}", "server/main.py"],
                "env": {env: f"${{user_config.{key}}}" for key, (env, _) in USER_CONFIG.items()},
            },
        },
        "tools": tool_summaries(),
        "keywords": ["memory", "search", "embeddings", "agents", "sqlite"],
        "compatibility": {
            "platforms": ["darwin", "win32", "linux"],
            "runtimes": {"python": ">=3.11"},
        },
        "user_config": {key: spec for key, (_, spec) in USER_CONFIG.items()},
    }


def project(wheels: list[str]) -> str:
    """The bundle's pyproject.toml: a virtual project whose dependencies are the wheels
    inside (uv reads [tool.uv.sources] for direct dependencies only: both are listed)."""
    names = {wheel.split("-")[0].replace("_", "-"): wheel for wheel in wheels}
    versions = {name: wheel.split("-")[1] for name, wheel in names.items()}
    lines = [
        "[project]",
        f'name = "{BUNDLE_NAME}-bundle"',
        f'version = "{__version__}"',
        'requires-python = ">=3.11"',
        "dependencies = [",
        *[f'    "{name}=={versions[name]}",' for name in sorted(names)],
        "]",
        "",
        "[tool.uv]",
        "package = false",
        "",
        "[tool.uv.sources]",
        *[f'{name} = {{ path = "wheels/{wheel}" }}' for name, wheel in sorted(names.items())],
    ]
    return "\n".join(lines) + "\n"


def main(dist: Path, mcpb: str) -> int:
    wheels = sorted(path.name for path in dist.glob("*.whl"))
    if {w.split("-")[0] for w in wheels} != {"memory_mcp_kit", "memory_mcp_minilm"}:
        raise SystemExit(f"expected the two wheels in {dist}, found {wheels}")
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch) / BUNDLE_NAME
        (stage / "server").mkdir(parents=True)
        (stage / "wheels").mkdir()
        for wheel in wheels:
            shutil.copy2(dist / wheel, stage / "wheels" / wheel)
        shutil.copy2(HERE / "mcpb_main.py", stage / "server" / "main.py")
        (stage / "pyproject.toml").write_text(project(wheels), encoding="utf-8")
        text = json.dumps(manifest(wheels), indent=2) + "\n"
        (stage / "manifest.json").write_text(text, encoding="utf-8")
        subprocess.run([mcpb, "validate", str(stage / "manifest.json")], check=True)
        target = dist / f"{BUNDLE_NAME}-{__version__}.mcpb"
        subprocess.run([mcpb, "pack", str(stage), str(target)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
