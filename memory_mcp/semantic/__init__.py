"""Meaning: the embedders and the ONNX model, passages, the vectors component and its
in-process index, and near-duplicates by vector."""
