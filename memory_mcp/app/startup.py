"""Where the store lives, checked before anything heavy is imported: the server answers the
MCP handshake before it opens the store (app/background.py), so a wrong `--db` must be caught
here, at start, with a clear message rather than later in every tool call."""

from __future__ import annotations

import sqlite3

from memory_mcp.errors import InvalidInputError, StoreMissingError, StoreUnavailableError
from memory_mcp.settings import Settings


def prepare_store_location(settings: Settings, create: bool) -> None:
    """Only the default location is created silently. A --db whose folder is missing is a
    typo until proven otherwise, and a command that only reads (`create=False`) never
    creates a store: it reports that there is none."""
    path = settings.database_file
    if path is None or path.exists():
        return
    if not create:
        raise StoreMissingError(f"no memory store at {path} (nothing has been stored there)")
    if path.parent.is_dir():
        return
    if settings.db is not None:
        raise InvalidInputError(
            "db", f"the folder {path.parent} does not exist; create it or fix the path"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInputError("db", f"cannot create {path.parent}: {exc.strerror}") from exc


def check_store_opens(settings: Settings) -> None:
    """What `serve` checks before answering anyone, in milliseconds and without importing
    SQLAlchemy: the location (as above) and, for an existing file, that SQLite can read its
    header. Reading only: nothing is created or changed here (the store is opened, and
    migrated, right after the handshake)."""
    prepare_store_location(settings, create=True)
    path = settings.database_file
    if path is None or not path.exists():
        return
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            conn.execute("PRAGMA schema_version").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreUnavailableError(f"cannot open the memory store {path}: {exc}") from exc
