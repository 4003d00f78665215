"""The ONNX Runtime embedder against the reference vectors (sentence-transformers', computed
once and committed), the graph built from the weights without torch, and the ONNX file's
preparation: keyed by the weights, written atomically."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import numpy as np
import onnx
import pytest
from tokenizers import Tokenizer

from memory_mcp.semantic.embeddings import (
    MODEL_NAME,
    EmbeddingUnavailableError,
    SentenceTransformerEmbedder,
)
from memory_mcp.semantic.onnx_embedder import OnnxEmbedder
from memory_mcp.semantic.onnx_graph import BertShape
from memory_mcp.semantic.onnx_model import (
    WEIGHTS_PACKAGE,
    file_name,
    weights_digest,
    weights_dir,
)

pytestmark = pytest.mark.anyio

DATA = Path(__file__).parent.parent / "data"
TEXTS = [
    "how do we run the tests?",
    "",
    "a",
    "Ünïcödé, 日本語のテキスト, emoji 🙂 and punctuation!?",
    " ".join(f"word{i} of a very long memory about deployments" for i in range(120)),
]


def reference() -> tuple[list[str], np.ndarray]:
    """Texts and the vectors sentence-transformers (torch) gave them, computed once by
    bench/reference_vectors.py and committed: no test needs torch."""
    texts = json.loads((DATA / "reference_texts.json").read_text(encoding="utf-8"))["texts"]
    vectors = np.load(DATA / "reference_vectors.npy")
    assert vectors.shape == (len(texts), 384)
    return texts, vectors


def test_the_reference_texts_cover_the_hard_cases() -> None:
    texts, _ = reference()
    tokenizer = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the file pads to 128
    pieces = [len(tokenizer.encode(text).ids) for text in texts]
    assert len(texts) >= 300
    assert sum(n > 256 for n in pieces) >= 50  # truncation at 256 is compared
    assert sum(n <= 3 for n in pieces) >= 10  # empty, blank, a character ([CLS] [SEP])
    assert {"", " ", "\u200b"} <= set(texts)
    assert sum(any(ord(c) > 127 for c in text) for text in texts) >= 50
    assert sum("def " in text or "SELECT " in text for text in texts) >= 20  # code


@pytest.fixture(scope="module")
def prepared_vectors(real_embedder: OnnxEmbedder) -> np.ndarray:
    """The reference texts embedded by the file the suite runs, batched in chunks and
    padded on the right: once, for the two tests that compare them with the reference."""
    texts, _ = reference()
    vectors: np.ndarray = anyio.run(real_embedder.embed, texts)
    return vectors


async def test_onnx_gives_the_reference_vectors(
    real_embedder: OnnxEmbedder, prepared_vectors: np.ndarray
) -> None:
    texts, expected = reference()
    vectors = prepared_vectors
    assert vectors.dtype == np.float32
    assert float(np.abs(vectors - expected).max()) <= 1e-5
    # One at a time (no padding) as well: padding changes no text's vector.
    alone = np.concatenate([await real_embedder.embed([t]) for t in texts[::7]])
    assert float(np.abs(alone - expected[::7]).max()) <= 1e-5
    # Equal vectors, so both runtimes store them under one name: no store is re-embedded
    # when the runtime changes.
    assert real_embedder.model_name == MODEL_NAME


async def test_a_graph_built_now_without_torch_gives_the_reference_vectors(
    tmp_path: Path, model_file: Path, prepared_vectors: np.ndarray
) -> None:
    """Built in a fresh process from the weights: the vectors match, the file holds ONNX
    Runtime's fused operators, and neither torch nor transformers was imported. A build
    byte for byte the file the suite runs has that file's vectors (`prepared_vectors`);
    any other (an older install's file, another onnx version) is run itself."""
    script = (
        "import sys; from pathlib import Path; from memory_mcp.semantic.onnx_model import export, "
        f"weights_dir; export(weights_dir(), Path({str(tmp_path / 'built.onnx')!r})); "
        "print(' '.join(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True
    )
    modules = set(done.stdout.split())
    assert "onnx" in modules
    assert not {"torch", "transformers", "sentence_transformers"} & modules
    built = tmp_path / "built.onnx"
    assert operators(built) == FUSED
    texts, expected = reference()
    if built.read_bytes() == model_file.read_bytes():
        vectors = prepared_vectors
    else:
        vectors = await OnnxEmbedder(lambda: built).embed(texts)
    assert float(np.abs(vectors - expected).max()) <= 1e-5


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


# ONNX Runtime's fused BERT (what its transformer optimizer made of torch's export): one
# Attention per layer of the 6, no plain MatMul/Softmax attention beside it.
FUSED = {
    "Cast": 3,
    "EmbedLayerNormalization": 1,
    "Attention": 6,
    "MatMul": 18,
    "SkipLayerNormalization": 12,
    "BiasGelu": 6,
}


def operators(path: Path) -> dict[str, int]:
    return dict(Counter(node.op_type for node in onnx.load(str(path)).graph.node))


def test_the_prepared_file_has_the_fused_operators(model_file: Path) -> None:
    """The recipe claims ONNX Runtime's fused operators (~20% off a query against the
    plain graph): the file the server runs holds them and nothing else."""
    assert operators(model_file) == FUSED


def test_a_config_this_graph_would_compute_wrongly_is_refused() -> None:
    config = json.loads((weights_dir() / "config.json").read_text(encoding="utf-8"))
    assert BertShape.from_config(config) == BertShape(
        layers=6, heads=12, hidden=384, layer_norm_eps=1e-12
    )
    for key, value in [
        ("hidden_act", "gelu_new"),  # the tanh approximation: other vectors
        ("position_embedding_type", "relative_key"),
        ("model_type", "roberta"),
    ]:
        with pytest.raises(ValueError, match=key):
            BertShape.from_config({**config, key: value})
    with pytest.raises(ValueError, match="num_attention_heads"):
        BertShape.from_config({**config, "num_attention_heads": 7})


def test_a_missing_weights_package_is_named_with_its_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "memory_mcp_minilm", None)  # as if not installed
    with pytest.raises(FileNotFoundError, match=re.escape(f"pip install {WEIGHTS_PACKAGE}")):
        weights_dir()


async def test_the_reference_embedder_without_its_extra_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in ("torch", "sentence_transformers"):  # as if not installed (as in CI)
        monkeypatch.setitem(sys.modules, module, None)
    embedder = SentenceTransformerEmbedder()
    with pytest.raises(EmbeddingUnavailableError) as failed:
        await embedder.wait_ready()
    message = str(failed.value)
    assert "--embedder sentence-transformers needs torch and sentence-transformers" in message
    assert "[sentence-transformers]'" in message  # the extra, by its name
    assert "pip install" in message
    assert "--embedder onnx" in message
