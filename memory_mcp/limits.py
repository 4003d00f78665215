"""Numbers that more than one part of the package needs, in a module that imports the
standard library only: the CLI's parser and the hooks' fast path import them from here
instead of copying them (importing their owners would load pydantic, the store or the
model before any work needs them)."""

from __future__ import annotations

import os

# The settings snippet gives each hook 10 s; finish well inside it. A hook configured with a
# longer `timeout` (a team server far away, a slow machine) may say so here; read before
# the settings, which a hook with nothing to do never loads.
HOOK_BUDGET_ENV = "MEMORY_MCP_HOOK_BUDGET_SECONDS"


def _hook_budget(default: float = 8.0) -> float:
    try:
        value = float(os.environ.get(HOOK_BUDGET_ENV, default))
    except ValueError:
        return default
    return value if 3.0 <= value <= 600.0 else default


HOOK_BUDGET_SECONDS = _hook_budget()
# Left for start-up and shutdown before the hook runner's watchdog ends the process.
JOB_BUDGET_SECONDS = HOOK_BUDGET_SECONDS - 2.0

# A <memories> block's defaults (rules/memories_block.py; the settings context_max_items,
# context_max_tokens and prompt_max_tokens change them): at most this many memories, in at
# most this many tokens (1,000 tokens: about the 4,000 characters the block held before it
# had a budget). `context --limit` goes up to BLOCK_ITEMS_MAX.
MAX_BLOCK_ITEMS = 12
DEFAULT_BLOCK_TOKENS = 1_000
BLOCK_ITEMS_MAX = 200
BLOCK_TOKENS_MAX = 100_000
# The prompt hook's threshold (settings.prompt_min_match; docs/lab/capture.md).
PROMPT_MIN_MATCH = 0.6
# `context --query`, `search`: how long a command waits for the embedding model before it
# searches by words only (the model loads in ~5-15 s here).
MODEL_WAIT_SECONDS = 60.0

# memory-related (rules/service.py): links followed from the start, memories answered.
LINK_DEPTH_MAX = 3
RELATED_LIMIT_MAX = 100
