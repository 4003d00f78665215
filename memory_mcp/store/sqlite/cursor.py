"""SQL text on a SQLite connection's own DB-API cursor: the reads on a search's path.

Through SQLAlchemy a statement costs ~0.1-0.3 ms of Python beyond SQLite's own work
(building it, hashing it for the compiled cache, the execution context, the result): the
keyword arm's four statements took 1.7 ms where SQLite itself spent 0.25 ms (a selective
query at 10k memories), and that Python runs beside the query embedding on the same two
cores. So the search's reads send SQL text, written or compiled once, to the driver's
cursor; on pysqlite its statement cache keeps them prepared. On any other SQLite driver
(aiosqlite, under `run_sync`) the same text goes through `exec_driver_sql`.

The cursor bypasses SQLAlchemy's error hook, so operational failures are translated here
the same way (`errors.store_error`): a busy store still says "retry in a moment"."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from memory_mcp.errors import store_error

if TYPE_CHECKING:
    from typing import TypeAlias

    from sqlalchemy import Connection

    # The connections the search's reads run on (see cursor_rows).
    SqlConnection: TypeAlias = Connection | sqlite3.Connection

Params = Mapping[str, Any] | Sequence[Any]


def cursor_rows(conn: SqlConnection, sql: str, params: Params) -> list[tuple[Any, ...]]:
    """Every row of `sql` (SQLite syntax; `:name` or `?` parameters), as plain tuples. On
    SQLAlchemy's connection, or the standard library's (store/sqlite/stdlib_reads.py: the hooks
    search without importing SQLAlchemy)."""
    cursor: Any
    if isinstance(conn, sqlite3.Connection):
        cursor = conn.cursor()
    elif conn.dialect.driver != "pysqlite":
        return [tuple(row) for row in conn.exec_driver_sql(sql, params)]
    else:
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, params)
        return cast(list[tuple[Any, ...]], cursor.fetchall())
    except sqlite3.OperationalError as exc:
        raise store_error(exc) from exc
    finally:
        cursor.close()
