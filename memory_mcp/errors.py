"""The project's exceptions. The edges translate them: MCP into tool errors, CLI into exit codes.
The database's own failures become them at the source (`store_error`)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# How SQLite says that another writer holds the lock (its driver's text).
BUSY_MARKERS = ("database is locked", "database table is locked", "database is busy")


class MemoryMcpError(Exception):
    """Base of every error this project raises on purpose."""


class InvalidInputError(MemoryMcpError):
    """An argument is malformed; `field` names it so the caller can fix it."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"invalid {field}: {problem}")


class NotFoundError(MemoryMcpError):
    """Nothing the caller may see matches (it may exist for someone else)."""


class MemoryNotFoundError(NotFoundError):
    """No memory with this id is visible to the caller: the same answer whether it is
    missing or someone else's (existence is private)."""

    def __init__(self, memory_id: int) -> None:
        self.memory_id = memory_id
        super().__init__(f"memory {memory_id} not found (no memory with this id is visible to you)")


class KeyNotFoundError(NotFoundError):
    """An update at a version (expected_version > 0) of a key that holds no memory."""

    def __init__(self, key: str, expected_version: int) -> None:
        self.key = key
        self.expected_version = expected_version
        super().__init__(
            f"memory with key {key!r} not found, so it cannot be updated at version "
            f"{expected_version}; to create it, use expected_version 0 or leave it out"
        )


class PermissionDeniedError(MemoryMcpError):
    """The caller may see the memory but not do this to it."""


class VersionConflictError(MemoryMcpError):
    """An optimistic update named a version that is no longer current."""

    def __init__(self, key: str, expected: int, current: int) -> None:
        self.key = key
        self.expected = expected
        self.current = current
        super().__init__(
            f"version conflict on key {key!r}: expected version {expected}, "
            f"current version is {current}; read it again and retry"
        )


class StoreUnavailableError(MemoryMcpError):
    """The database cannot be opened or is not a memory store."""


class StoreMissingError(StoreUnavailableError):
    """A command that only reads found no store: it never creates one."""


class StoreBusyError(MemoryMcpError):
    """Other writers held the store for longer than we wait. Nothing was written; the same
    call a moment later can succeed."""

    def __init__(self) -> None:
        super().__init__(
            "the memory store is busy (other processes are writing to it); "
            "nothing was changed; retry in a moment"
        )


class DamagedMemoryError(MemoryMcpError):
    """A stored row holds a value no valid write could have produced (edited by hand, or
    written by an older version). Readers skip it; reading it by id says so."""

    def __init__(self, memory_id: int, problem: str) -> None:
        self.memory_id = memory_id
        self.problem = problem
        super().__init__(
            f"memory {memory_id} cannot be read: its stored data is damaged ({problem}); "
            "the store skips it everywhere else"
        )


class CapExceededError(MemoryMcpError):
    """An agent's cap on memories leaves no room: every memory it could evict is pinned,
    or an import would push it over (and so evict memories)."""


class EmbeddingUnavailableError(MemoryMcpError):
    """The embedding model could not be loaded; keyword search still works."""


def store_error(failure: BaseException) -> StoreBusyError | StoreUnavailableError:
    """The project's error for an operational failure of the database (the driver's
    exception): busy, retry in a moment; or the file failed."""
    text = str(failure).lower()
    if any(marker in text for marker in BUSY_MARKERS):
        log.warning("store busy: %s", failure)
        return StoreBusyError()
    log.error("store failure: %s", failure)
    return StoreUnavailableError(
        "the memory store cannot be read or written right now (the database file failed; "
        "details are in the server log); retrying may not help"
    )
