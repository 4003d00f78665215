"""Claude Code hooks: `python -m memory_mcp.hooks EVENT` (or `memory-mcp hook EVENT`) with
the hook's JSON on stdin. The executables in the repository's `hooks/` folder only find
this package and call it. Nothing here is imported until a hook needs it, so a hook that
has nothing to do exits in tens of milliseconds."""
