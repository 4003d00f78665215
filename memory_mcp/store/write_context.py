"""What a memory was written among: the words that disambiguate it, kept in step.

A memory rarely stands alone. "Yes, I painted it last week" is about the sunrise named in
the memory before it; "A set of blue mugs for my sister" answers "Pottery sounds
relaxing. What are you making first?"; a user's "the sprint ends March 29" is explained
by the long answer written after it. So a memory's *context* is the words of the
`CONTEXT_BEFORE` memories its writer wrote just before it and the `CONTEXT_AFTER` written
just after it, in the same session (the writer's `Caller.session_id`, whatever the scope:
a stdio server process, an MCP session over HTTP, an import run): the `context` column,
a fourth column of the keyword index at a lower weight (search/pipeline.
KEYWORD_COLUMN_WEIGHTS), matched as phrases of their own (store/sqlite/fts5.py, `_PARTS`).
Measured on three development sets (LoCoMo, REALTALK, BEAM), leave one conversation out
(docs/lab/retrieval-v3.md).

The rule, one definition that every write recomputes from what is stored:
- the memories of a session are ordered by when their current version was written
  (`written_order`, the write's revision, then the id: a batch's rows share a revision);
- a memory's context is the values of the `CONTEXT_BEFORE` memories just before it and
  of the `CONTEXT_AFTER` just after it in that order that are at least as widely visible
  as it (models.seen_wherever: a swarm memory borrows only swarm memories' words; a
  private memory in the window lends nothing and is not replaced by another one) and of
  the same project and task (a memory of another project, or a task's working memory, in
  the window lends nothing either: its words would reach searches that cannot see it);
- notes (file_index) neither lend nor borrow: their order of indexing is the file
  system's (a folder walk at start, the watcher's debounce), not the writer's; a shared
  note is indexed by whichever agent's server reads it first, so its context would
  depend on who that was; and a note's chunk already carries its heading path.

So it is kept exact in the same transaction as the change: a new memory reads the last
few of its session, and the last `CONTEXT_AFTER` before it take its words (`written_last`);
a rewritten one moves to the end of its (new) session, and the memories around its old
place and before its new one are recomputed; a deleted one's neighbours likewise
(`neighbours` before the change, `refresh` after). Nothing of a deleted memory's words
stays in its neighbours' index rows.

Forgetting forgets the same way: a memory that no longer holds — expired, archived (its
task completed) or superseded by a correction (rules/validity.py) — lends nothing either
(`_holds`), and its neighbours are recomputed when it stops holding: at once for an
archive or a correction (the same transaction), and for an expiry, which no write marks,
by the next search or purge (`forget_expired`, one indexed read when nothing expired),
before either arm reads the index."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, String, bindparam, select, tuple_, update
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import NewMemory, Scope, Source, seen_wherever
from memory_mcp.store.memories_table import MEMORIES, M

# The memories written just before and just after (leave one out over the three sets:
# docs/lab/retrieval-v3.md).
CONTEXT_BEFORE = 3
CONTEXT_AFTER = 4
# Which rule the stored contexts were made by (store_meta `context_recipe`): 1, the
# previous 4 (the first rule); 2, the previous 3 and the following 4. A store made by another is
# recomputed once at start (migrations.py).
RECIPE = 2
# Each side of a context longer than this is cut, keeping the words nearest the memory:
# its neighbours may be long.
MAX_CONTEXT_CHARS = 2_000
# Identities per IN (...) list: under SQLite's bound-variable limit.
_IN_CHUNK = 500

_PLACE = (
    M.id,
    M.scope,
    M.agent_id,
    M.session_id,
    M.value,
    M.written_order,
    M.context,
    M.project,
    M.task,
    M.expires_at,
    M.archived_at,
    M.valid_to,
)
_WHERE = (M.id, M.updated_by, M.written_session, M.written_order, M.source)


def context_text(previous: Sequence[str], following: Sequence[str] = ()) -> str:
    """The neighbours' values, oldest first, as one text of bounded size: at most
    MAX_CONTEXT_CHARS of the previous ones (their end) and of the following ones (their
    start)."""
    before = "\n".join(previous)[-MAX_CONTEXT_CHARS:]
    after = "\n".join(following)[:MAX_CONTEXT_CHARS]
    return "\n".join(part for part in (before, after) if part)


# A memory as a lender: (scope, owner, session), (project, task) and its value (None:
# it no longer holds, and lends nothing).
Lender = tuple[Scope, str, str, tuple[str, str | None], str | None]


def _holds(row: Any, now: float) -> bool:
    """Whether a stored memory still holds: not expired (the wall clock, as the purge
    reads it), archived or closed by a correction."""
    return (
        row.archived_at is None
        and row.valid_to is None
        and (row.expires_at is None or row.expires_at > now)
    )


def _lender(row: Any, now: float | None = None) -> Lender:
    held = _holds(row, time.time() if now is None else now)
    value = row.value if held else None
    return (Scope(row.scope), row.agent_id, row.session_id, (row.project, row.task), value)


def _borrowed(
    before: Iterable[Lender],
    scope: Scope,
    owner: str,
    session: str,
    where: tuple[str, str | None],
    after: Iterable[Lender] = (),
) -> str | None:
    """The context of a memory of (scope, owner, session) in `where` (project, task)
    between the memories `before` and `after` it."""
    place = (scope, owner, session)

    def lent(window: Iterable[Lender]) -> list[str]:
        return [
            value
            for lender_scope, lender_owner, lender_session, lender_where, value in window
            if value is not None
            and lender_where == where
            and seen_wherever((lender_scope, lender_owner, lender_session), place)
        ]

    return context_text(lent(before), lent(after)) or None


def _session_of(
    writer: str | ColumnElement[str], session: str | ColumnElement[str]
) -> tuple[ColumnElement[bool], ...]:
    return (
        M.updated_by == writer,
        M.written_session == session,
        M.source != Source.FILE_INDEX.value,
    )


# Built once, as every store_memory runs them (store/writes.py says why that matters).
_LAST_OF_SESSION = (
    select(*_PLACE)
    .where(*_session_of(bindparam("writer", type_=String), bindparam("session", type_=String)))
    .order_by(M.written_order.desc(), M.id.desc())
    .limit(CONTEXT_BEFORE + CONTEXT_AFTER)
)
_SET_CONTEXT = (
    update(MEMORIES).where(M.id == bindparam("row_id")).values(context=bindparam("new_context"))
)


def _borrows(row: Any) -> bool:
    return (
        bool(row.written_session)
        and row.written_order is not None
        and (row.source != Source.FILE_INDEX.value)
    )


def context_for(conn: Connection, new: NewMemory, owner: str, but: int | None = None) -> str | None:
    """The context of `new` (owned by `owner`), written now: after every memory of its
    session, so before none yet; `but`: its own id when it is being rewritten."""
    if not new.written_session or new.source is Source.FILE_INDEX:
        return None
    stmt = select(*_PLACE).where(*_session_of(new.agent_id, new.written_session))
    if but is not None:
        stmt = stmt.where(M.id != but)
    rows = conn.execute(stmt.order_by(M.written_order.desc(), M.id.desc()).limit(CONTEXT_BEFORE))
    window = map(_lender, reversed(rows.all()))
    return _borrowed(window, new.scope, owner, new.session_id, (new.project, new.task))


def written_last(conn: Connection, new: NewMemory) -> tuple[str | None, list[dict[str, Any]]]:
    """The context of `new`, a memory written now (after every memory of its session, so
    before none yet), and the contexts the CONTEXT_AFTER memories before it take with its
    words, for `store_contexts` once it is inserted: one read of the session's last
    CONTEXT_BEFORE + CONTEXT_AFTER memories, where `neighbours` then `refresh` cost eight
    (what every `store_memory` pays)."""
    if not new.written_session or new.source is Source.FILE_INDEX:
        return None, []
    rows = list(
        conn.execute(_LAST_OF_SESSION, {"writer": new.agent_id, "session": new.written_session})
    )
    rows.reverse()
    sequence = [*map(_lender, rows), _new_lender(new)]
    at = len(rows)
    context = _borrowed(
        sequence[max(0, at - CONTEXT_BEFORE) : at],
        new.scope,
        new.agent_id,
        new.session_id,
        (new.project, new.task),
    )
    changed: list[dict[str, Any]] = []
    for index in range(max(0, at - CONTEXT_AFTER), at):
        row = rows[index]
        updated = _borrowed(
            sequence[max(0, index - CONTEXT_BEFORE) : index],
            Scope(row.scope),
            row.agent_id,
            row.session_id,
            (row.project, row.task),
            sequence[index + 1 : index + 1 + CONTEXT_AFTER],
        )
        if updated != row.context:
            changed.append({"row_id": row.id, "new_context": updated})
    return context, changed


def store_contexts(conn: Connection, changed: list[dict[str, Any]]) -> None:
    """Write the contexts `written_last` or `refresh` computed ({row_id, new_context})."""
    if changed:
        conn.execute(_SET_CONTEXT, changed)


def batch_contexts(
    conn: Connection, memories: Sequence[NewMemory]
) -> tuple[list[str | None], list[int]]:
    """The context of each of `memories`, new ones written now in this order (an import's
    batch), and the stored memories that lend to none of them yet but will borrow from
    them (the last CONTEXT_AFTER of each session): what `refresh` would give the batch
    once inserted, computed before, so that each row is indexed once, with its context
    (~2x fewer FTS5 writes on import). `refresh` the returned ids after the insert."""
    contexts: list[str | None] = [None] * len(memories)
    stored: dict[tuple[str, str], list[Any]] = {}
    members: dict[tuple[str, str], list[int]] = {}
    for index, new in enumerate(memories):
        if not new.written_session or new.source is Source.FILE_INDEX:
            continue
        group = (new.agent_id, new.written_session)
        if group not in stored:
            rows = conn.execute(
                select(*_PLACE)
                .where(*_session_of(*group))
                .order_by(M.written_order.desc(), M.id.desc())
                .limit(max(CONTEXT_BEFORE, CONTEXT_AFTER))
            )
            stored[group] = list(reversed(rows.all()))
        members.setdefault(group, []).append(index)
    before_batch: list[int] = []
    for group, indexes in members.items():
        sequence = [_lender(row) for row in stored[group]]
        first = len(sequence)
        sequence += [_new_lender(memories[i]) for i in indexes]
        for offset, index in enumerate(indexes):
            at = first + offset
            new = memories[index]
            contexts[index] = _borrowed(
                sequence[max(0, at - CONTEXT_BEFORE) : at],
                new.scope,
                new.agent_id,
                new.session_id,
                (new.project, new.task),
                sequence[at + 1 : at + 1 + CONTEXT_AFTER],
            )
        if CONTEXT_AFTER:
            before_batch += [row.id for row in stored[group][-CONTEXT_AFTER:]]
    return contexts, before_batch


def _new_lender(new: NewMemory) -> Lender:
    return (new.scope, new.agent_id, new.session_id, (new.project, new.task), new.value)


def written_values(new: NewMemory, revision: int, context: str | None) -> dict[str, Any]:
    """The columns that place a version in its writer's session."""
    return {
        "written_session": new.written_session or None,
        "written_order": revision,
        "context": context,
    }


def neighbours(conn: Connection, ids: Collection[int]) -> set[int]:
    """The memories whose context may hold words of `ids` (the next CONTEXT_BEFORE and
    the previous CONTEXT_AFTER of each one's session), `ids` left out: read before `ids`
    are deleted or moved, and given to `refresh` after; or after a memory is written, for
    those before it that now borrow its words."""
    found: set[int] = set()
    wanted = list(ids)
    place = tuple_(M.written_order, M.id)
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        rows = conn.execute(select(*_WHERE).where(M.id.in_(chunk)))
        for row in rows:
            if not _borrows(row):
                continue
            in_session = _session_of(row.updated_by, row.written_session)
            here = tuple_(row.written_order, row.id)
            if CONTEXT_BEFORE:
                found.update(
                    conn.scalars(
                        select(M.id)
                        .where(*in_session, place > here)
                        .order_by(M.written_order, M.id)
                        .limit(CONTEXT_BEFORE)
                    )
                )
            if CONTEXT_AFTER:
                found.update(
                    conn.scalars(
                        select(M.id)
                        .where(*in_session, place < here)
                        .order_by(M.written_order.desc(), M.id.desc())
                        .limit(CONTEXT_AFTER)
                    )
                )
    return found - set(ids)


def lenders(conn: Connection, ids: Collection[int]) -> dict[int, list[int]]:
    """The memories whose values make up the context of each of `ids` now, in session
    order: the CONTEXT_BEFORE before it and the CONTEXT_AFTER after it in its writer's
    session, those seen at least as widely (the rule `refresh` applies). Search's
    `explain` names the ones that lent a query's words."""
    found: dict[int, list[int]] = {}
    wanted = list(ids)
    place = tuple_(M.written_order, M.id)
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        rows = conn.execute(select(*_WHERE, *_PLACE[1:4], M.project, M.task).where(M.id.in_(chunk)))
        for row in rows:
            if not _borrows(row):
                continue
            in_session = _session_of(row.updated_by, row.written_session)
            here = tuple_(row.written_order, row.id)
            before = conn.execute(
                select(*_PLACE)
                .where(*in_session, place < here)
                .order_by(M.written_order.desc(), M.id.desc())
                .limit(CONTEXT_BEFORE)
            )
            after = conn.execute(
                select(*_PLACE)
                .where(*in_session, place > here)
                .order_by(M.written_order, M.id)
                .limit(CONTEXT_AFTER)
            )
            where = (Scope(row.scope), row.agent_id, row.session_id)
            found[row.id] = [
                lender.id
                for lender in [*reversed(before.all()), *after.all()]
                if (lender.project, lender.task) == (row.project, row.task)
                and _holds(lender, time.time())
                and seen_wherever((Scope(lender.scope), lender.agent_id, lender.session_id), where)
            ]
    return found


def refresh(conn: Connection, ids: Collection[int]) -> None:
    """Recompute the context of `ids` from what is stored now (those gone are skipped):
    per session, one read of the rows from the window before the first of them to the
    window after the last of them, and one statement for the contexts that changed."""
    wanted = list(ids)
    groups: dict[tuple[str, str], list[Any]] = {}
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        rows = conn.execute(select(*_WHERE).where(M.id.in_(chunk)))
        for row in rows:
            if _borrows(row):
                groups.setdefault((row.updated_by, row.written_session), []).append(row)
    changed: list[dict[str, Any]] = []
    for (writer, session), members in groups.items():
        place = tuple_(M.written_order, M.id)
        first = min((row.written_order, row.id) for row in members)
        last = max((row.written_order, row.id) for row in members)
        in_session = _session_of(writer, session)
        before = conn.execute(
            select(*_PLACE)
            .where(*in_session, place < tuple_(*first))
            .order_by(M.written_order.desc(), M.id.desc())
            .limit(CONTEXT_BEFORE)
        )
        span = conn.execute(
            select(*_PLACE)
            .where(*in_session, place >= tuple_(*first), place <= tuple_(*last))
            .order_by(M.written_order, M.id)
        )
        after = conn.execute(
            select(*_PLACE)
            .where(*in_session, place > tuple_(*last))
            .order_by(M.written_order, M.id)
            .limit(CONTEXT_AFTER)
        )
        sequence = [*reversed(before.all()), *span.all(), *after.all()]
        targets = {row.id for row in members}
        for index, row in enumerate(sequence):
            if row.id not in targets:
                continue
            context = _borrowed(
                map(_lender, sequence[max(0, index - CONTEXT_BEFORE) : index]),
                Scope(row.scope),
                row.agent_id,
                row.session_id,
                (row.project, row.task),
                map(_lender, sequence[index + 1 : index + 1 + CONTEXT_AFTER]),
            )
            if context != row.context:
                changed.append({"row_id": row.id, "new_context": context})
    store_contexts(conn, changed)


def forget_expired(conn: Connection, now: float) -> int:
    """Take the words of the memories expired by `now` (not purged yet) back from their
    neighbours' contexts, once: each leaves its writer's session (`written_session`
    NULL, what marks it done), so the next call finds nothing and costs one indexed
    read. How many memories it took words from."""
    ids = list(
        conn.scalars(
            select(M.id).where(
                M.expires_at <= now,
                M.written_session.is_not(None),
                M.source != Source.FILE_INDEX.value,
            )
        )
    )
    if not ids:
        return 0
    around = neighbours(conn, ids)
    for start in range(0, len(ids), _IN_CHUNK):
        conn.execute(
            update(MEMORIES)
            .where(M.id.in_(ids[start : start + _IN_CHUNK]))
            .values(written_session=None)
        )
    refresh(conn, around)
    return len(ids)


def refresh_all(conn: Connection) -> int:
    """Recompute every context (a store made by another RECIPE): how many memories
    borrow."""
    ids = list(
        conn.scalars(
            select(M.id).where(
                M.written_session.is_not(None),
                M.written_order.is_not(None),
                M.source != Source.FILE_INDEX.value,
            )
        )
    )
    refresh(conn, ids)
    return len(ids)


__all__ = [
    "CONTEXT_AFTER",
    "CONTEXT_BEFORE",
    "MAX_CONTEXT_CHARS",
    "RECIPE",
    "batch_contexts",
    "context_for",
    "context_text",
    "forget_expired",
    "lenders",
    "neighbours",
    "refresh",
    "refresh_all",
    "store_contexts",
    "written_last",
    "written_values",
]
