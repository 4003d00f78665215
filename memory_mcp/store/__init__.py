"""Persistence: SQLAlchemy tables, the engine set-up and the MemoryStore repository."""

from memory_mcp.store.repository import IndexDelta, IndexRow, MemoryStore

__all__ = ["IndexDelta", "IndexRow", "MemoryStore"]
