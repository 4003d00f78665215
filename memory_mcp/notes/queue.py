"""The order in which the watcher indexes changed paths: the newest arrival first.

A note someone just saved is the one they are about to search for; a burst (a checkout,
a sync, an unzip of a thousand notes) can wait a moment. So each batch of changes that
arrives goes on top of the ones still waiting, and the watcher takes one path at a time
from the top, looking for new arrivals between two paths: a note saved while a burst is
being indexed waits for one file, not for the burst. Within a batch: removals first (a
rename in one batch never shows the note twice), then the most recently modified, then
the smaller file. A path that arrives again is indexed once, where it arrived last (the
indexer reads the file as it is when it gets to it)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field


def _priority(path: str) -> tuple[int, int, int, str]:
    """Sort key within a batch: removals, then newest modification, then smallest."""
    try:
        info = os.lstat(path)
    except OSError:
        return (0, 0, 0, path)  # gone: a removal, which is quick
    return (1, -info.st_mtime_ns, info.st_size, path)


@dataclass
class _Batch:
    number: int
    paths: list[str]  # the next one last (popped)


@dataclass
class NoteQueue:
    _batches: list[_Batch] = field(default_factory=list)  # the newest last
    _arrived: dict[str, int] = field(default_factory=dict)  # path -> its latest batch
    _count: int = 0

    def add(self, paths: Iterable[str]) -> None:
        """A batch of changed paths, to be taken before every batch already waiting."""
        ordered = sorted(set(paths), key=_priority)
        if not ordered:
            return
        self._count += 1
        for path in ordered:
            self._arrived[path] = self._count
        self._batches.append(_Batch(self._count, ordered[::-1]))

    def take(self) -> str | None:
        """The next path to index, or None when nothing waits."""
        while self._batches:
            batch = self._batches[-1]
            if not batch.paths:
                self._batches.pop()
                continue
            path = batch.paths.pop()
            if self._arrived.get(path) == batch.number:  # else it waits in a newer batch
                del self._arrived[path]
                return path
        return None

    def __len__(self) -> int:
        return len(self._arrived)


__all__ = ["NoteQueue"]
