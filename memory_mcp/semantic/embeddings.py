"""Text embeddings. The service depends on the `Embedder` protocol; the real one loads the
bundled all-MiniLM-L6-v2 in a background thread so nothing waits for it at start-up."""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any, Protocol

import anyio
import anyio.to_thread
import numpy as np

from memory_mcp.errors import EmbeddingUnavailableError as EmbeddingUnavailableError

log = logging.getLogger(__name__)

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# torch and sentence-transformers are an optional extra: the server runs ONNX Runtime, and
# torch from the registry pulls several GB of CUDA libraries on a Linux machine.
EXTRA = "sentence-transformers"


class Embedder(Protocol):
    model_name: str

    def is_ready(self) -> bool: ...

    async def wait_ready(self) -> None: ...

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        ...


class BackgroundLoadedEmbedder:
    """An embedder whose model loads in a daemon thread: `start()` returns at once,
    `wait_ready()` and `embed()` wait for it. Subclasses say how to load (`_load`, run in
    the loading thread; raising reports the failure to every waiter) and how to encode
    (`encode`, blocking, run in a worker thread)."""

    model_name = MODEL_NAME

    def __init__(self) -> None:
        self._error: BaseException | None = None
        self._loaded = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Begin loading in a daemon thread; returns at once."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
            threading.Thread(
                target=self._load_reporting, name="embedding-model", daemon=True
            ).start()
            self._on_started()

    def _on_started(self) -> None:
        """Called once, right after the loading thread starts."""

    def _load(self) -> None:
        raise NotImplementedError

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (blocking)."""
        raise NotImplementedError

    def _load_reporting(self) -> None:
        try:
            self._load()
        except BaseException as exc:  # reported to every caller of wait_ready
            log.exception("could not load the embedding model")
            self._error = exc
        finally:
            self._loaded.set()

    def is_ready(self) -> bool:
        return self._loaded.is_set() and self._error is None

    async def wait_ready(self) -> None:
        self.start()
        while not self._loaded.is_set():
            # abandon_on_cancel: a caller that stops waiting (a search's bound) is not
            # held until this poll ends.
            await anyio.to_thread.run_sync(self._loaded.wait, 0.2, abandon_on_cancel=True)
        if self._error is not None:
            raise EmbeddingUnavailableError(f"embedding model failed to load: {self._error}")

    async def embed(self, texts: list[str]) -> np.ndarray:
        await self.wait_ready()
        return await anyio.to_thread.run_sync(self.encode, texts)


class SentenceTransformerEmbedder(BackgroundLoadedEmbedder):
    """all-MiniLM-L6-v2 from the `memory-mcp-minilm` package, loaded offline by the
    reference implementation (`--embedder sentence-transformers`; the optional extra)."""

    def __init__(self, batch_size: int = 64) -> None:
        super().__init__()
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        # Never reach for a hub: the weights are on disk, and a silent download
        # (or a cache in /tmp) is what users of other servers complain about.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        packages = {"torch": "torch", "sentence_transformers": "sentence-transformers"}
        missing = [package for module, package in packages.items() if not _installed(module)]
        if missing:
            raise ModuleNotFoundError(
                f"--embedder sentence-transformers needs {' and '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not installed: install the "
                f"optional extra ({extra_install_command()}; torch from PyPI brings "
                "several GB of CUDA libraries on Linux, a CPU build is enough), or use "
                "the default --embedder onnx, which gives the same vectors"
            )
        import torch
        from sentence_transformers import SentenceTransformer

        from memory_mcp.semantic.onnx_model import weights_dir

        # One intra-op thread: with torch's default (one per core) its threads spin
        # against the database and event-loop threads, and a query embedding that
        # takes 8 ms alone took 100 ms at p95 under search load here (p95 15 ms with
        # one thread; docs/RETRIEVAL.md, latency).
        torch.set_num_threads(1)

        self._model = SentenceTransformer(str(weights_dir()), device="cpu")
        log.info("embedding model %s loaded", self.model_name)

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:  # one encode at a time: two cores, no gain from interleaving
            vectors = self._model.encode(
                texts,
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float32)


def extra_install_command() -> str:
    """How to add the extra to this install: from its source tree when it runs from a
    clone (installed editable, as `make` does); else the extra's name, to be added to
    however the package was installed (it is not on PyPI)."""
    source = Path(__file__).resolve().parent.parent
    if (source / "pyproject.toml").is_file():
        return f"{sys.executable} -m pip install -e '{source}[{EXTRA}]'"
    return f"the `{EXTRA}` extra: pip install '<memory-mcp source>[{EXTRA}]'"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules without a spec: stands for a missing module
        return False
