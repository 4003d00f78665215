"""Standard input as the async line iterator the MCP stdio transport reads, from a daemon
thread, so that a read waiting for input never holds up shutdown.

Why: the SDK reads stdin in one of anyio's worker threads, which can be neither cancelled
nor abandoned at exit. In a terminal (`make serve`) nothing ever arrives on stdin, so one
Ctrl-C cancelled everything except that read, and the process waited for the next line
typed. Here the blocked read belongs to a daemon thread that the process does not wait
for, and reads go straight to the file descriptor (os.read), so no buffered-stream lock
is held when the interpreter shuts down."""

from __future__ import annotations

import os
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

CHUNK_BYTES = 65_536


class StdinLines:
    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._receive: MemoryObjectReceiveStream[str] | None = None

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        if self._receive is None:
            send, self._receive = anyio.create_memory_object_stream[str](16)
            token = anyio.lowlevel.current_token()
            threading.Thread(
                target=self._pump, args=(send, token), name="stdin-reader", daemon=True
            ).start()
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def _pump(
        self, send: MemoryObjectSendStream[str], token: anyio.lowlevel.EventLoopToken
    ) -> None:
        pending = b""
        try:
            while True:
                chunk = os.read(self._fd, CHUNK_BYTES)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", errors="replace") + "\n"
                    anyio.from_thread.run(send.send, text, token=token)
            if pending:
                text = pending.decode("utf-8", errors="replace")
                anyio.from_thread.run(send.send, text, token=token)
            anyio.from_thread.run_sync(send.close, token=token)
        except (OSError, RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the server stopped (or stdin broke): nobody is reading any more
