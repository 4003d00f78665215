"""`python server.py [flags]` is the same as `memory-mcp serve [flags]`."""

import sys

from memory_mcp.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
