"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) for memory-mcp: the model as an
ONNX graph ready for ONNX Runtime (built from the weights when this wheel was built), the
tokenizer and the sentence-transformers configuration, read from disk. Nothing here runs
them: memory-mcp does (memory_mcp/semantic/onnx_model.py), after checking the graph's
SHA-256 against the one it pins."""

from pathlib import Path

__version__ = "1.1.0"
MODEL_DIR = Path(__file__).resolve().parent / "model"
GRAPH_FILE = "model.onnx"


def model_path() -> Path:
    """The folder holding the graph, config.json and tokenizer.json."""
    return MODEL_DIR


def graph_path() -> Path:
    """The ONNX graph (inputs input_ids, attention_mask, token_type_ids; output
    last_hidden_state), built by memory-mcp's packaging/minilm_wheel.py."""
    return MODEL_DIR / GRAPH_FILE
