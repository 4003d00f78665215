"""The store's vector statements: the `embeddings` table (one vector per content hash and
model) and the feed of the in-process vector index (rows changed since a revision, and
tombstones). memory_mcp/semantic/vectors.py tells who calls them and when."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import (
    Connection,
    String,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import Visibility
from memory_mcp.store.index_rows import IndexDelta, IndexRow
from memory_mcp.store.memories_table import (
    IN_CHUNK,
    MEMORIES,
    M,
    index_row,
    next_revision,
    visible_to,
)
from memory_mcp.store.schema import EmbeddingRow, StoreMetaRow, TombstoneRow
from memory_mcp.store.sqlite.cursor import cursor_rows

if TYPE_CHECKING:  # the engines are handed in, not made here
    from memory_mcp.store.engine import Engines

# A memory's vector, passages included: not a whole text's alone (EmbeddingRow.whole_only).
COMPLETE = EmbeddingRow.whole_only.is_not(True)


class StoredVectors:
    """Vectors as rows. Every method is one transaction (a write takes its turn through
    `Engines.write()`); none knows who is asking: visibility is the caller's business."""

    def __init__(self, engines: Engines) -> None:
        self._engines = engines

    async def save(
        self,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
        now: float,
        *,
        durable: bool = True,
        whole_only: bool = False,
    ) -> None:
        """Store vectors by content hash and bump the revision of the memories that use
        them, so every process's index picks them up. `durable=False`: the commit does
        not wait for the disk (Engines.write). `whole_only`: the whole texts' vectors
        alone, their passages to come (EmbeddingRow.whole_only); a memory's vector saved
        later replaces one of those, and nothing replaces a memory's vector."""
        if not items:
            return
        if durable:
            await self._engines.run_write(self._save_rows, model, items, now, whole_only)
        else:
            await self._engines.run_lazy_write(self._save_rows, model, items, now, whole_only)

    @staticmethod
    def _save_rows(
        conn: Connection,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
        now: float,
        whole_only: bool = False,
    ) -> list[tuple[str, np.ndarray]]:
        """`save` inside the caller's write transaction: the vectors it wrote (inserted,
        or put in place of a whole text's alone)."""
        digests = [h for h, _ in items]
        stored = dict(conn.execute(_SAVED, {"model": model, "digests": digests}).all())
        fresh = [(h, v) for h, v in items if h not in stored]
        if fresh:
            conn.execute(
                _INSERT_VECTORS,
                [
                    {
                        "content_hash": h,
                        "model": model,
                        "dimension": int(v.shape[0]),
                        "vector": np.asarray(v, dtype=np.float32).tobytes(),
                        "created_at": now,
                        "whole_only": True if whole_only else None,
                    }
                    for h, v in fresh
                ],
            )
        completed = [] if whole_only else [(h, v) for h, v in items if stored.get(h)]
        for h, v in completed:
            conn.execute(
                update(EmbeddingRow)
                .where(EmbeddingRow.model == model, EmbeddingRow.content_hash == h)
                .values(
                    dimension=int(v.shape[0]),
                    vector=np.asarray(v, dtype=np.float32).tobytes(),
                    created_at=now,
                    whole_only=None,
                )
            )
        revision = next_revision(conn)
        conn.execute(_BUMP_USERS, {"revision": revision, "digests": digests})
        return fresh + completed

    async def embedded(self, model: str, digests: Collection[str]) -> set[str]:
        """Which of `digests` (content hashes) have a memory's vector from `model` (not
        only their whole text's)."""
        wanted = list(dict.fromkeys(digests))
        found: set[str] = set()
        async with self._engines.reader.connect() as conn:
            for start in range(0, len(wanted), IN_CHUNK):
                chunk = wanted[start : start + IN_CHUNK]
                found.update(
                    await conn.scalars(
                        select(EmbeddingRow.content_hash).where(
                            EmbeddingRow.model == model,
                            EmbeddingRow.content_hash.in_(chunk),
                            COMPLETE,
                        )
                    )
                )
        return found

    async def vector(self, model: str, digest: str) -> np.ndarray | None:
        """The stored vector of one content hash from `model` (its whole text's alone while
        its passages are to come), or None."""
        found = await self._engines.read(_vector_blob, model, digest)
        return None if found is None else np.frombuffer(found, dtype=np.float32)

    async def has(self, model: str, digest: str) -> bool:
        """Whether one content hash has a memory's vector from `model` (asked on every
        store, so it takes the engines' quick read path)."""
        return await self._engines.read(_complete, model, digest)

    async def missing(self, model: str, limit: int) -> list[tuple[str, str]]:
        """(content hash, text) of memories that have no memory's vector from `model` yet
        (none, or their whole text's alone: EmbeddingRow.whole_only), in turns:
        every memory not from a file, and the first waiting chunk of every file, then the
        second chunk of every file, and so on; the most recently written first within a
        turn. A small note saved while a big one waits is in the next batch."""
        turn = case(
            (M.file_path.is_(None), 1),
            else_=func.row_number().over(partition_by=M.file_path, order_by=M.id),
        )
        # The ids without a vector first, from the content hash index alone: joining the
        # rows themselves read every whole memory (12-29 s of a start at 1M memories, all
        # of them embedded; 0.8-1.5 s this way).
        unembedded = MEMORIES.alias("unembedded")
        without_vector = select(unembedded.c.id).where(
            ~exists().where(
                EmbeddingRow.content_hash == unembedded.c.content_hash,
                EmbeddingRow.model == model,
                COMPLETE,
            )
        )
        waiting = (
            select(M.content_hash, M.value, M.revision, turn.label("turn"))
            .where(M.id.in_(without_vector))
            .subquery()
        )
        stmt = (
            select(waiting.c.content_hash, func.min(waiting.c.value))
            .group_by(waiting.c.content_hash)
            .order_by(func.min(waiting.c.turn), func.max(waiting.c.revision).desc())
            .limit(limit)
        )
        async with self._engines.reader.connect() as conn:
            return [(row[0], row[1]) for row in await conn.execute(stmt)]

    async def revision(self) -> int:
        """The store's revision: moves with every committed change to memories or vectors."""
        async with self._engines.reader.connect() as conn:
            value = await conn.scalar(
                select(StoreMetaRow.value).where(StoreMetaRow.name == "revision")
            )
            return int(value or 0)

    def commit_count(self) -> int | None:
        """Moves whenever anything was committed to the store (Engines.commit_count); None
        where it cannot be known cheaply."""
        return self._engines.commit_count()

    def index_file_base(self) -> Path | None:
        """Where a persisted vector index of this store lives (beside the SQLite file), or
        None (an in-memory database, PostgreSQL)."""
        reader = self._engines.sync_reader
        database = None if reader is None else reader.url.database
        if not database or database == ":memory:":
            return None
        return Path(database)

    async def rows_page(self, model: str, after_id: int, limit: int) -> tuple[list[IndexRow], int]:
        """Up to `limit` current memories with an id above `after_id`, in id order, with
        their `model` vectors (damaged rows left out), and the last id read (after_id when
        none): a full build of the index reads the store in such pages, never all at once."""
        return await self._engines.read(_rows_page, model, after_id, limit)

    async def vectors_of(
        self, model: str, memory_ids: Sequence[int], vis: Visibility | None = None
    ) -> dict[int, np.ndarray]:
        """The current `model` vector of each of `memory_ids` that has one (a quantised
        index re-scores its best candidates with them); with `vis`, of those it lets
        through only (store/memories_table.py's rule, in the same statement)."""
        if not memory_ids:
            return {}
        return await self._engines.read(_vectors_of, model, list(memory_ids), vis)

    async def changes_since(self, revision: int, model: str) -> IndexDelta:
        """Everything an in-process index at `revision` must apply to catch up, read in one
        snapshot: rows changed since (with their `model` vector, or None while it is
        missing), and the ids deleted since (tombstones, and damaged rows). Every search
        asks, so it takes the engines' quick read path."""
        return await self._engines.read(_changes_since, revision, model)


def _index_columns(model: str | ColumnElement[str]) -> Any:
    return select(
        M.id,
        M.agent_id,
        M.scope,
        M.session_id,
        M.source,
        M.expires_at,
        M.tags,
        EmbeddingRow.vector,
        M.updated_at,
        M.project,
        M.task,
        M.archived_at,
        M.quarantined,
        M.valid_from,
        M.valid_to,
    ).outerjoin(
        EmbeddingRow,
        and_(EmbeddingRow.content_hash == M.content_hash, EmbeddingRow.model == model),
    )


# The statements of every store_memory's vector, built once (store/writes.py says why).
_SAVED = select(EmbeddingRow.content_hash, EmbeddingRow.whole_only).where(
    EmbeddingRow.model == bindparam("model"),
    EmbeddingRow.content_hash.in_(bindparam("digests", expanding=True)),
)
_INSERT_VECTORS = insert(EmbeddingRow)
_BUMP_USERS = (
    update(MEMORIES)
    .where(M.content_hash.in_(bindparam("digests", expanding=True)))
    .values(revision=bindparam("revision"))
)
_HAS_COMPLETE = select(EmbeddingRow.content_hash).where(
    EmbeddingRow.model == bindparam("model"),
    EmbeddingRow.content_hash == bindparam("digest"),
    COMPLETE,
)
_REVISION = select(StoreMetaRow.value).where(StoreMetaRow.name == "revision")
_CHANGED_SINCE = _index_columns(bindparam("model", type_=String)).where(
    M.revision > bindparam("revision")
)
_DELETED_SINCE = select(TombstoneRow.memory_id).where(TombstoneRow.revision > bindparam("revision"))


def _complete(conn: Connection, model: str, digest: str) -> bool:
    return conn.scalar(_HAS_COMPLETE, {"model": model, "digest": digest}) is not None


def _vector_blob(conn: Connection, model: str, digest: str) -> bytes | None:
    found: bytes | None = conn.scalar(
        select(EmbeddingRow.vector).where(
            EmbeddingRow.model == model, EmbeddingRow.content_hash == digest
        )
    )
    return found


def _rows_page(
    conn: Connection, model: str, after_id: int, limit: int
) -> tuple[list[IndexRow], int]:
    rows = conn.execute(_index_columns(model).where(M.id > after_id).order_by(M.id).limit(limit))
    found, last = [], after_id
    for row in rows:
        last = row.id
        entry = index_row(row)
        if entry is not None:
            found.append(entry)
    return found, last


# On a search's path (the re-scoring of a big index's best candidates, ~140 a search): SQL
# text on the driver's cursor, the ids as one JSON array (store/rows_by_id.py says why).
_VECTORS_BY_ID_SQLITE = (
    "SELECT memories.id, embeddings.vector FROM memories JOIN embeddings "
    "ON embeddings.content_hash = memories.content_hash AND embeddings.model = ? "
    "WHERE memories.id IN (SELECT value FROM json_each(?))"
)


def _vectors_of(
    conn: Connection, model: str, memory_ids: list[int], vis: Visibility | None
) -> dict[int, np.ndarray]:
    if conn.dialect.name == "sqlite" and vis is None:
        read = cursor_rows(conn, _VECTORS_BY_ID_SQLITE, (model, json.dumps(memory_ids)))
        return {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in read}
    found: dict[int, np.ndarray] = {}
    for start in range(0, len(memory_ids), IN_CHUNK):
        rows = conn.execute(
            select(M.id, EmbeddingRow.vector)
            .join(
                EmbeddingRow,
                and_(EmbeddingRow.content_hash == M.content_hash, EmbeddingRow.model == model),
            )
            .where(
                M.id.in_(memory_ids[start : start + IN_CHUNK]),
                true() if vis is None else visible_to(vis),
            )
        )
        for memory_id, blob in rows:
            found[memory_id] = np.frombuffer(blob, dtype=np.float32)
    return found


def _changes_since(conn: Connection, revision: int, model: str) -> IndexDelta:
    current = conn.scalar(_REVISION)
    delta = IndexDelta(revision=int(current or 0))
    if delta.revision == revision:
        return delta
    rows = conn.execute(_CHANGED_SINCE, {"model": model, "revision": revision})
    damaged = []
    for row in rows:
        entry = index_row(row)
        if entry is None:
            damaged.append(row.id)
        else:
            delta.upserted.append(entry)
    delta.deleted = damaged + list(conn.scalars(_DELETED_SINCE, {"revision": revision}).all())
    return delta
