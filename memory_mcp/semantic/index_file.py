"""A quantised vector index persisted beside its store (`memory.db` -> `memory.db.vectors/`),
so a server starts without reading every vector back: each array memory-mapped, checked against
the store (format, model, and a revision the store has reached) before it is used. Its coarse
index, once built, is written beside the arrays (`coarse.faiss`, read whole).

Written in two steps, so searches and deltas do not wait for the big write (0.65-2.3 s at a
million memories, the int8 codes alone 366 MB): `write_arrays` writes a `Snapshot` (the
arrays, their size and revision, taken while the index is held) without holding the index;
then `finish`, with the index held again, rewrites the rows of the slots deltas changed
meanwhile from the index's current arrays and writes the coarse index, the string codes, the
tags and the meta. The folder then holds the index's current state for the snapshot's slots,
labelled with the snapshot's revision: a start catches up from there, and re-applying a
change the file already holds is harmless (an upsert puts the same row in the memory's own
slot; a delete of a memory not there does nothing). Memories given slots past the snapshot's
size meanwhile are not in the arrays: `load` drops them from the coarse index, and the
catch-up adds them back. `save` does both steps at once.

Written to a new folder that replaces the old one only when complete: a crash leaves the
old index or none, never half of one. The old folder is removed once the index is let go.
Whatever is wrong with a folder, `load` says None and the index is built from the store
instead."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memory_mcp.semantic.coarse_index import CoarseIndex
from memory_mcp.semantic.quantised_index import QuantisedIndex

log = logging.getLogger(__name__)

# 2: with each memory's project, task and archived flag; 3: and its validity window
FORMAT = 3
COARSE = "coarse.faiss"
_ARRAYS = (
    "bits", "codes", "scales", "ids", "alive", "owner", "session", "scope", "source",
    "expires", "updated", "project", "task", "archived", "valid_from", "valid_to",
)  # fmt: skip


@dataclass(frozen=True)
class Snapshot:
    """What `write_arrays` writes, taken while the index is held: its size and revision,
    and the arrays themselves (a grow meanwhile gives the index new ones, so these keep
    the slots they had; a delta that writes into them in place changes a slot that
    `finish` rewrites)."""

    size: int
    revision: int
    generation: int
    arrays: dict[str, np.ndarray]


def folder_of(store_file: Path) -> Path:
    return store_file.with_name(store_file.name + ".vectors")


def snapshot_of(index: QuantisedIndex) -> Snapshot:
    arrays = {name: getattr(index, name) for name in _ARRAYS}
    return Snapshot(index._size, index.revision, index.generation, arrays)


def fresh_folder(store_file: Path) -> Path:
    """An empty folder to write the next index into (what a failed save left is removed)."""
    folder = folder_of(store_file)
    fresh = folder.with_name(folder.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(_old_of(folder), ignore_errors=True)
    fresh.mkdir()
    return fresh


def write_arrays(snapshot: Snapshot, fresh: Path) -> None:
    """The big part of a save, run without holding the index."""
    for name, array in snapshot.arrays.items():
        np.save(fresh / f"{name}.npy", array[: snapshot.size])


def finish(
    index: QuantisedIndex,
    snapshot: Snapshot,
    fresh: Path,
    store_file: Path,
    model: str,
    changed: np.ndarray,
) -> Path:
    """Complete the save of `snapshot` into `fresh` (`write_arrays` done) and put it in
    place of the old folder, with the index held: no delta may run meanwhile. `changed`:
    the slots deltas changed since the snapshot was taken. The replaced folder, for the
    caller to `remove` once it no longer holds the index (unlinking 1.2 GB of files at a
    million memories takes a while)."""
    size = snapshot.size
    _rewrite_rows(index, fresh, changed[changed < size])
    np.save(fresh / "thresholds.npy", index.thresholds)
    if index.coarse is not None:
        index.coarse.save(fresh / COARSE)
    meta = {
        "format": FORMAT,
        "model": model,
        "revision": snapshot.revision,
        "size": size,
        "dimension": index.dimension,
        "coarse": index.coarse is not None,
        "codes": list(index._codes._codes),  # in code order (dicts keep insertion order)
        "tags": {str(slot): sorted(tags) for slot, tags in enumerate(index.tags[:size]) if tags},
    }
    (fresh / "meta.json").write_text(json.dumps(meta))
    return _replace_folder(folder_of(store_file), fresh)


def _rewrite_rows(index: QuantisedIndex, fresh: Path, slots: np.ndarray) -> None:
    """Write the index's current rows of `slots` over those `write_arrays` wrote. Not
    flushed: an msync here would write back every page `write_arrays` left in the page
    cache too (0.27 s at a million, with the index held), and the rest of the folder is
    not synced either (the page cache serves the next start)."""
    if not len(slots):
        return
    for name in _ARRAYS:
        written = np.load(fresh / f"{name}.npy", mmap_mode="r+")
        written[slots] = getattr(index, name)[slots]
        del written  # unmapped: the rows are in the files (through the page cache)


def _old_of(folder: Path) -> Path:
    return folder.with_name(folder.name + ".old")


def _replace_folder(folder: Path, fresh: Path) -> Path:
    """Put `fresh` in place of `folder`; the old one is renamed aside (an index mapped from
    it reads on: its files live on until it lets them go)."""
    old = _old_of(folder)
    shutil.rmtree(old, ignore_errors=True)  # already removed by fresh_folder, but for a crash
    if folder.exists():
        folder.rename(old)
    fresh.rename(folder)
    return old


def remove(folder: Path) -> None:
    """Remove a replaced folder, or a save's that will not be finished."""
    shutil.rmtree(folder, ignore_errors=True)


def save(index: QuantisedIndex, store_file: Path, model: str) -> None:
    """Write `index` (at its revision) beside `store_file`, replacing any older one, in
    one go: nothing may change it meanwhile."""
    snapshot = snapshot_of(index)
    fresh = fresh_folder(store_file)
    write_arrays(snapshot, fresh)
    remove(finish(index, snapshot, fresh, store_file, model, np.zeros(0, dtype=np.int64)))


def load(store_file: Path, model: str, store_revision: int) -> QuantisedIndex | None:
    """The index persisted beside `store_file`, if it is of this format and model and at
    a revision the store has reached (the store then only has newer changes for it: the
    caller catches up from there); otherwise None."""
    folder = folder_of(store_file)
    try:
        meta = json.loads((folder / "meta.json").read_text())
        if meta["format"] != FORMAT or meta["model"] != model:
            return None
        if not 0 <= meta["revision"] <= store_revision:
            log.info("the persisted vector index is not of this store: rebuilding it")
            return None
        return _restore(folder, meta)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if folder.exists():
            log.warning("the persisted vector index cannot be read (%s): rebuilding it", exc)
        return None


def _restore(folder: Path, meta: dict[str, Any]) -> QuantisedIndex:
    size = int(meta["size"])
    if size == 0:
        raise ValueError("empty")  # nothing to map: built from the store at once
    index = QuantisedIndex(np.load(folder / "thresholds.npy"))
    if index.dimension != meta["dimension"]:
        raise ValueError("dimension differs")
    for name in _ARRAYS:
        empty = getattr(index, name)
        # Mapped copy-on-write: a start reads nothing it does not touch (the sign bits at
        # the first search, the codes of each search's candidates), and a write changes
        # this process's copy only. Growing later copies into memory (VectorIndex._allocate).
        mapped = np.load(folder / f"{name}.npy", mmap_mode="c")
        if mapped.shape != (size, *empty.shape[1:]) or mapped.dtype != empty.dtype:
            raise ValueError(f"{name}: {mapped.shape} {mapped.dtype}")
        setattr(index, name, mapped)
    index._capacity = index._size = size
    index.tags = [frozenset()] * size
    for value in meta["codes"]:
        index._codes.code(value)
    for slot, tags in meta["tags"].items():
        index.tags[int(slot)] = frozenset(tags)
    alive = index.alive[:size]
    live_slots = np.flatnonzero(alive)
    index._slot_of = dict(zip(index.ids[live_slots].tolist(), live_slots.tolist(), strict=True))
    index._free = np.flatnonzero(~alive).tolist()
    index.revision = int(meta["revision"])
    if meta.get("coarse"):  # an index written before coarse indexes has none
        index.coarse = CoarseIndex.load(folder / COARSE)
        # Written after the arrays (`finish`): it may hold memories given slots past
        # theirs meanwhile. The catch-up from `revision` adds them back.
        index.coarse.remove_from(size)
        if len(index.coarse) != len(index._slot_of):
            raise ValueError(f"coarse index: {len(index.coarse)} vectors for {len(index)} slots")
    return index
