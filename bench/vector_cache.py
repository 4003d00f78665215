"""An embedder that answers from vectors cached on disk by text (bench/lab/encoders.py's
cache, shared with the lab): the benchmarks store the same turns and ask the same questions
run after run, and the model is the slow part (BEAM's long messages: tens of thousands of
passages). The product path is unchanged: `embed` returns what the wrapped model returned
for the same text, and only texts never seen are sent to it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from bench.lab.encoders import CachedEncoder
from memory_mcp.semantic.embeddings import Embedder

QUERY_KEY = "\x00query: "  # no stored text starts with a NUL
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
        return await self._embed(texts, self._inner.embed, "")

    def __getattr__(self, name: str) -> Any:
        # A model that embeds questions apart (e5's "query: "): cached under that prefix.
        if name == "embed_queries" and hasattr(self._inner, "embed_queries"):

            async def embed_queries(texts: list[str]) -> np.ndarray:
                inner = self._inner.embed_queries  # type: ignore[attr-defined]
                return await self._embed(texts, inner, QUERY_KEY)

            return embed_queries
        raise AttributeError(name)

    async def _embed(
        self, texts: list[str], embed: Callable[[list[str]], Awaitable[np.ndarray]], key: str
    ) -> np.ndarray:
        keyed = [key + text for text in texts]
        missing = self._cache.missing(keyed)
        if missing:
            self._cache.add(missing, await embed([text[len(key) :] for text in missing]))
            self._unsaved += len(missing)
            if self._unsaved >= SAVE_EVERY:
                self.save()
        return self._cache.known(keyed)

    def save(self) -> None:
        self._cache.save()
        self._unsaved = 0
