"""Statements that run inside a write transaction opened by MemoryStore (synchronous: a
store on a SQLite file runs them in one worker-thread trip, Engines.run_write; async
callers hand them to `AsyncConnection.run_sync`).

Over 500 lines: every write a memory takes (insert, update, archive, place, delete) is
here, so what one transaction does to the tables is read in one module."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, bindparam, delete, insert, select, text, update

from memory_mcp.errors import (
    InvalidInputError,
    KeyNotFoundError,
    PermissionDeniedError,
    VersionConflictError,
)
from memory_mcp.models import (
    BatchItem,
    BatchOutcome,
    Caps,
    MemoryRecord,
    NewMemory,
    Scope,
    Source,
    UpsertOutcome,
    memory_identity,
)
from memory_mcp.store import write_context
from memory_mcp.store.access_counts import PendingAccess
from memory_mcp.store.eviction import evict_over_caps
from memory_mcp.store.memories_table import (
    IN_CHUNK,
    MEMORIES,
    M,
    content_hash,
    next_revision,
    record_from_row,
)
from memory_mcp.store.record_columns import ACCESS_SQL
from memory_mcp.store.schema import (
    MemoryHistoryRow,
    MemoryLinkRow,
    MemoryTagRow,
    TombstoneRow,
)

LINKS = cast(Table, MemoryLinkRow.__table__)


NO_CAPS = Caps()

# The statements every store_memory runs, built once with their values as parameters:
# SQLAlchemy finds a statement's compiled SQL by a key it computes once per statement
# object, where a statement built per call (`.values(**row)`, `.where(M.id == 5)`) is
# walked again for it, most of a store's Python time in its transaction.
_BY_IDENTITY = select(MEMORIES).where(M.identity == bindparam("identity")).with_for_update()
_INSERT_MEMORY = insert(MEMORIES).returning(M.id)
_BY_ID = select(MEMORIES).where(M.id == bindparam("memory_id"))
_INSERT_TAGS = insert(MemoryTagRow)


def content_values(new: NewMemory) -> dict[str, Any]:
    """The columns a write sets from its content, on insert and update alike."""
    return {
        "key": new.key,
        "value": new.value,
        "source": new.source.value,
        "tags": json.dumps(new.tags),
        "metadata": json.dumps(new.metadata, sort_keys=True),
        "flags": json.dumps(new.flags),
        "confidence": new.confidence,
        "pinned": new.pinned,
        "content_hash": content_hash(new.value),
        "expires_at": new.expires_at,
        "file_path": new.file_path,
        "about_agent": new.about_agent,
        "project": new.project,
        "task": new.task,
        # Stored again after its task was completed: a working memory again (unless an
        # import brings it archived).
        "archived_at": new.archived_at,
        "value_json": new.value_json,
        "kind": new.kind,
        # Each write decides it anew: a trusted rewrite releases it, an untrusted one holds it.
        "quarantined": new.quarantined,
    }


def update_values(new: NewMemory, row: Any) -> dict[str, Any]:
    """The columns an update of `row` sets: `new`'s content, but the columns it was not
    given (`new.kept`) as `row` has them (read under the write lock)."""
    values = content_values(new)
    for name in new.kept:
        values[name] = getattr(row, name)
    return values


def is_unchanged(row: Any, values: dict[str, Any]) -> bool:
    return all(getattr(row, name) == value for name, value in values.items())


def _first_version(
    new: NewMemory, now: float, revision: int, context: str | None
) -> dict[str, Any]:
    """The row of a memory's first version, written at `now` (one insert or a batch's)."""
    return {
        "identity": new.identity,
        "scope": new.scope.value,
        "agent_id": new.agent_id,
        "session_id": new.session_id,
        "updated_by": new.agent_id,
        "version": 1,
        "created_at": now,
        "updated_at": now,
        "last_used_at": now,
        "access_count": 0,
        "revision": revision,
        "valid_from": now if new.valid_from is None else new.valid_from,
        "valid_to": new.valid_to,
        **content_values(new),
        **write_context.written_values(new, revision, context),
    }


def insert_new(
    conn: Connection, items: Sequence[tuple[NewMemory, float]], revision: int
) -> dict[str, int]:
    """Insert memories whose identities are not stored yet (with their tags) in a few
    statements, each at its own write time: the id of each identity. In this order, each
    after the ones before it in its session (store/write_context.py)."""
    contexts, lenders_before = write_context.batch_contexts(conn, [new for new, _ in items])
    conn.execute(
        insert(MEMORIES),
        [
            _first_version(new, now, revision, context)
            for (new, now), context in zip(items, contexts, strict=True)
        ],
    )
    write_context.refresh(conn, lenders_before)  # now followed by the batch's first
    ids = ids_of(conn, [new.identity for new, _ in items])
    tags = [{"memory_id": ids[new.identity], "tag": t} for new, _ in items for t in set(new.tags)]
    if tags:
        conn.execute(insert(MemoryTagRow), tags)
    return ids


def ids_of(conn: Connection, identities: Sequence[str]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for start in range(0, len(identities), IN_CHUNK):
        chunk = list(identities[start : start + IN_CHUNK])
        rows = conn.execute(select(M.identity, M.id).where(M.identity.in_(chunk)))
        ids.update({row[0]: row[1] for row in rows})
    return ids


def insert_memory(
    conn: Connection, new: NewMemory, expected_version: int | None, now: float, cap: Caps
) -> UpsertOutcome:
    """The insert half of MemoryStore.upsert: no row has `new.identity` yet."""
    if expected_version not in (None, 0):
        raise KeyNotFoundError(new.key, expected_version)
    revision = next_revision(conn)
    # The last CONTEXT_AFTER before it take its words into their context
    # (store/write_context.py).
    context, followed = write_context.written_last(conn, new)
    result = conn.execute(_INSERT_MEMORY, _first_version(new, now, revision, context))
    memory_id = result.scalar_one()
    write_context.store_contexts(conn, followed)
    write_tags(conn, memory_id, new.tags)
    evicted = (
        []
        if new.source is Source.FILE_INDEX
        else evict_over_caps(conn, new.agent_id, new.project, cap, memory_id, revision, now)
    )
    record = fetch(conn, memory_id)
    return UpsertOutcome(record=record, created=True, changed=True, evicted_ids=evicted)


def update_memory(
    conn: Connection,
    existing: Any,
    new: NewMemory,
    expected_version: int | None,
    now: float,
    may_overwrite_others: bool,
    take_over: bool = False,
    cap: Caps = NO_CAPS,
) -> UpsertOutcome:
    """The update half of MemoryStore.upsert: `existing` is the row with `new.identity`,
    read under the write lock, so the ownership and version checks see what is stored.
    `take_over`: the writer becomes the owner (a new version even if the content is the
    same), and the memory counts toward its cap from now on."""
    another_owner = existing.agent_id != new.agent_id
    if another_owner and not may_overwrite_others:
        raise PermissionDeniedError(
            f"memory {existing.id} ({new.key!r}) is a {existing.scope} memory of agent "
            f"{existing.agent_id!r}; only its owner or the lead may update it "
            f"(store it under another key to keep your own version)"
        )
    if expected_version is not None and expected_version != existing.version:
        raise VersionConflictError(new.key, expected_version, existing.version)
    values = update_values(new, existing)
    taking_over = take_over and another_owner
    if is_unchanged(existing, values) and not taking_over:
        return UpsertOutcome(record=record_from_row(existing), created=False, changed=False)
    if taking_over:
        values["agent_id"] = new.agent_id
    if new.valid_from is not None:
        values["valid_from"] = new.valid_from
    if new.valid_to is not None:  # an import of a memory a correction had closed
        values["valid_to"] = new.valid_to
    elif existing.valid_to is not None:  # stated again, changed: it holds again
        values.update(valid_to=None, superseded_by=None)
    revision = next_revision(conn)
    # The new version is written now, at the end of its session: those around the old
    # one lose its words, those before the new place gain them (store/write_context.py).
    around = write_context.neighbours(conn, [existing.id])
    owner = values.get("agent_id", existing.agent_id)
    context = write_context.context_for(conn, new, owner, but=existing.id)
    keep_version(conn, existing, now)
    conn.execute(
        update(MEMORIES)
        .where(M.id == existing.id)
        .values(
            version=existing.version + 1,
            updated_by=new.agent_id,
            updated_at=now,
            last_used_at=now,
            revision=revision,
            **values,
            **write_context.written_values(new, revision, context),
        )
    )
    write_context.refresh(conn, around | write_context.neighbours(conn, [existing.id]))
    if values["tags"] != existing.tags:
        conn.execute(delete(MemoryTagRow).where(MemoryTagRow.memory_id == existing.id))
        write_tags(conn, existing.id, new.tags)
    # Counted from now on: a memory that changed owner, or an archived one stored again.
    reviving = existing.archived_at is not None and values["archived_at"] is None
    evicted = (
        evict_over_caps(conn, new.agent_id, new.project, cap, existing.id, revision, now)
        if (taking_over or reviving) and new.source is not Source.FILE_INDEX
        else []
    )
    record = fetch(conn, existing.id)
    return UpsertOutcome(
        record=record,
        created=False,
        changed=True,
        evicted_ids=evicted,
        taken_over_from=existing.agent_id if taking_over else None,
    )


def fetch(conn: Connection, memory_id: int) -> MemoryRecord:
    row = conn.execute(_BY_ID, {"memory_id": memory_id}).one()
    return record_from_row(row)


def write_tags(conn: Connection, memory_id: int, tags: list[str]) -> None:
    if tags:
        conn.execute(_INSERT_TAGS, [{"memory_id": memory_id, "tag": t} for t in set(tags)])


def forget_links(conn: Connection, memory_ids: list[int], now: float) -> None:
    """Inside a delete of `memory_ids`: their own links go with them (a memory's history
    goes with it), and links into them from other memories are removed but kept as
    history (removed_by NULL: their target was deleted)."""
    conn.execute(delete(LINKS).where(LINKS.c.source_id.in_(memory_ids)))
    conn.execute(
        update(LINKS)
        .where(LINKS.c.target_id.in_(memory_ids), LINKS.c.removed_at.is_(None))
        .values(removed_at=now, removed_by=None)
    )


def delete_ids(conn: Connection, ids: list[int], revision: int, now: float | None = None) -> int:
    """Delete from every index at once: rows, tags, history, links (FTS by trigger), and
    tombstone them so every process's vector index drops them too. Links into them from
    other memories are removed, kept as those memories' link history (at `now`). The
    memories that borrowed their words (store/write_context.py) are recomputed without them."""
    around = write_context.neighbours(conn, ids)
    forget_links(conn, ids, time.time() if now is None else now)
    conn.execute(delete(MemoryTagRow).where(MemoryTagRow.memory_id.in_(ids)))
    conn.execute(delete(MemoryHistoryRow).where(MemoryHistoryRow.memory_id.in_(ids)))
    result = conn.execute(delete(MEMORIES).where(M.id.in_(ids)))
    conn.execute(insert(TombstoneRow), [{"memory_id": i, "revision": revision} for i in ids])
    write_context.refresh(conn, around)
    return int(result.rowcount or 0)


# Which project and task a placement keeps as they are.
KEEP = object()


def place(
    conn: Connection,
    ids: list[int],
    project: Any,
    task: Any,
    field: str,
    revision: int,
    moved_by: str | None = None,
    now: float | None = None,
) -> list[int]:
    """Move the memories `ids` to `project` and/or `task` (KEEP: as they are), in place:
    the same ids, history and links (a link into one follows its project).
    Each takes the identity it would have been stored with there; if another memory holds
    one of those already, nothing moves and InvalidInputError names `field` and the keys.
    A task's placement is no new version (the content is the same). A move to another
    project by `moved_by` is one, at `now`: its history keeps the version before and the
    new one's metadata says where it came from (`moved_from`), so a move is never silent.
    The revision moves, so every process's vector index sees it, and the write-time
    context follows it."""
    rows = _rows_of(conn, ids)
    moving = {row.id for row in rows}
    wanted, clashes = _places(conn, rows, project, task)
    if clashes:
        keys = ", ".join(repr(key) for key in sorted(set(clashes))[:20])
        raise InvalidInputError(field, f"a memory there has the same key already: {keys}")
    # Its neighbours on both sides lend to it and borrow from it (store/write_context.py).
    around = write_context.neighbours(conn, moving)
    # Identities are unique: clear the moving rows' first, so two of them may swap.
    for row in rows:
        conn.execute(update(MEMORIES).where(M.id == row.id).values(identity=f"moving\x1f{row.id}"))
    for identity, (row, new_project, new_task) in wanted.items():
        values: dict[str, Any] = {
            "identity": identity,
            "project": new_project,
            "task": new_task,
            "revision": revision,
        }
        if new_project != row.project:
            if moved_by is not None:
                values |= _moved_version(conn, row, moved_by, now or time.time())
            conn.execute(
                update(LINKS).where(LINKS.c.target_id == row.id).values(target_project=new_project)
            )
        conn.execute(update(MEMORIES).where(M.id == row.id).values(**values))
    write_context.refresh(conn, around | moving)
    return sorted(moving)


def place_clashes(conn: Connection, ids: list[int], project: Any, task: Any) -> list[str]:
    """The keys of `ids` that `place` would refuse to move (read only): a move in batches
    checks them all before its first batch."""
    clashes: list[str] = []
    for start in range(0, len(ids), IN_CHUNK):
        rows = _rows_of(conn, ids[start : start + IN_CHUNK])
        clashes += _places(conn, rows, project, task, set(ids))[1]
    return clashes


def _rows_of(conn: Connection, ids: list[int]) -> list[Any]:
    rows: list[Any] = []
    for start in range(0, len(ids), IN_CHUNK):
        rows += conn.execute(select(MEMORIES).where(M.id.in_(ids[start : start + IN_CHUNK]))).all()
    return rows


def _places(
    conn: Connection, rows: list[Any], project: Any, task: Any, moving: set[int] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Where each row goes ({identity: (row, project, task)}) and the keys that clash
    there, with one another or with a memory not among `moving` (default: the rows)."""
    moving = {row.id for row in rows} if moving is None else moving
    wanted: dict[str, Any] = {}
    clashes: list[str] = []
    for row in rows:
        new_project = row.project if project is KEEP else project
        new_task = row.task if task is KEEP else task
        identity = memory_identity(
            row.key, Scope(row.scope), row.agent_id, row.session_id, new_project, new_task
        )
        if identity in wanted:
            clashes.append(row.key)
        wanted[identity] = (row, new_project, new_task)
    held = ids_of(conn, list(wanted))
    clashes += [wanted[i][0].key for i, memory_id in held.items() if memory_id not in moving]
    return wanted, clashes


def _moved_version(conn: Connection, row: Any, moved_by: str, now: float) -> dict[str, Any]:
    """A move's new version: the one before kept in the history, the new one's metadata
    naming the project it came from (and when), written by `moved_by`."""
    keep_version(conn, row, now)
    try:
        metadata = json.loads(row.metadata or "{}")
    except ValueError:
        metadata = {}
    if not isinstance(metadata, dict):
        metadata = {}
    metadata |= {"moved_from": row.project, "moved_at": now}
    return {
        "version": row.version + 1,
        "updated_by": moved_by,
        "updated_at": now,
        "metadata": json.dumps(metadata, sort_keys=True),
    }


def archive(conn: Connection, ids: list[int], now: float | None, revision: int) -> None:
    """Archive the memories `ids` (a completed task's): kept, found only when asked for,
    and their words leave their neighbours' contexts now (store/write_context.py); `now`
    None: working memories again, the task opened again."""
    for start in range(0, len(ids), IN_CHUNK):
        conn.execute(
            update(MEMORIES)
            .where(M.id.in_(ids[start : start + IN_CHUNK]))
            .values(archived_at=now, revision=revision)
        )
    write_context.refresh(conn, write_context.neighbours(conn, ids))


def keep_version(conn: Connection, row: Any, now: float) -> None:
    """Keep `row`'s current version in the history before a write replaces it at `now`
    (an update, a move to another project, a move to another scope)."""
    conn.execute(
        insert(MemoryHistoryRow).values(
            memory_id=row.id,
            version=row.version,
            value=row.value,
            tags=row.tags,
            meta=row.metadata,
            source=row.source,
            replaced_at=now,
            updated_by=row.updated_by or row.agent_id,
            value_json=row.value_json,
        )
    )


def upsert_row(
    conn: Connection,
    new: NewMemory,
    expected_version: int | None,
    now: float,
    cap: Caps,
    may_overwrite_others: bool,
    take_over: bool = False,
) -> UpsertOutcome:
    """Read the row by identity, locked for this transaction, then insert or update."""
    existing = conn.execute(_BY_IDENTITY, {"identity": new.identity}).first()
    if existing is None:
        return insert_memory(conn, new, expected_version, now, cap)
    return update_memory(
        conn, existing, new, expected_version, now, may_overwrite_others, take_over, cap
    )


def write_accesses(conn: Connection, reads: dict[int, PendingAccess]) -> None:
    """access_count, last_accessed_at and the LRU clock of the memories read since the
    last write (store/access_counts.py), in record_columns.py's SQL
    (store/sqlite/stdlib_reads.py runs it too). No revision: search is unaffected."""
    if reads:
        conn.execute(
            text(ACCESS_SQL),
            [{"id": i, "count": entry.count, "last": entry.last} for i, entry in reads.items()],
        )


def upsert_batch(
    conn: Connection, reads: dict[int, PendingAccess], items: Sequence[BatchItem], cap: Caps
) -> BatchOutcome:
    """MemoryStore.upsert_many's transaction: the counted reads, then the batch."""
    write_accesses(conn, reads)
    outcome = BatchOutcome()
    identities = list(dict.fromkeys(item.memory.identity for item in items))
    stored: dict[str, Any] = {}
    for start in range(0, len(identities), IN_CHUNK):
        chunk = identities[start : start + IN_CHUNK]
        for found in conn.execute(select(MEMORIES).where(M.identity.in_(chunk))):
            stored[found.identity] = found
    fresh: list[BatchItem] = []
    one_by_one: list[tuple[int, BatchItem]] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        new, row = item.memory, stored.get(item.memory.identity)
        if new.identity in seen:
            one_by_one.append((index, item))  # after the first of its key is written
        elif row is None:
            fresh.append(item)
        elif (row.agent_id == new.agent_id or item.may_overwrite_others) and is_unchanged(
            row, update_values(new, row)
        ):
            outcome.unchanged += 1
        else:
            one_by_one.append((index, item))
        seen.add(new.identity)
    if fresh:
        revision = next_revision(conn)
        ids = insert_new(conn, [(i.memory, i.now) for i in fresh], revision)
        outcome.created += len(fresh)
        newest: dict[tuple[str, str], tuple[int, float]] = {}
        for item in fresh:
            if item.memory.source is not Source.FILE_INDEX:  # notes are not counted
                place = (item.memory.agent_id, item.memory.project)
                newest[place] = max(
                    newest.get(place, (0, 0.0)), (ids[item.memory.identity], item.now)
                )
        for (agent, project), (keep_id, at) in sorted(newest.items()):
            outcome.evicted_ids += evict_over_caps(conn, agent, project, cap, keep_id, revision, at)
    for index, item in one_by_one:
        try:
            result = upsert_row(conn, item.memory, None, item.now, cap, item.may_overwrite_others)
        except PermissionDeniedError as exc:  # raised before anything is written
            outcome.refused.append((index, str(exc)))
            continue
        outcome.evicted_ids += result.evicted_ids
        if result.created:
            outcome.created += 1
        elif result.changed:
            outcome.updated += 1
        else:
            outcome.unchanged += 1
    return outcome
