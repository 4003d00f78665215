"""The server's app, opened in the background so that the MCP handshake is answered first.

A client may time out a server that is slow to answer `initialize` (some allow 10 s), and
opening the store costs more than the handshake itself: importing SQLAlchemy and numpy,
migrations, loading the vector index, starting the model. So the server answers first and
opens right after; a tool call that arrives meanwhile waits for the open app. What can go
wrong with a `--db` is checked before (startup_check.check_store_opens), so a bad path
still fails at start with one clear line."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Generic, TypeVar

import anyio

from memory_mcp.errors import MemoryMcpError, StoreUnavailableError

log = logging.getLogger(__name__)

T = TypeVar("T")


class HandshakeGate:
    """Passed once the client has its `initialize` answer, i.e. when it sends anything
    else (the `notifications/initialized` that follows, or a request). Plain callbacks, no
    event loop objects: it is made before the loop runs."""

    def __init__(self) -> None:
        self.passed = False
        self._callbacks: list[Callable[[], None]] = []

    def on_pass(self, callback: Callable[[], None]) -> None:
        if self.passed:
            callback()
        else:
            self._callbacks.append(callback)

    def pass_(self) -> None:
        if not self.passed:
            self.passed = True
            for callback in self._callbacks:
                callback()
            self._callbacks.clear()


def is_initialize_request(item: Any) -> bool:
    """True for a received SessionMessage carrying the `initialize` request."""
    message = getattr(item, "message", None)
    message = getattr(message, "root", message)
    return getattr(message, "method", None) == "initialize"


class OpeningApp(Generic[T]):
    """An app context manager entered in a background task (`run`) once `begin` is called,
    and left when `stop` is called. `ready()` begins the opening if nothing has, and
    returns the open app, or raises the opening's error for every caller."""

    def __init__(self, open_app: Callable[[], AbstractAsyncContextManager[T]]) -> None:
        self._open_app = open_app
        self._go = anyio.Event()
        self._done_opening = anyio.Event()
        self._stop = anyio.Event()
        self._app: T | None = None
        self._failure = ""

    def begin(self) -> None:
        self._go.set()

    def stop(self) -> None:
        self._stop.set()
        self._go.set()

    async def ready(self) -> T:
        if self._app is not None:  # open: no checkpoint, so calls keep their arrival order
            return self._app
        self.begin()
        await self._done_opening.wait()
        if self._app is None:
            raise StoreUnavailableError(self._failure or "the memory server is shutting down")
        return self._app

    async def run(self) -> None:
        await self._go.wait()
        try:
            if self._stop.is_set():
                return
            async with self._open_app() as app:
                self._app = app
                self._done_opening.set()
                await self._stop.wait()
        except MemoryMcpError as exc:
            log.error("the memory store did not open: %s", exc)
            self._failure = str(exc)
        except OSError as exc:  # a database server that cannot be reached (PostgreSQL)
            log.error("the memory store did not open: %s", exc)
            self._failure = f"the memory store did not open: cannot reach it ({exc})"
        except Exception:  # a background task: log with the traceback, answer every call
            log.exception("the memory store did not open")
            self._failure = (
                "the memory store did not open (the details are in the server log); "
                "restart the server"
            )
        finally:
            self._app = None
            self._done_opening.set()
