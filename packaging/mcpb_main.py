"""The Claude Desktop bundle's entry point (server/main.py in the .mcpb; packaging/mcpb.py):
memory-mcp's server on stdio, with the settings the user chose for the extension, passed
as MEMORY_MCP_* variables. A setting left empty (or passed as its unfilled
`${user_config...}` placeholder) is dropped, so memory-mcp's own default applies."""

import os
import sys

for name in [name for name in os.environ if name.startswith("MEMORY_MCP_")]:
    value = os.environ[name].strip()
    if not value or value.startswith("${"):
        del os.environ[name]

from memory_mcp.cli.main import main  # noqa: E402  (after the environment is settled)

sys.exit(main(["serve"]))
