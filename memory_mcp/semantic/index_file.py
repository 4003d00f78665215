"""A quantised vector index persisted beside its store (`memory.db` -> `memory.db.vectors/`),
so a server starts without reading every vector back: each array memory-mapped, checked against
the store (format, model, and a revision the store has reached) before it is used. Its coarse
index, once built, is written beside the arrays (`coarse.faiss`, read whole) at the same
revision.

Written to a new folder that replaces the old one only when complete: a crash leaves the
old index or none, never half of one. Whatever is wrong with a folder, `load` says None
and the index is built from the store instead."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from memory_mcp.semantic.coarse_index import CoarseIndex
from memory_mcp.semantic.quantised_index import QuantisedIndex

log = logging.getLogger(__name__)

FORMAT = 1
COARSE = "coarse.faiss"
_ARRAYS = (
    "bits", "codes", "scales", "ids", "alive", "owner", "session", "scope", "source",
    "expires", "updated",
)  # fmt: skip


def folder_of(store_file: Path) -> Path:
    return store_file.with_name(store_file.name + ".vectors")


def save(index: QuantisedIndex, store_file: Path, model: str) -> None:
    """Write `index` (at its revision) beside `store_file`, replacing any older one."""
    folder = folder_of(store_file)
    fresh = folder.with_name(folder.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    size = index._size
    for name in _ARRAYS:
        np.save(fresh / f"{name}.npy", getattr(index, name)[:size])
    np.save(fresh / "thresholds.npy", index.thresholds)
    if index.coarse is not None:
        index.coarse.save(fresh / COARSE)
    meta = {
        "format": FORMAT,
        "model": model,
        "revision": index.revision,
        "size": size,
        "dimension": index.dimension,
        "coarse": index.coarse is not None,
        "codes": list(index._codes._codes),  # in code order (dicts keep insertion order)
        "tags": {str(slot): sorted(tags) for slot, tags in enumerate(index.tags[:size]) if tags},
    }
    (fresh / "meta.json").write_text(json.dumps(meta))
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    fresh.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


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
        if len(index.coarse) != len(index._slot_of):
            raise ValueError(f"coarse index: {len(index.coarse)} vectors for {len(index)} slots")
    return index
