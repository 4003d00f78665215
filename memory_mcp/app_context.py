"""What a way in is handed once the app is open (AppContext), and how it asks for one
(AppOpener). app.py builds both; the edges only name them, so they import this module and
the ports it names, not the store, the model or the search pipeline."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from memory_mcp.memory_api import MemoryApi
    from memory_mcp.models import Caller, Scope
    from memory_mcp.notes.paths import NoteFolder, NotePath
    from memory_mcp.notes.reports import FileIndexReport, FileMemory, NoteOutcome, ReconcileReport
    from memory_mcp.oauth_grants import OAuthGrants
    from memory_mcp.permissions import Origin
    from memory_mcp.semantic.embeddings import Embedder
    from memory_mcp.settings import Settings
    from memory_mcp.tokens import AgentTokens


class NoteFiles(Protocol):
    """The memories of one file, as a caller sends its text (the index-note tool)."""

    async def sync_file(
        self,
        caller: Caller,
        scope: Scope,
        file_path: str,
        memories: Sequence[FileMemory],
        modified_at: float,
        *,
        origin: Origin,
    ) -> FileIndexReport: ...


class Notes(Protocol):
    """The memory folders' indexer (notes/indexer.py), as the ways in use it."""

    @property
    def folders(self) -> list[NoteFolder]: ...

    @property
    def files(self) -> NoteFiles: ...

    def locate(self, raw: str | os.PathLike[str], cwd: Path | None = ...) -> NotePath | None: ...

    async def index(self, note: NotePath) -> NoteOutcome: ...

    async def reconcile(self, folder: NoteFolder, under: Path | None = ...) -> ReconcileReport: ...


@dataclass
class AppContext:
    settings: Settings
    service: MemoryApi
    caller: Caller
    notes: Notes
    tokens: AgentTokens  # bearer tokens of the HTTP transports (memory_mcp/tokens.py)
    oauth: OAuthGrants  # OAuth grants of the HTTP transports (memory_mcp/oauth_grants.py)
    # Tool calls worked on at once; the others wait their turn in arrival order.
    turns: anyio.Semaphore = field(default_factory=lambda: anyio.Semaphore(8))


class AppOpener(Protocol):
    """app.open_app's signature: the composition roots (cli/launch.py, the hooks' entry,
    the tests) pass it to the servers, which open the app when they start."""

    def __call__(
        self,
        settings: Settings,
        embedder: Embedder | None = ...,
        background: bool = ...,
        create: bool = ...,
    ) -> AbstractAsyncContextManager[AppContext]: ...
