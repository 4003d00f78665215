"""What differs between the databases, decided once per store: `create_engines`
(store/engine.py) picks a Dialect by the URL, its one branch on the database, and every
other part of the store asks `engines.dialect` instead of the database's name.

A database is a folder: store/sqlite/ and store/postgres/ each hold their own parts and
their Dialect (`sqlite/dialect.py`, `postgres/dialect.py`). A third database would add a
folder like them, a branch in `create_engines`, and what its tables need in
store/schema.py (docs/ARCHITECTURE.md, "A new database")."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from memory_mcp.store.engine import Engines
    from memory_mcp.store.keyword import KeywordIndex
    from memory_mcp.store.stored_vectors import StoredVectors


async def nothing_after_copy(conn: AsyncConnection) -> None:
    """A database whose copied rows need nothing more."""


@dataclass(frozen=True)
class Dialect:
    name: str  # SQLAlchemy's name for it: "sqlite", "postgresql"
    # The keyword arm (store/keyword.py's port).
    keywords: KeywordIndex
    # The store's vector statements (store/stored_vectors.py, or a subclass).
    stored_vectors: Callable[[Engines], StoredVectors]
    # The database's own objects beside the tables (keyword indexes, triggers, vector
    # columns), made or brought up to date when a store opens, after the tables and
    # migrations.py's columns.
    create_objects: Callable[[AsyncConnection], Awaitable[None]]
    # The largest id `memories` holds (the schema's INTEGER on this database).
    largest_id: int
    # A vector search the database runs itself (the engines and the embedding model ->
    # search/ports.py's VectorSearch, which the store does not import: it is the layer
    # above), or None: the composition root keeps the vectors in this process (semantic/).
    vector_search: Callable[[Engines, str], Any] | None = None
    # After a copy into a store of this database (store/table_copy.py).
    after_copy: Callable[[AsyncConnection], Awaitable[None]] = nothing_after_copy
    # A listing page walks the order's index rather than letting the planner choose
    # (store/browsing.page_statement: SQLite's planner picks the visibility index).
    walks_order_index: bool = False
