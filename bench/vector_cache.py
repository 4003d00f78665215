"""An embedder that answers from vectors cached on disk by text (bench/lab/encoders.py's
cache, shared with the lab): the benchmarks store the same turns and ask the same questions
run after run, and the model is the slow part (BEAM's long messages: tens of thousands of
passages). The product path is unchanged: `embed` returns what the wrapped model returned
for the same text, and only texts never seen are sent to it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.lab.encoders import CachedEncoder
from memory_mcp.semantic.embeddings import Embedder

# Written to disk after this many new vectors, and at the end of a run.
SAVE_EVERY = 5_000


class CachingEmbedder:
    def __init__(self, inner: Embedder, cache_dir: Path, name: str = "minilm") -> None:
        self.model_name = inner.model_name
        self._inner = inner
        self._cache = CachedEncoder(name, self._refuse, cache_dir)
        self._unsaved = 0

    @staticmethod
    def _refuse(texts: list[str]) -> np.ndarray:
        raise AssertionError("CachingEmbedder embeds through the wrapped embedder")

    def is_ready(self) -> bool:
        return self._inner.is_ready()

    async def wait_ready(self) -> None:
        await self._inner.wait_ready()

    async def embed(self, texts: list[str]) -> np.ndarray:
        missing = self._cache.missing(texts)
        if missing:
            self._cache.add(missing, await self._inner.embed(missing))
            self._unsaved += len(missing)
            if self._unsaved >= SAVE_EVERY:
                self.save()
        return self._cache.known(texts)

    def save(self) -> None:
        self._cache.save()
        self._unsaved = 0
