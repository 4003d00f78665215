"""Persistence: SQLAlchemy tables, the engine set-up and the MemoryStore repository."""

from memory_mcp.store.repository import MemoryStore
from memory_mcp.store.rows import IndexDelta, IndexRow

__all__ = ["IndexDelta", "IndexRow", "MemoryStore"]
