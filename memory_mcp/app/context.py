"""What a way in is handed once the app is open (AppContext), and how it asks for one
(AppOpener). app/root.py builds it; the edges name its parts' types under TYPE_CHECKING
only, so importing this module loads neither the store, the model nor the search."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

if TYPE_CHECKING:
    from memory_mcp.auth.oauth import OAuthGrants
    from memory_mcp.auth.tokens import AgentTokens
    from memory_mcp.models import Caller
    from memory_mcp.notes.indexer import NoteIndexer
    from memory_mcp.notes.watcher import NoteWatcher
    from memory_mcp.rules.service import MemoryService
    from memory_mcp.semantic.embeddings import Embedder
    from memory_mcp.settings import Settings


@dataclass
class AppContext:
    settings: Settings
    service: MemoryService
    caller: Caller
    notes: NoteIndexer
    tokens: AgentTokens  # bearer tokens of the HTTP transports (auth/tokens.py)
    oauth: OAuthGrants  # OAuth grants of the HTTP transports (auth/oauth.py)
    # Tool calls worked on at once; the others wait their turn in arrival order.
    turns: anyio.Semaphore = field(default_factory=lambda: anyio.Semaphore(8))
    watcher: NoteWatcher | None = None  # running when the app has background workers


class AppOpener(Protocol):
    """app.root.open_app's signature: the composition roots (cli/launch.py, the hooks'
    entry, the tests) pass it, or a wrapper of it, to the servers, which open the app when
    they start."""

    def __call__(
        self,
        settings: Settings,
        embedder: Embedder | None = ...,
        background: bool = ...,
        create: bool = ...,
    ) -> AbstractAsyncContextManager[AppContext]: ...
