"""Helper threads that spin after their work would take the CPU a search needs (see
memory_mcp/__init__.py and semantic/onnx_embedder.py): the process turns them off unless the user
has chosen otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SHOW = (
    "import memory_mcp.semantic.onnx_embedder, os; "
    "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['TOKENIZERS_PARALLELISM'])"
)


def _run(**env: str) -> list[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM")
    }
    out = subprocess.run(
        [sys.executable, "-c", SHOW],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def test_blas_and_tokenizer_threads_are_off_by_default() -> None:
    assert _run() == ["1", "false"]


@pytest.mark.parametrize(
    ("name", "value", "position"),
    [("OPENBLAS_NUM_THREADS", "4", 0), ("TOKENIZERS_PARALLELISM", "true", 1)],
)
def test_a_users_own_setting_is_kept(name: str, value: str, position: int) -> None:
    assert _run(**{name: value})[position] == value
