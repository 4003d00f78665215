"""`python -m memory_mcp.cli ...` is `memory-mcp ...`."""

import sys

from memory_mcp.cli.main import main

sys.exit(main())
