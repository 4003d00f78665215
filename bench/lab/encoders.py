"""Text -> unit vector, cached on disk by text, per model: the experiments re-combine the
same turn, passage, window and query vectors many ways, and the model is the slow part."""

from __future__ import annotations

import hashlib
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

    def vectors(self, texts: Sequence[str], batch: int = 256) -> np.ndarray:
        digests = [self._digest(t) for t in texts]
        wanted = {d: t for d, t in zip(digests, texts, strict=True) if d not in self._vectors}
        if wanted:
            items = list(wanted.items())
            started = time.perf_counter()
            for start in range(0, len(items), batch):
                part = items[start : start + batch]
                out = np.asarray(self._encode([t for _, t in part]), dtype=np.float32)
                for (digest, _), vector in zip(part, out, strict=True):
                    self._vectors[digest] = vector
                print(
                    f"  {self.name}: {start + len(part)}/{len(items)} texts "
                    f"({(start + len(part)) / (time.perf_counter() - started):.1f}/s)",
                    file=sys.stderr,
                )
            self._dirty = True
            self.save()
        return np.stack([self._vectors[d] for d in digests]) if digests else np.zeros((0, 0))

    def save(self) -> None:
        if not self._dirty:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        digests = np.array(list(self._vectors), dtype="U40")
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        np.savez(self._path, digests=digests, vectors=vectors)
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
