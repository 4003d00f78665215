"""The default embedder: the bundled all-MiniLM-L6-v2 run with ONNX Runtime, no torch.

It computes what sentence-transformers computes for this model — word pieces truncated at
256, BERT, mean pooling over the attention mask, L2 normalisation — to within 2.2e-7
(tests/semantic/test_onnx_embedder.py), so vectors are stored under the same model name and a store
embedded by either runtime is used as it is. Importing onnxruntime and tokenizers takes
well under a second where torch takes 10-15 s here, and the process stays ~300 MB smaller.

Threads: the session runs each call on up to two intra-op threads, with spinning off, so
a query embedding never spins against the event loop and database threads (torch's
default of one spinning thread per core took a query's p95 from ~15 to ~100 ms here).
Two threads cut one query from ~6.5 to ~4.5 ms alone and a 10k search's p50 by ~1 ms;
a batch runs its chunks one after another at the same rate as two one-thread chunks
side by side (75 texts/s either way; docs/RETRIEVAL.md, runtime). The file's fused graph
(`onnx_graph`) took one query further, from ~5.8 to ~4.7 ms."""

from __future__ import annotations

import atexit
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memory_mcp.semantic.embeddings import BackgroundLoadedEmbedder

log = logging.getLogger(__name__)

# The tokenizer's own thread pool (rayon) spins after each call, against the threads that
# run beside a query embedding; batches are already split over threads here (`encode`).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MAX_SEQ_LENGTH = 256  # sentence-transformers' max_seq_length for this model
BATCH_CHUNK = 32  # texts per session run; sorted by length so padding stays small
EMBED_THREADS = max(1, min(2, os.cpu_count() or 1))
EXIT_WAIT_SECONDS = 10.0


class OnnxEmbedder(BackgroundLoadedEmbedder):
    """all-MiniLM-L6-v2 from an ONNX file, loaded in a daemon thread.

    `locate_model` returns the ONNX file's path and may take long (it exports the model in
    a child process the first time); it runs in the loading thread, never in the caller's."""

    def __init__(self, locate_model: Callable[[], Path], weights: Path | None = None) -> None:
        super().__init__()
        self._locate_model = locate_model
        self._weights = weights
        self._session: Any = None
        self._tokenizer: Any = None

    def _on_started(self) -> None:
        # A process that exits while ONNX Runtime is still building its session aborts
        # ("terminate called without an active exception"): let the load finish first,
        # within a bound.
        atexit.register(self._loaded.wait, EXIT_WAIT_SECONDS)

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from memory_mcp.semantic.onnx_model import model_files_dir

        weights = self._weights or model_files_dir()  # the tokenizer and its length
        path = self._locate_model()
        tokenizer = Tokenizer.from_file(str(weights / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=_max_seq_length(weights))
        # The file pads every text to 128; pad to the longest of each batch instead. On the
        # right: the fused Attention reads the mask as a count of leading real tokens
        # (onnx_graph), so left padding would give other vectors.
        padding = tokenizer.padding or {}
        tokenizer.enable_padding(
            direction="right",
            pad_id=padding.get("pad_id", 0),
            pad_token=padding.get("pad_token", "[PAD]"),
        )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = EMBED_THREADS
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # warnings from the graph optimiser are noise
        self._session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer
        log.info("embedding model %s loaded (ONNX Runtime, %s)", self.model_name, path)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (blocking)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [order[k : k + BATCH_CHUNK] for k in range(0, len(order), BATCH_CHUNK)]
        parts = [self._run([texts[i] for i in chunk]) for chunk in chunks]
        out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
        for chunk, vectors in zip(chunks, parts, strict=True):
            out[chunk] = vectors
        return out

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        # Mean pooling over the real tokens, then unit length (sentence-transformers'
        # Pooling and Normalize modules for this model).
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit


def _max_seq_length(weights: Path) -> int:
    try:
        config = json.loads((weights / "sentence_bert_config.json").read_text(encoding="utf-8"))
        return int(config["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return MAX_SEQ_LENGTH
