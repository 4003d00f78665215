"""What a memory was written after: the words that disambiguate it, kept in step.

A memory rarely stands alone. "Yes, I painted it last week" is about the sunrise named in
the memory before it; "A set of blue mugs for my sister" answers "Pottery sounds
relaxing. What are you making first?". So a memory's *context* is the words of the
`CONTEXT_MEMORIES` memories its writer wrote just before it in the same session (the
writer's `Caller.session_id`, whatever the scope: a stdio server process, an MCP session
over HTTP, an import run): the `context` column, a fourth column of the keyword index at
a lower weight (search/pipeline.KEYWORD_COLUMN_WEIGHTS), matched as phrases of their own
(store/fulltext.py, `_PARTS`). Measured on the LoCoMo development split,
leave-one-conversation-out: R@5 / R@10 0.635 / 0.716 -> 0.689 / 0.759 (docs/RETRIEVAL.md,
"write-time context").

The rule, one definition that every write recomputes from what is stored:
- the memories of a session are ordered by when their current version was written
  (`written_order`, the write's revision, then the id: a batch's rows share a revision);
- a memory's context is the values of the `CONTEXT_MEMORIES` memories just before it in
  that order that are at least as widely visible as it (models.seen_wherever: a swarm
  memory borrows only swarm memories' words; a private memory in the window lends
  nothing and is not replaced by an older one) and of the same project and task (a
  memory of another project, or a task's working memory, in the window lends nothing
  either: its words would reach searches that cannot see it);
- notes (file_index) neither lend nor borrow: their order of indexing is the file
  system's (a folder walk at start, the watcher's debounce), not the writer's; a shared
  note is indexed by whichever agent's server reads it first, so its context would
  depend on who that was; and a note's chunk already carries its heading path.

So it is kept exact in the same transaction as the change: a new memory reads the last
few of its session; a rewritten one moves to the end of its (new) session, and the
memories that followed its old place are recomputed without it; a deleted one's
followers likewise (`written_after` before the change, `refresh` after). Nothing of a
deleted memory's words stays in its neighbours' index rows."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, select, tuple_, update
from sqlalchemy.sql import ColumnElement

from memory_mcp.models import NewMemory, Scope, Source, seen_wherever
from memory_mcp.store.rows import MEMORIES, M

# The memories written just before (LOO chose 4 in every fold, of 2-5 and 8).
CONTEXT_MEMORIES = 4
# A context longer than this is cut, keeping the most recent words: the previous memories
# may be long.
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
)
_WHERE = (M.id, M.updated_by, M.written_session, M.written_order, M.source)


def context_text(previous: Sequence[str]) -> str:
    """The previous memories' values, oldest first, as one text of bounded size."""
    text = "\n".join(previous)
    return text[-MAX_CONTEXT_CHARS:] if len(text) > MAX_CONTEXT_CHARS else text


# A memory as a lender: (scope, owner, session), (project, task) and its value.
Lender = tuple[Scope, str, str, tuple[str, str | None], str]


def _lender(row: Any) -> Lender:
    return (Scope(row.scope), row.agent_id, row.session_id, (row.project, row.task), row.value)


def _borrowed(
    window: Iterable[Lender], scope: Scope, owner: str, session: str, where: tuple[str, str | None]
) -> str | None:
    """The context of a memory of (scope, owner, session) in `where` (project, task) after
    the memories of `window`."""
    place = (scope, owner, session)
    values = [
        value
        for lender_scope, lender_owner, lender_session, lender_where, value in window
        if lender_where == where
        and seen_wherever((lender_scope, lender_owner, lender_session), place)
    ]
    return context_text(values) or None


def _session_of(writer: str, session: str) -> tuple[ColumnElement[bool], ...]:
    return (
        M.updated_by == writer,
        M.written_session == session,
        M.source != Source.FILE_INDEX.value,
    )


def _borrows(row: Any) -> bool:
    return (
        bool(row.written_session)
        and row.written_order is not None
        and (row.source != Source.FILE_INDEX.value)
    )


def context_for(conn: Connection, new: NewMemory, owner: str, but: int | None = None) -> str | None:
    """The context of `new` (owned by `owner`), written now: after every memory of its
    session; `but`: its own id when it is being rewritten."""
    if not new.written_session or new.source is Source.FILE_INDEX:
        return None
    stmt = select(*_PLACE).where(*_session_of(new.agent_id, new.written_session))
    if but is not None:
        stmt = stmt.where(M.id != but)
    rows = conn.execute(stmt.order_by(M.written_order.desc(), M.id.desc()).limit(CONTEXT_MEMORIES))
    window = map(_lender, reversed(rows.all()))
    return _borrowed(window, new.scope, owner, new.session_id, (new.project, new.task))


def batch_contexts(conn: Connection, memories: Sequence[NewMemory]) -> list[str | None]:
    """The context of each of `memories`, new ones written now in this order (an import's
    batch): what `refresh` would give them once inserted, computed before, so that each
    row is indexed once, with its context (~2x fewer FTS5 writes on import)."""
    contexts: list[str | None] = [None] * len(memories)
    sessions: dict[tuple[str, str], list[Lender]] = {}
    for index, new in enumerate(memories):
        if not new.written_session or new.source is Source.FILE_INDEX:
            continue
        group = (new.agent_id, new.written_session)
        if group not in sessions:
            rows = conn.execute(
                select(*_PLACE)
                .where(*_session_of(*group))
                .order_by(M.written_order.desc(), M.id.desc())
                .limit(CONTEXT_MEMORIES)
            )
            sessions[group] = [_lender(row) for row in reversed(rows.all())]
        written = sessions[group]
        window = written[-CONTEXT_MEMORIES:]
        where = (new.project, new.task)
        contexts[index] = _borrowed(window, new.scope, new.agent_id, new.session_id, where)
        written.append((new.scope, new.agent_id, new.session_id, where, new.value))
    return contexts


def written_values(new: NewMemory, revision: int, context: str | None) -> dict[str, Any]:
    """The columns that place a version in its writer's session."""
    return {
        "written_session": new.written_session or None,
        "written_order": revision,
        "context": context,
    }


def written_after(conn: Connection, ids: Collection[int]) -> set[int]:
    """The memories whose context may hold words of `ids` (the next CONTEXT_MEMORIES of
    each one's session), `ids` left out: read before `ids` are deleted or moved, and
    given to `refresh` after."""
    followers: set[int] = set()
    wanted = list(ids)
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        rows = conn.execute(select(*_WHERE).where(M.id.in_(chunk)))
        for row in rows:
            if not _borrows(row):
                continue
            after = conn.scalars(
                select(M.id)
                .where(
                    *_session_of(row.updated_by, row.written_session),
                    tuple_(M.written_order, M.id) > tuple_(row.written_order, row.id),
                )
                .order_by(M.written_order, M.id)
                .limit(CONTEXT_MEMORIES)
            )
            followers.update(after)
    return followers - set(ids)


def lenders(conn: Connection, ids: Collection[int]) -> dict[int, list[int]]:
    """The memories whose values make up the context of each of `ids` now, oldest first:
    the window before it in its writer's session, those seen at least as widely (the
    rule `refresh` applies). Search's `explain` names the ones that lent a query's words."""
    found: dict[int, list[int]] = {}
    wanted = list(ids)
    for start in range(0, len(wanted), _IN_CHUNK):
        chunk = wanted[start : start + _IN_CHUNK]
        rows = conn.execute(select(*_WHERE, *_PLACE[1:4]).where(M.id.in_(chunk)))
        for row in rows:
            if not _borrows(row):
                continue
            window = conn.execute(
                select(*_PLACE)
                .where(
                    *_session_of(row.updated_by, row.written_session),
                    tuple_(M.written_order, M.id) < tuple_(row.written_order, row.id),
                )
                .order_by(M.written_order.desc(), M.id.desc())
                .limit(CONTEXT_MEMORIES)
            )
            place = (Scope(row.scope), row.agent_id, row.session_id)
            found[row.id] = [
                lender.id
                for lender in reversed(window.all())
                if seen_wherever((Scope(lender.scope), lender.agent_id, lender.session_id), place)
            ]
    return found


def refresh(conn: Connection, ids: Collection[int]) -> None:
    """Recompute the context of `ids` from what is stored now (those gone are skipped):
    per session, one read of the rows from the window before the first of them to the
    last of them, and one statement for the contexts that changed."""
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
            .limit(CONTEXT_MEMORIES)
        )
        span = conn.execute(
            select(*_PLACE)
            .where(*in_session, place >= tuple_(*first), place <= tuple_(*last))
            .order_by(M.written_order, M.id)
        )
        sequence = [*reversed(before.all()), *span.all()]
        targets = {row.id for row in members}
        for index, row in enumerate(sequence):
            if row.id not in targets:
                continue
            window = sequence[max(0, index - CONTEXT_MEMORIES) : index]
            context = _borrowed(
                map(_lender, window),
                Scope(row.scope),
                row.agent_id,
                row.session_id,
                (row.project, row.task),
            )
            if context != row.context:
                changed.append({"row_id": row.id, "new_context": context})
    if changed:
        conn.execute(
            update(MEMORIES)
            .where(M.id == bindparam("row_id"))
            .values(context=bindparam("new_context")),
            changed,
        )


__all__ = [
    "CONTEXT_MEMORIES",
    "MAX_CONTEXT_CHARS",
    "batch_contexts",
    "context_for",
    "context_text",
    "lenders",
    "refresh",
    "written_after",
    "written_values",
]
