"""The bundled BERT encoder as an ONNX graph, built from its safetensors weights without
torch: the `onnx` package writes the nodes, `safetensors` reads the weights into numpy.

The graph is the one ONNX Runtime's transformer optimizer made of torch's export (recipe
`opset17-fused-v2`, docs/RETRIEVAL.md, runtime), emitted directly: the embeddings and
their layer norm as one EmbedLayerNormalization, then per layer one Attention (query, key
and value in one [hidden, 3 × hidden] product), the output projection and a
SkipLayerNormalization (residual + bias + layer norm), the feed-forward up-projection
with BiasGelu (the exact, erf-based GELU that BERT's "gelu" is; FastGelu's tanh
approximation would move the vectors), the down-projection and a second
SkipLayerNormalization. These are com.microsoft operators that ONNX Runtime's plain
CPUExecutionProvider runs on any x86-64 or ARM CPU (kernels picked at run time).

EmbedLayerNormalization turns the attention mask into a count of real tokens per row
(`mask_index`), which Attention reads as "the first N tokens are real": padding must be
on the right (the tokenizer's default; `OnnxEmbedder` pads so). The inputs and the output
(`last_hidden_state`, batch × tokens × hidden) are the ones torch's export had, so the
embedder runs either file the same way; pooling and normalisation stay in numpy there."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MS_DOMAIN = "com.microsoft"
# ONNX Runtime reads files of this IR version and later; onnx's own default can be newer
# than an older onnxruntime accepts.
IR_VERSION = 8
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT_NAME = "last_hidden_state"


@dataclass(frozen=True)
class BertShape:
    """What the graph needs from the weights' config.json."""

    layers: int
    heads: int
    hidden: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> BertShape:
        """Refuses a config this graph would compute wrongly (another activation, relative
        positions), naming the field: vectors that are merely different are worse than no
        model, since a store would keep them under the same model name."""
        expected = {"model_type": "bert", "hidden_act": "gelu"}
        expected_if_set = {"position_embedding_type": "absolute"}
        for key, value in expected.items():
            if config.get(key) != value:
                raise ValueError(f"config.json: {key} is {config.get(key)!r}, expected {value!r}")
        for key, value in expected_if_set.items():
            if config.get(key, value) != value:
                raise ValueError(f"config.json: {key} is {config.get(key)!r}, expected {value!r}")
        shape = cls(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=int(config["hidden_size"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
        if shape.hidden % shape.heads:
            raise ValueError(
                f"config.json: hidden_size {shape.hidden} is not a multiple of "
                f"num_attention_heads {shape.heads}"
            )
        return shape


def load_weights(weights: Path) -> tuple[BertShape, dict[str, np.ndarray]]:
    """The config and the tensors (numpy, float32) of a sentence-transformers BERT folder."""
    from safetensors.numpy import load_file

    config = json.loads((weights / "config.json").read_text(encoding="utf-8"))
    tensors = load_file(str(weights / "model.safetensors"))
    # Some exports prefix every name with the model's attribute name ("bert.").
    if not any(name.startswith("embeddings.") for name in tensors):
        tensors = {name.removeprefix("bert."): tensor for name, tensor in tensors.items()}
    return BertShape.from_config(config), tensors


class _GraphBuilder:
    """Nodes and initializers in the order they are added (which is topological)."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self._tensors = tensors
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def tensor(self, name: str) -> np.ndarray:
        try:
            return self._tensors[name]
        except KeyError:
            raise ValueError(f"model.safetensors has no tensor {name!r}") from None

    def weight(self, name: str, transpose: bool = False) -> str:
        """A tensor of the weights file as an initializer; torch's Linear keeps [out, in],
        a MatMul wants [in, out]."""
        tensor = self.tensor(name)
        return self.constant(name, tensor.T if transpose else tensor)

    def constant(self, name: str, tensor: np.ndarray) -> str:
        array = np.ascontiguousarray(tensor, dtype=np.float32)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], **attrs: Any) -> list[str]:
        domain = "" if op in ("Cast", "MatMul") else MS_DOMAIN
        name = f"{op}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, inputs, outputs, name, domain=domain, **attrs))
        return outputs


def build(weights: Path) -> onnx.ModelProto:
    """The fused encoder graph for the BERT weights in `weights` (config.json and
    model.safetensors)."""
    shape, tensors = load_weights(weights)
    g = _GraphBuilder(tensors)
    eps = shape.layer_norm_eps
    ids, mask, types = (
        g.node("Cast", [name], [f"{name}_int32"], to=TensorProto.INT32)[0] for name in INPUT_NAMES
    )
    hidden, mask_index = g.node(
        "EmbedLayerNormalization",
        [
            ids,
            types,
            g.weight("embeddings.word_embeddings.weight"),
            g.weight("embeddings.position_embeddings.weight"),
            g.weight("embeddings.token_type_embeddings.weight"),
            g.weight("embeddings.LayerNorm.weight"),
            g.weight("embeddings.LayerNorm.bias"),
            mask,
        ],
        ["embeddings", "mask_index"],
        epsilon=eps,
    )
    for i in range(shape.layers):
        hidden = _layer(g, f"encoder.layer.{i}", hidden, mask_index, shape)
    g.nodes[-1].output[0] = OUTPUT_NAME

    def dims(*last: int | str) -> list[int | str]:
        return ["batch", "tokens", *last]

    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims()) for n in INPUT_NAMES],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, dims(shape.hidden))],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)],
        producer_name="memory-mcp",
    )
    model.ir_version = IR_VERSION
    return model


def _layer(g: _GraphBuilder, prefix: str, x: str, mask_index: str, shape: BertShape) -> str:
    """One encoder layer: self-attention, then the feed-forward block, each closed by
    its output projection, residual and layer norm (`_output`)."""
    attention = f"{prefix}.attention"
    qkv = [f"{attention}.self.{part}" for part in ("query", "key", "value")]
    qkv_weight = g.constant(
        f"{attention}.qkv.weight",
        np.concatenate([g.tensor(f"{p}.weight").T for p in qkv], axis=1),
    )
    qkv_bias = g.constant(
        f"{attention}.qkv.bias", np.concatenate([g.tensor(f"{p}.bias") for p in qkv])
    )
    (context,) = g.node(
        "Attention",
        [x, qkv_weight, qkv_bias, mask_index],
        [f"{attention}.context"],
        num_heads=shape.heads,
    )
    x = _output(g, f"{attention}.output", context, x, shape.layer_norm_eps)
    (up,) = g.node(
        "MatMul",
        [x, g.weight(f"{prefix}.intermediate.dense.weight", transpose=True)],
        [f"{prefix}.intermediate.dense"],
    )
    (activated,) = g.node(
        "BiasGelu",
        [up, g.weight(f"{prefix}.intermediate.dense.bias")],
        [f"{prefix}.intermediate.gelu"],
    )
    return _output(g, f"{prefix}.output", activated, x, shape.layer_norm_eps)


def _output(g: _GraphBuilder, prefix: str, x: str, residual: str, eps: float) -> str:
    """BERT's SelfOutput / Output: a projection without its bias, then one
    SkipLayerNormalization for bias + residual + layer norm."""
    (projected,) = g.node(
        "MatMul", [x, g.weight(f"{prefix}.dense.weight", transpose=True)], [f"{prefix}.dense"]
    )
    (out,) = g.node(
        "SkipLayerNormalization",
        [
            projected,
            residual,
            g.weight(f"{prefix}.LayerNorm.weight"),
            g.weight(f"{prefix}.LayerNorm.bias"),
            g.weight(f"{prefix}.dense.bias"),
        ],
        [prefix],
        epsilon=eps,
    )
    return out
