"""Vectors on pgvector: the `embeddings` rows also carry the vector as pgvector's type
(`embedding`, with a partial HNSW index per dimension), and the vector arm of a search
runs in the database, the caller's visibility and filters in the same statement, so they
apply before the top-k (pgvector 0.8's iterative index scan keeps reading the index until
k visible rows are found; a project's few rows in a store of many are ranked exactly).
Nothing of the store is kept in the process (only which views were lately too big to rank
exactly): every process sees every committed write at once."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import (
    Float,
    Select,
    and_,
    bindparam,
    cast,
    func,
    literal,
    literal_column,
    select,
    text,
    true,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import ColumnElement
from sqlalchemy.types import UserDefinedType

from memory_mcp.models import Visibility
from memory_mcp.store.memories_table import MEMORIES, M, visible_to
from memory_mcp.store.postgres.ddl import hnsw_index_ddl
from memory_mcp.store.schema import EmbeddingRow
from memory_mcp.store.stored_vectors import StoredVectors

if TYPE_CHECKING:  # the engines are handed in, not made here
    from memory_mcp.store.engine import Engines

E = EmbeddingRow.__table__.c


def vector_literal(vector: np.ndarray | bytes) -> str:
    """pgvector's text form of a float32 vector (from an array or the stored bytes)."""
    values = np.frombuffer(vector, dtype=np.float32) if isinstance(vector, bytes) else vector
    return "[" + ",".join(repr(float(x)) for x in np.asarray(values, dtype=np.float32)) + "]"


async def set_pgvectors(
    conn: AsyncConnection, model: str, items: Sequence[tuple[str, np.ndarray | bytes]]
) -> None:
    """Set the pgvector copy of these (content hash, vector) rows of `model`."""
    if items:
        await conn.execute(
            text(
                "UPDATE embeddings SET embedding = CAST(:v AS vector) "
                "WHERE content_hash = :h AND model = :m"
            ),
            [{"v": vector_literal(v), "h": h, "m": model} for h, v in items],
        )


async def fill_pgvector_column(conn: AsyncConnection) -> None:
    """Set `embedding` from the stored bytes where it is missing (vectors copied from
    SQLite, or saved by an older version in two steps), and make the HNSW index of each
    dimension in use. Run when a store opens; a no-op (one indexed lookup) otherwise."""
    missing = select(E.content_hash, E.model, E.dimension, E.vector).where(
        text("embedding IS NULL")
    )
    rows = (await conn.execute(missing)).all()
    for model in {row.model for row in rows}:
        await set_pgvectors(
            conn, model, [(r.content_hash, r.vector) for r in rows if r.model == model]
        )
    dimensions = await conn.scalars(select(E.dimension).distinct())
    for dimension in dimensions.all():
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
        self._indexed: set[int] = set()  # dimensions whose HNSW index this process made

    async def save(
        self,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
        now: float,
        *,
        durable: bool = True,
        whole_only: bool = False,
    ) -> None:
        """The rows and their pgvector copy in ONE transaction: a search never meets a
        vector row without its `embedding` (it would have no distance)."""
        if not items:
            return
        async with self._engines.write(durable=durable) as conn:
            fresh = await conn.run_sync(self._save_rows, model, items, now, whole_only)
            await set_pgvectors(conn, model, fresh)
            dimensions = {int(v.shape[0]) for _, v in fresh} - self._indexed
            for dimension in dimensions:
                await conn.exec_driver_sql(hnsw_index_ddl(dimension))
        self._indexed |= dimensions  # committed


# How many candidates an HNSW scan keeps (pgvector's default is 40). On the 1M bench store
# (bench scale, 200 queries, 2026-11-25, quiet): 100 -> recall@10 0.663 at 6.5 ms a
# nearest-neighbour query, 400 -> 0.844 at 6.9 ms, 800 -> 0.908 at 8.7 ms. 400 buys most
# of the recall for almost no time; small stores are unaffected (their scans end sooner).
HNSW_EF_SEARCH = 400
# A visible set of at most this many memories, and too few of the store's vectors for an
# HNSW scan's first ef_search candidates to hold k of them, is ranked exactly: its rows
# read through the project index, each one's vector looked up. 100k memories in 20
# projects, k 50, load ~8: a project's 5,000 exactly 40 ms; pgvector's iterative scan
# 140-170 ms (986 candidates to find 50, each joined to its memory); the HNSW scan of a
# store of one project 55-80 ms. The exact ranking costs ~8 us a row at that load, so
# past ~20,000 a filtered HNSW scan is cheaper.
EXACT_ROWS = 20_000
# A view counted over EXACT_ROWS is not counted again for this long: the count reads
# EXACT_ROWS index entries (3-10 ms at load ~9 in a project of 100k, beside an HNSW scan
# of 55-80 ms). A project that shrinks meanwhile is scanned by HNSW, as before.
RECOUNT_SECONDS = 60.0


class PgvectorSearch:
    """The vector backend on PostgreSQL (search/ports.py's VectorSearch): every step runs
    in the database; nothing is kept in the process to scan, catch up, persist or build."""

    def __init__(self, engines: Engines, model: str) -> None:
        self._engines = engines
        self.model = model
        self._stored = StoredVectors(engines)
        # Views (a visibility without its time) counted over EXACT_ROWS: until when they
        # are not counted again (monotonic seconds).
        self._big: dict[Visibility, float] = {}

    async def catch_up(self) -> None:
        """Nothing to do: the search reads the committed rows themselves."""

    async def scan(self, query: np.ndarray, vis: Visibility) -> None:
        """Nothing to start: the database scans its own index in `prepare`."""

    async def persist_if_due(self, now: float) -> bool:
        return False  # the database keeps its index

    async def build_coarse_if_due(self) -> bool:
        return False  # HNSW needs no coarse index

    async def prepare(
        self, query: np.ndarray, vis: Visibility, k: int, scan: None = None
    ) -> NearestHits:
        """The k nearest visible memories, which need no keyword candidates: a search
        runs this beside its keyword arm (~7-10 ms at 1M memories that otherwise came
        after both arms) and hands it to `nearest`."""
        async with self._engines.reader.begin() as conn:
            return NearestHits(query, vis, k, await self._nearest(conn, query, vis, k))

    async def exact_vectors(self, memory_ids: Sequence[int], vis: Visibility) -> VisibleVectors:
        """The stored vectors of those of `memory_ids` that `vis` lets through, for
        `nearest`'s `known`: a search's keyword arm reads its candidates' while the vector
        arm runs (an indexed lookup each, ~0.15 ms at 1M memories), and the visibility
        rule is asked in the same statement, so `nearest` need not ask it again after
        both arms (a round trip, ~5 ms at 1M)."""
        found: dict[int, np.ndarray] = {}
        if memory_ids:
            found = await self._stored.vectors_of(self.model, memory_ids, vis)
        return VisibleVectors(vis, found)

    async def nearest(
        self,
        query: np.ndarray,
        vis: Visibility,
        k: int,
        also: Sequence[int] = (),
        scan: None = None,
        prepared: NearestHits | None = None,
        known: Mapping[int, np.ndarray] | None = None,
    ) -> list[tuple[int, float]]:
        """The k visible memories nearest to `query` (cosine similarity), then those of
        `also` that `vis` lets through. `scan`: always None (`scan` starts nothing).
        `prepared`: this search's `prepare`, used when it
        was asked the same; `known`: stored vectors read already (a search's keyword arm
        reads its candidates' with `exact_vectors`), scored without a trip to the
        database when they were read for this `vis`; any others are scored by the
        database, which asks the visibility rule in the same statement."""
        hits = (
            list(prepared.hits)
            if prepared is not None and prepared.answers(query, vis, k)
            else None
        )
        checked = known.vectors if isinstance(known, VisibleVectors) and known.vis == vis else {}
        wanted = list(dict.fromkeys(also))
        scored: list[tuple[int, float]] = []
        if hits is None or any(i not in checked for i in wanted):
            async with self._engines.reader.begin() as conn:
                if hits is None:
                    hits = await self._nearest(conn, query, vis, k)
                seen = {memory_id for memory_id, _ in hits}
                if rest := [i for i in wanted if i not in seen and i not in checked]:
                    stmt, distance = self._statement(query, vis, indexed=False)
                    scored += await _hits(conn, stmt.where(M.id.in_(rest)), distance, None)
        seen = {memory_id for memory_id, _ in hits}
        scored += [
            (i, _cosine(checked[i], query)) for i in wanted if i in checked and i not in seen
        ]
        return hits + sorted(scored, key=lambda hit: (-hit[1], hit[0]))

    async def _nearest(
        self, conn: AsyncConnection, query: np.ndarray, vis: Visibility, k: int
    ) -> list[tuple[int, float]]:
        """HNSW is approximate: its scan can stop before it has found k visible rows (a
        graph it cannot walk further from where it started, or pgvector's scan limit).
        So an answer shorter than k, which means the visible set is small or the index
        gave up, is replaced by an exact ranking of the visible rows: what the in-process
        index does on SQLite, so both stores answer alike where it can be checked.
        A read within projects that lets few of the store's memories through (`_few`) is
        ranked exactly at once, as SQLite's index does below GATHER_BELOW: a project of a
        store of many answers as it would alone, without walking other projects' vectors."""
        # Filtered HNSW scans continue until k rows pass the filters (pgvector 0.8). The
        # settings, for this transaction only, and the size of a read within projects,
        # in one round trip.
        settings: tuple[ColumnElement[str], ...] = (
            literal_column("set_config('hnsw.iterative_scan', 'strict_order', true)"),
            literal_column(f"set_config('hnsw.ef_search', '{HNSW_EF_SEARCH}', true)"),
        )
        view, now = replace(vis, now=0.0), time.monotonic()
        # Every project (no index narrows the view), or a view counted big lately.
        if vis.shown_projects is None or self._big.get(view, now) > now:
            await conn.execute(select(*settings))
        else:
            row = (await conn.execute(select(*settings, *_sizes(vis)))).one()
            visible, vectors = int(row[2]), float(row[3])
            if _few(visible, vectors, k):
                return await _hits(conn, *self._statement(query, vis, indexed=False), k)
            if visible > EXACT_ROWS:
                self._big = {v: t for v, t in self._big.items() if t > now}
                self._big[view] = now + RECOUNT_SECONDS
        hits = await _hits(conn, *self._statement(query, vis, indexed=True), k)
        if len(hits) < k:
            hits = await _hits(conn, *self._statement(query, vis, indexed=False), k)
        return hits

    def _statement(
        self, query: np.ndarray, vis: Visibility, indexed: bool
    ) -> tuple[Select[Any], ColumnElement[float]]:
        """The visible rows with a vector of the query's dimension, and their distance.
        `indexed`: the distance expression and the dimension as literals, exactly the
        partial HNSW index's own, so the planner uses it; otherwise an expression no index
        has, so it ranks the visible rows exactly: each visible memory's vector looked up
        by its content hash (a lateral subquery the planner cannot merge into a join, so
        it never reads every vector to hash them)."""
        dimension = int(query.shape[0])
        wanted = cast(bindparam("query", vector_literal(query)), PgVector(dimension))
        column = f"embedding::vector({dimension})" if indexed else "embeddings.embedding"
        distance = literal_column(column).op("<=>", return_type=Float)(wanted)
        of_memory = and_(
            E.content_hash == M.content_hash,
            E.model == self.model,
            E.dimension == literal_column(str(dimension)),
            literal_column("embeddings.embedding").is_not(None),
        )
        if not indexed:
            vector = select(distance.label("distance")).where(of_memory).offset(0).lateral()
            exact = (
                select(M.id, (1 - vector.c.distance).label("similarity"))
                .select_from(MEMORIES.join(vector, true()))
                .where(visible_to(vis))
            )
            return exact, vector.c.distance
        stmt = (
            select(M.id, (1 - distance).label("similarity"))
            .select_from(MEMORIES.join(EmbeddingRow.__table__, of_memory))
            .where(visible_to(vis))
        )
        return stmt, distance


@dataclass(frozen=True)
class NearestHits:
    """`PgvectorSearch.prepare`'s answer: one search's nearest memories, found beside its
    keyword arm, for the query, view and k it was asked."""

    query: np.ndarray
    vis: Visibility
    k: int
    hits: list[tuple[int, float]]

    def answers(self, query: np.ndarray, vis: Visibility, k: int) -> bool:
        return k == self.k and vis == self.vis and np.array_equal(query, self.query)


@dataclass(frozen=True)
class VisibleVectors(Mapping[int, np.ndarray]):
    """`PgvectorSearch.exact_vectors`' answer: stored vectors of memories that `vis`
    lets through, checked as they were read."""

    vis: Visibility
    vectors: dict[int, np.ndarray]

    def __getitem__(self, memory_id: int) -> np.ndarray:
        return self.vectors[memory_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self.vectors)

    def __len__(self) -> int:
        return len(self.vectors)


def _sizes(vis: Visibility) -> tuple[ColumnElement[Any], ColumnElement[Any]]:
    """How many memories `vis` lets through (counted up to EXACT_ROWS + 1, from
    ix_memories_project_visible alone), and about how many vectors the store holds
    (ANALYZE's estimate; -1 before the first)."""
    capped = select(literal(1)).select_from(MEMORIES).where(visible_to(vis))
    visible = select(func.count()).select_from(capped.limit(EXACT_ROWS + 1).subquery())
    vectors: ColumnElement[float] = literal_column(
        "(SELECT reltuples FROM pg_class WHERE oid = 'embeddings'::regclass)"
    )
    return visible.scalar_subquery(), vectors


def _few(visible: int, vectors: float, k: int) -> bool:
    """Whether ranking `visible` memories exactly is cheaper than an HNSW scan over
    `vectors`: few enough (EXACT_ROWS), and too few for the scan's first ef_search
    candidates to hold k of them on average (the scan would go on reading)."""
    return visible <= EXACT_ROWS and visible * HNSW_EF_SEARCH < k * vectors


def _cosine(vector: np.ndarray, query: np.ndarray) -> float:
    return float(vector @ query / (np.linalg.norm(vector) * np.linalg.norm(query)))


async def _hits(
    conn: AsyncConnection, stmt: Select[Any], distance: ColumnElement[float], k: int | None
) -> list[tuple[int, float]]:
    ordered = stmt.order_by(distance, M.id)
    if k is not None:
        ordered = ordered.limit(k)
    return [(row[0], float(row[1])) for row in await conn.execute(ordered)]


__all__ = [
    "NearestHits",
    "PgStoredVectors",
    "PgvectorSearch",
    "VisibleVectors",
    "fill_pgvector_column",
    "set_pgvectors",
    "vector_literal",
]
