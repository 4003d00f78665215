"""The ONNX Runtime embedder against the reference (sentence-transformers), and the ONNX
file's preparation: keyed by the weights, written atomically."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from tokenizers import Tokenizer

from memory_mcp.semantic.embeddings import SentenceTransformerEmbedder
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.semantic.onnx_model import (
    ensure_in_child,
    file_name,
    missing_fusions,
    weights_digest,
    weights_dir,
)

pytestmark = pytest.mark.anyio

LONG = " ".join(f"word{i} of a very long memory about deployments" for i in range(120))
TEXTS = [
    "how do we run the tests?",
    "The office cat is called Miso",
    "",
    "a",
    "Ünïcödé, 日本語のテキスト, emoji 🙂 and punctuation!?",
    "def main(argv: list[str]) -> int:  # code, identifiers_with_underscores, CamelCase",
    "We deploy to staging with `make deploy ENV=staging` after the migrations ran. " * 3,
    LONG,  # far past 256 word pieces: truncation must match
    "x" * 5_000,
    "short",
    "Caroline: I went to the LGBTQ support group yesterday and it was powerful.",
]


async def test_onnx_gives_the_reference_vectors(real_embedder: OnnxEmbedder) -> None:
    tokenizer = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    assert len(tokenizer.encode(LONG)) > 256  # so truncation is part of what is compared
    reference = SentenceTransformerEmbedder()
    onnx = await real_embedder.embed(TEXTS)
    expected = await reference.embed(TEXTS)
    assert onnx.shape == expected.shape == (len(TEXTS), 384)
    assert onnx.dtype == np.float32
    assert float(np.abs(onnx - expected).max()) <= 1e-5
    # Equal vectors, so both runtimes store them under one name: no store is re-embedded
    # when the runtime changes.
    assert real_embedder.model_name == reference.model_name
    # A batch cut into chunks (run on two threads) gives each text its own vector.
    many = TEXTS * 9
    batched = await real_embedder.embed(many)
    assert float(np.abs(batched - np.tile(onnx, (9, 1))).max()) <= 1e-5


def test_the_file_is_named_after_the_weights(tmp_path: Path) -> None:
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"weights v1")
    (weights / "config.json").write_text("{}")
    cache = tmp_path / "cache"
    first = weights_digest(weights, cache)
    assert weights_digest(weights, cache) == first  # remembered
    (weights / "model.safetensors").write_bytes(b"weights v2")  # a new model version
    second = weights_digest(weights, cache)
    assert second != first
    assert file_name(second) != file_name(first)
    assert weights_digest(weights, None) == second


async def test_two_processes_exporting_at_once_leave_one_whole_file(
    tmp_path: Path, real_embedder: OnnxEmbedder
) -> None:
    """Both export into the same folder; each writes a temporary file and renames it, so
    the result is one complete file that loads and gives the prepared file's vectors, and
    no temporary file is left."""
    folder = tmp_path / "models"
    command = [
        sys.executable,
        "-m",
        "memory_mcp.semantic.onnx_model",
        "--data-dir",
        str(tmp_path / "data"),
        "--model-dir",
        str(folder),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    name = file_name(weights_digest(weights_dir()))
    assert {out.strip() for out, _ in outputs} == {str(folder / name)}
    assert sorted(p.name for p in folder.iterdir() if p.suffix != ".json") == [name]
    assert not list(folder.glob(".*.tmp"))
    fresh = OnnxEmbedder(lambda: folder / name)
    vectors = await fresh.embed(TEXTS[:4])
    assert float(np.abs(vectors - await real_embedder.embed(TEXTS[:4])).max()) <= 1e-6


def test_the_prepared_file_has_the_fused_operators(tmp_path: Path) -> None:
    """The export recipe claims ONNX Runtime's BERT fusions (~15% off a query): the file
    the server runs holds them, one Attention per layer of the 6 and no plain softmax, so
    a transformers release that exports attention another way fails here, not silently."""
    path = ensure_in_child(tmp_path / "data")  # the file `make` prepared, else exported now
    ops = Counter(node.op_type for node in onnx.load(str(path)).graph.node)
    assert ops["Attention"] == 6
    assert ops["EmbedLayerNormalization"] == 1
    assert ops["SkipLayerNormalization"] == 12
    assert ops["BiasGelu"] == 6
    assert ops["Softmax"] == 0  # attention is not also left in its unfused form


def test_a_graph_without_fused_attention_is_not_kept_as_fused() -> None:
    # What ONNX Runtime made of torch's default (SDPA) export: layer norms, no Attention.
    sdpa = {"Attention": 0, "SkipLayerNormalization": 12, "BiasGelu": 6}
    assert missing_fusions(sdpa, layers=6) == {"Attention": 6}
    fused = {"Attention": 6, "EmbedLayerNormalization": 1, "SkipLayerNormalization": 12}
    assert missing_fusions(fused, layers=6) == {}
