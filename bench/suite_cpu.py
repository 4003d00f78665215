"""`python -m bench fast --suite BEFORE AFTER`: the test suite's CPU time at two revisions.

Each revision is checked out in a temporary shared clone (`git clone --shared`: it only
reads the repository's objects, so the user's checkout, branches and worktree list are never
touched, and a killed run leaves nothing behind but a temporary folder), set up there with
`make install-dev model` (not timed; its output to a log file), then `make test` is run there
as a user runs it (lint and type checks included) and measured: its CPU seconds as user +
system time of the whole process tree, from this process's children's rusage around it
(`/usr/bin/time` counts the same way; a process that detaches from the tree, such as a
daemonised database server, is counted by neither), its wall time, the tests passed as
pytest's last line says, and the load average before and after. The clone is removed
afterwards, also when a step fails."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stats import table

# pytest's last line: "3 failed, 1622 passed in 491.21s".
SUMMARY = re.compile(r"^(?:=+ )?(?:(\d+) failed, )?(\d+) passed\b.* in [\d.]+s\b", re.MULTILINE)
# Variables a `make` that started this process would hand down (its job server's pipes).
MAKE_VARIABLES = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")


@dataclass
class SuiteRun:
    revision: str
    commit: str
    passed: int
    failed: int
    user_s: float
    system_s: float
    wall_s: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.system_s

    @property
    def cpu_per_test_s(self) -> float:
        return self.cpu_s / max(1, self.passed + self.failed)


def resolve(repo: Path, revision: str) -> str:
    """The commit `revision` names in `repo`, or a clear error naming it."""
    done = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"memory-mcp: {revision!r} is not a revision of {repo}")
    return done.stdout.strip()


def _environment() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MEMORY_MCP_") and k not in MAKE_VARIABLES
    }


def _make(
    targets: list[str],
    checkout: Path,
    log: Path,
    revision: str,
    commit: str,
    ran: Callable[[str], bool] = lambda _: False,
) -> str:
    """`make targets` in `checkout`, its output in `log` and returned; a failure stops the
    bench unless `ran(output)` says the make got as far as the measure needs."""
    with open(log, "wb") as out:
        done = subprocess.run(
            ["make", *targets],
            cwd=checkout,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    output = log.read_text(encoding="utf-8", errors="replace")
    if done.returncode != 0 and not ran(output):
        tail = output.strip().splitlines()[-5:]
        raise SystemExit(
            f"memory-mcp: `make {' '.join(targets)}` failed at revision {revision} "
            f"({commit[:12]}), exit {done.returncode}; its output: {log}\n" + "\n".join(tail)
        )
    return output


def measure_suite(
    repo: Path,
    revision: str,
    logs: Path,
    say: Callable[[str], None],
    scratch: Path | None = None,
) -> SuiteRun:
    """`make test` at `revision` of `repo`, in a shared clone under `scratch` (default: the
    system's temporary folder); the two makes' output in `logs`."""
    commit = resolve(repo, revision)
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-suite-", dir=scratch) as folder:
        checkout = Path(folder) / "checkout"
        for command in (
            ["git", "clone", "--quiet", "--shared", "--no-checkout", str(repo), str(checkout)],
            ["git", "-C", str(checkout), "checkout", "--quiet", "--detach", commit],
        ):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(
                    f"memory-mcp: cannot check out revision {revision} ({commit[:12]}): "
                    f"{done.stderr.strip()}"
                )
        say(f"suite at {revision} ({commit[:12]}): make install-dev model")
        _make(
            ["install-dev", "model"],
            checkout,
            logs / f"{commit[:12]}-install.log",
            revision,
            commit,
        )
        say(f"suite at {revision} ({commit[:12]}): make test")
        log = logs / f"{commit[:12]}-test.log"
        load_before = os.getloadavg()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        # Tests that fail are counted and shown, not a reason to throw the run away: the
        # suite ran whole (a revision's test may depend on the machine it ran on then).
        output = _make(
            ["test"], checkout, log, revision, commit, ran=lambda out: bool(SUMMARY.search(out))
        )
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        load_after = os.getloadavg()
    counts = SUMMARY.findall(output)
    if not counts:
        raise SystemExit(
            f"memory-mcp: `make test` at revision {revision} ({commit[:12]}) printed no "
            f"'N passed' line; its output: {log}"
        )
    failed, passed = counts[-1]
    run = SuiteRun(
        revision,
        commit,
        int(passed),
        int(failed or 0),
        after.ru_utime - before.ru_utime,
        after.ru_stime - before.ru_stime,
        wall,
        load_before,
        load_after,
    )
    say(
        f"suite at {revision}: {run.passed} passed, {run.failed} failed, CPU {run.cpu_s:.1f} s, "
        f"wall {run.wall_s:.1f} s, load {load_before[0]:.2f} -> {load_after[0]:.2f}"
    )
    return run


def measure_suites(
    repo: Path,
    revisions: Sequence[str],
    logs: Path,
    say: Callable[[str], None],
    scratch: Path | None = None,
) -> list[SuiteRun]:
    """Each revision in order, one after the other (never side by side: they would share
    the cores). Every revision is resolved first, so a typo fails before a long run."""
    for revision in revisions:
        resolve(repo, revision)
    return [measure_suite(repo, revision, logs, say, scratch) for revision in revisions]


def change(before: float, after: float) -> str:
    return f"{(after - before) / before:+.0%}" if before else "n/a"


def render(runs: Sequence[SuiteRun]) -> str:
    rows: list[list[object]] = [
        [
            f"{run.revision} ({run.commit[:12]})",
            f"{run.passed}" + (f" ({run.failed} failed)" if run.failed else ""),
            f"{run.cpu_s:.1f}",
            f"{run.cpu_per_test_s:.3f}",
            f"{run.wall_s:.0f}",
            f"{run.load_before[0]:.2f} -> {run.load_after[0]:.2f}",
        ]
        for run in runs
    ]
    if len(runs) == 2:
        first, last = runs
        rows.append(
            [
                "change, after / before",
                f"{last.passed - first.passed:+d}",
                change(first.cpu_s, last.cpu_s),
                change(first.cpu_per_test_s, last.cpu_per_test_s),
                change(first.wall_s, last.wall_s),
                "",
            ]
        )
    return table(
        [
            "make test at revision",
            "tests passed",
            "CPU s (user+sys)",
            "CPU s per test",
            "wall s",
            "load (1 min)",
        ],
        rows,
    )


def summary(runs: Sequence[SuiteRun]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "runs": [
            {
                "revision": run.revision,
                "commit": run.commit,
                "passed": run.passed,
                "failed": run.failed,
                "user_s": round(run.user_s, 1),
                "system_s": round(run.system_s, 1),
                "cpu_s": round(run.cpu_s, 1),
                "cpu_per_test_s": round(run.cpu_per_test_s, 4),
                "wall_s": round(run.wall_s, 1),
                "load_before": list(run.load_before),
                "load_after": list(run.load_after),
            }
            for run in runs
        ]
    }
    if len(runs) == 2 and runs[0].cpu_s:
        first, last = runs
        result["cpu_change"] = round(last.cpu_s / first.cpu_s - 1, 4)
        result["cpu_per_test_change"] = round(last.cpu_per_test_s / first.cpu_per_test_s - 1, 4)
    return result
