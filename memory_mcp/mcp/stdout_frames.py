"""Standard output as the async file the MCP stdio transport writes its messages to, written
from the event loop itself.

Why: the SDK wraps stdout with anyio.wrap_file, so every answer takes two trips to a worker
thread and back (write, then flush). On 2 cores, next to a search's model and database
threads, those trips were a large part of what stdio added to a search. Here a message is
written straight to the pipe, which is non-blocking: when the pipe is full (a client slow
to read, a large answer) the writer waits for room on the event loop instead of blocking it.

Like the SDK's own claim of stdout, the protocol gets a private copy of fd 1 while serving,
and fd 1 points at stderr: a stray print, ours or a library's, never lands in the protocol
stream. fd 1 is put back on exit."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class StdoutFrames:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> int:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            data = data[written:]
        return len(text)

    async def flush(self) -> None:
        """Nothing is buffered: `write` returns once the pipe has every byte."""


@contextmanager
def claimed_stdout() -> Iterator[StdoutFrames]:
    """The protocol's stdout for as long as the server runs (see the module docstring)."""
    private = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    os.set_blocking(private, False)
    os.dup2(2, 1)
    try:
        yield StdoutFrames(private)
    finally:
        os.set_blocking(private, True)
        os.dup2(private, 1)
        os.close(private)
