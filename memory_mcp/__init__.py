"""memory-mcp: a durable, searchable memory for AI agents, served over MCP."""

__version__ = "0.1.0"
