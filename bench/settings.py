"""The benchmarks' own settings: only what a benchmark passes, never the user's
MEMORY_MCP_* variables or settings file, so two people's numbers measure the same thing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memory_mcp.settings import CONFIG_ENV, ENV_PREFIX, Settings


class BenchSettings(Settings):
    """`Settings` built from its arguments and the defaults alone."""

    @classmethod
    def given_elsewhere(cls) -> dict[str, Any]:
        return {}


def store_settings(directory: Path, **fields: Any) -> Settings:
    """A store in `directory` (memory.db), one agent `bench` with no per-agent cap: the
    synthetic stores hold more memories than a user's default cap allows."""
    return BenchSettings(
        db=str(directory / "memory.db"),
        data_dir=directory,
        agent_id="bench",
        max_memories_per_agent=0,
        **fields,
    )


def server_env(scratch: Path, **settings: str) -> dict[str, str]:
    """The environment of a spawned `memory-mcp serve`: this one without its MEMORY_MCP_*
    variables, an empty settings file, notes in `scratch` and not watched, plus `settings`
    (e.g. embedder="onnx" -> MEMORY_MCP_EMBEDDER)."""
    scratch.mkdir(parents=True, exist_ok=True)
    config = scratch / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(ENV_PREFIX)}
    env.update(
        {
            CONFIG_ENV: str(config),
            "HF_HUB_OFFLINE": "1",
            "XDG_DATA_HOME": str(scratch / "xdg"),
            f"{ENV_PREFIX}MEMORY_DIR": str(scratch / "notes"),
            f"{ENV_PREFIX}WATCH": "false",
        }
    )
    env.update({f"{ENV_PREFIX}{name.upper()}": value for name, value in settings.items()})
    return env
