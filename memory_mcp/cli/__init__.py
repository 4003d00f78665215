"""The `memory-mcp` command (main.py): the commands for people and the ones that start a
server. Importing this package loads nothing: `--version` stays instant."""
