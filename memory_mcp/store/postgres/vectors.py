"""Vectors on pgvector: the `embeddings` rows also carry the vector as pgvector's type
(`embedding`, with a partial HNSW index per dimension), and the vector arm of a search
runs in the database, the caller's visibility and filters in the same statement, so they
apply before the top-k (pgvector 0.8's iterative index scan keeps reading the index until
k visible rows are found; where the filters leave few rows the planner scans them exactly).
Nothing is cached in the process: every process sees every committed write at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy import Float, and_, bindparam, cast, literal_column, select, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import UserDefinedType

from memory_mcp.models import Visibility
from memory_mcp.store.engine import Engines
from memory_mcp.store.postgres.schema import hnsw_index_ddl
from memory_mcp.store.rows import MEMORIES, M, visible_to
from memory_mcp.store.schema import EmbeddingRow
from memory_mcp.store.vectors import StoredVectors

E = EmbeddingRow.__table__.c


def vector_literal(vector: np.ndarray | bytes) -> str:
    """pgvector's text form of a float32 vector (from an array or the stored bytes)."""
    values = np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else vector
    return "[" + ",".join(repr(float(x)) for x in np.asarray(values, dtype=np.float32)) + "]"


async def fill_pgvector_column(conn: AsyncConnection) -> None:
    """Set `embedding` from the stored bytes where it is missing (vectors saved by the
    byte-only path or copied from SQLite), and make the HNSW index of each dimension."""
    missing = select(E.content_hash, E.model, E.dimension, E.vector).where(
        text("embedding IS NULL")
    )
    rows = (await conn.execute(missing)).all()
    for row in rows:
        await conn.execute(
            text(
                "UPDATE embeddings SET embedding = CAST(:v AS vector) "
                "WHERE content_hash = :h AND model = :m"
            ),
            {"v": vector_literal(row.vector), "h": row.content_hash, "m": row.model},
        )
    for dimension in {row.dimension for row in rows}:
        await conn.exec_driver_sql(hnsw_index_ddl(int(dimension)))


class PgVector(UserDefinedType[Any]):
    """pgvector's `vector(n)`, for casting the query's text form."""

    cache_ok = True

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def get_col_spec(self, **_: Any) -> str:
        return f"vector({self.dimension})"


class PgStoredVectors(StoredVectors):
    """StoredVectors whose rows carry a pgvector copy, searched in the database."""

    def __init__(self, engines: Engines) -> None:
        super().__init__(engines)
        self._engines = engines

    async def save(self, model: str, items: Sequence[tuple[str, np.ndarray]], now: float) -> None:
        await super().save(model, items, now)
        if items:
            async with self._engines.write() as conn:
                await fill_pgvector_column(conn)

    def database_search(self, model: str) -> PgvectorSearch:
        return PgvectorSearch(self._engines, model)


class PgvectorSearch:
    """A NearestSearch (memory_mcp/vectors.py) that runs in PostgreSQL."""

    def __init__(self, engines: Engines, model: str) -> None:
        self._engines = engines
        self.model = model

    async def catch_up(self) -> None:
        """Nothing to do: the search reads the committed rows themselves."""

    async def nearest(
        self, query: np.ndarray, vis: Visibility, k: int, also: Sequence[int] = ()
    ) -> list[tuple[int, float]]:
        dimension = int(query.shape[0])
        # The expression and the dimension as literals: they must match the partial HNSW
        # index's own for the planner to use it.
        wanted = cast(bindparam("query", vector_literal(query)), PgVector(dimension))
        distance = literal_column(f"embedding::vector({dimension})").op("<=>", return_type=Float)(
            wanted
        )
        base = (
            select(M.id, (1 - distance).label("similarity"))
            .select_from(
                MEMORIES.join(
                    EmbeddingRow.__table__,
                    and_(
                        E.content_hash == M.content_hash,
                        E.model == self.model,
                        E.dimension == literal_column(str(dimension)),
                    ),
                )
            )
            .where(visible_to(vis))
            # Saved as bytes but not yet copied to the pgvector column (PgStoredVectors.save
            # does that in a second transaction): no vector to compare with yet.
            .where(text("embedding IS NOT NULL"))
        )
        async with self._engines.reader.begin() as conn:
            # Filtered HNSW scans continue until k rows pass the filters (pgvector 0.8).
            await conn.execute(text("SET LOCAL hnsw.iterative_scan = strict_order"))
            await conn.execute(text("SET LOCAL hnsw.ef_search = 100"))
            hits = [
                (row[0], float(row[1]))
                for row in await conn.execute(base.order_by(distance).limit(k))
            ]
            extra = [i for i in dict.fromkeys(also) if i not in {h[0] for h in hits}]
            if extra:
                rows = await conn.execute(base.where(M.id.in_(extra)).order_by(distance))
                hits += [(row[0], float(row[1])) for row in rows]
        return hits


__all__ = ["PgStoredVectors", "PgvectorSearch", "fill_pgvector_column", "vector_literal"]
