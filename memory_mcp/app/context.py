"""What a way in is handed once the app is open: AppContext. app/root.py builds it; this
module names its parts' types under TYPE_CHECKING only and imports nothing but the
standard library, so the hooks' fast path and the servers' start load neither the store,
the model nor the search by importing it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio

    from memory_mcp.auth.oauth import OAuthGrants
    from memory_mcp.auth.tokens import AgentTokens
    from memory_mcp.models import Caller
    from memory_mcp.notes.indexer import NoteIndexer
    from memory_mcp.notes.watcher import NoteWatcher
    from memory_mcp.rules.service import MemoryService
    from memory_mcp.settings import Settings


@dataclass
class AppContext:
    settings: Settings
    service: MemoryService
    caller: Caller
    notes: NoteIndexer
    # The HTTP transports' bearer tokens and OAuth grants, made when first asked for: a
    # hook or a CLI command never asks, and does not import them (app/root.py, auth_of).
    auth: Callable[[], tuple[AgentTokens, OAuthGrants]]
    # Tool calls worked on at once; the others wait their turn in arrival order.
    turns: anyio.Semaphore = field(default_factory=lambda: _turns(8))
    watcher: NoteWatcher | None = None  # running when the app has background workers

    @cached_property
    def _auth(self) -> tuple[AgentTokens, OAuthGrants]:
        return self.auth()

    @property
    def tokens(self) -> AgentTokens:
        """Bearer tokens of the HTTP transports (auth/tokens.py)."""
        return self._auth[0]

    @property
    def oauth(self) -> OAuthGrants:
        """OAuth grants of the HTTP transports (auth/oauth.py)."""
        return self._auth[1]


def _turns(calls: int) -> anyio.Semaphore:
    import anyio  # here: the hooks' entry imports this module on its fast path

    return anyio.Semaphore(calls)
