"""Text -> unit vector, cached on disk by text, per model: the experiments re-combine the
same turn, passage, window and query vectors many ways, and the model is the slow part."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

Encode = Callable[[list[str]], np.ndarray]


class CachedEncoder:
    def __init__(self, name: str, encode: Encode, cache_dir: Path) -> None:
        self.name = name
        self._encode = encode
        self._path = cache_dir / f"{name}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        if self._path.exists():
            loaded = np.load(self._path, allow_pickle=False)
            for digest, vector in zip(loaded["digests"], loaded["vectors"], strict=True):
                self._vectors[str(digest)] = vector

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def missing(self, texts: Sequence[str]) -> list[str]:
        """The texts of `texts` without a vector yet, each once, in order."""
        wanted = {self._digest(t): t for t in texts}
        return [t for d, t in wanted.items() if d not in self._vectors]

    def add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vector in zip(texts, np.asarray(vectors, dtype=np.float32), strict=True):
            self._vectors[self._digest(text)] = vector
        self._dirty = True

    def known(self, texts: Sequence[str]) -> np.ndarray:
        """The cached vectors of `texts` (every one must be cached), one row each."""
        return np.stack([self._vectors[self._digest(t)] for t in texts])

    def vectors(self, texts: Sequence[str], batch: int = 256) -> np.ndarray:
        items = self.missing(texts)
        if items:
            started = time.perf_counter()
            for start in range(0, len(items), batch):
                part = items[start : start + batch]
                self.add(part, self._encode(part))
                print(
                    f"  {self.name}: {start + len(part)}/{len(items)} texts "
                    f"({(start + len(part)) / (time.perf_counter() - started):.1f}/s)",
                    file=sys.stderr,
                )
                if (start // batch) % 40 == 39:  # a long run keeps what it has
                    self.save()
            self.save()
        return self.known(texts) if texts else np.zeros((0, 0))

    def save(self) -> None:
        """Write the cache, merged with what another process saved meanwhile (a lab run
        and a `bench retrieval --cache-vectors` run share the file), through a temporary
        file: a reader never sees half a file."""
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        if self._path.exists():
            loaded = np.load(self._path, allow_pickle=False)
            for digest, vector in zip(loaded["digests"], loaded["vectors"], strict=True):
                self._vectors.setdefault(str(digest), vector)
        digests = np.array(list(self._vectors), dtype="U40")
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        partial = self._path.with_suffix(f".{os.getpid()}.partial.npz")
        np.savez(partial, digests=digests, vectors=vectors)
        partial.replace(self._path)
        self._dirty = False


def minilm_onnx() -> Encode:
    """The product's default embedder (all-MiniLM-L6-v2 on ONNX Runtime), synchronously."""
    from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
    from memory_mcp.semantic.onnx_model import ensure_in_child
    from memory_mcp.settings import default_data_dir

    embedder = OnnxEmbedder(lambda: ensure_in_child(default_data_dir(), None))
    embedder.start()
    embedder._loaded.wait()
    return embedder.encode


def sentence_transformer(path: str, threads: int = 2) -> Encode:
    """A sentence-transformers model from a local folder (safetensors weights only)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(path, device="cpu", model_kwargs={"use_safetensors": True})

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(
            model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        )

    return encode
