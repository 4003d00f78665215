"""The order the watcher indexes changed paths in (memory_mcp/notes/queue.py), on real
files: the newest batch first, removals first within a batch, then the most recently
modified, then the smaller; a path queued twice is taken once, where it came last."""

from __future__ import annotations

import os
from pathlib import Path

from memory_mcp.notes.queue import NoteQueue


def write(path: Path, text: str, mtime_ns: int) -> str:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return str(path)


def drain(queue: NoteQueue) -> list[str]:
    taken: list[str] = []
    while (path := queue.take()) is not None:
        taken.append(path)
    return taken


def test_within_a_batch_removals_then_newest_then_smallest(tmp_path: Path) -> None:
    old = write(tmp_path / "old.md", "x", 1_000_000_000)
    new_big = write(tmp_path / "new-big.md", "x" * 500, 3_000_000_000)
    new_small = write(tmp_path / "new-small.md", "x", 3_000_000_000)
    middle = write(tmp_path / "middle.md", "x", 2_000_000_000)
    gone = str(tmp_path / "gone.md")
    queue = NoteQueue()
    queue.add([old, new_big, gone, middle, new_small])
    assert len(queue) == 5
    assert drain(queue) == [gone, new_small, new_big, middle, old]
    assert len(queue) == 0


def test_a_newer_batch_goes_before_what_is_left_of_older_ones(tmp_path: Path) -> None:
    burst = [write(tmp_path / f"b{n}.md", "x", 5_000_000_000 + n) for n in range(5)]
    queue = NoteQueue()
    queue.add(burst)
    first = queue.take()
    note = write(tmp_path / "note.md", "saved after", 1_000_000_000)  # an old mtime, even
    queue.add([note])
    assert queue.take() == note
    assert [first, *drain(queue)] == burst[::-1]


def test_a_path_queued_again_is_taken_once_where_it_came_last(tmp_path: Path) -> None:
    a = write(tmp_path / "a.md", "x", 2_000_000_000)
    b = write(tmp_path / "b.md", "x", 1_000_000_000)
    c = write(tmp_path / "c.md", "x", 3_000_000_000)
    queue = NoteQueue()
    queue.add([a, b])
    queue.add([b, c])
    assert len(queue) == 3
    assert drain(queue) == [c, b, a]
    queue.add([a])
    assert drain(queue) == [a], "taken again once it changed again"


def test_nothing_waiting(tmp_path: Path) -> None:
    queue = NoteQueue()
    queue.add([])
    assert queue.take() is None
    assert len(queue) == 0
