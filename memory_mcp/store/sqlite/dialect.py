"""SQLite as the store's Dialect (store/dialect.py): FTS5 for the keyword arm, the vectors
kept in this process (the composition root's numpy index), and its own schema objects."""

from __future__ import annotations

from memory_mcp.store.dialect import Dialect
from memory_mcp.store.sqlite import fts5
from memory_mcp.store.sqlite.ddl import create_sqlite_objects
from memory_mcp.store.sqlite.file import LARGEST_ID
from memory_mcp.store.stored_vectors import StoredVectors

SQLITE = Dialect(
    name="sqlite",
    keywords=fts5,
    stored_vectors=StoredVectors,
    create_objects=create_sqlite_objects,
    largest_id=LARGEST_ID,
    walks_order_index=True,
)
