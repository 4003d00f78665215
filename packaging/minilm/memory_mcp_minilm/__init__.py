"""all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0) for memory-mcp: the weights as
safetensors, the tokenizer and the sentence-transformers configuration, read from disk.
Nothing here runs them: memory-mcp builds an ONNX graph from these files
(memory_mcp/semantic/onnx_model.py)."""

from pathlib import Path

__version__ = "1.1.0"
MODEL_DIR = Path(__file__).resolve().parent / "model"


def model_path() -> Path:
    """The folder holding model.safetensors, config.json and tokenizer.json."""
    return MODEL_DIR
