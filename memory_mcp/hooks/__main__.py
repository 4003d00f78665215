import sys

from memory_mcp.hooks.runner import main

sys.exit(main())
