"""`bench fast`'s opt-in parts that are not timed against the model: the suite's CPU time at
two revisions (bench/suite_cpu.py), on a fake repository whose Makefile stands in for the
real one (the real `make test` takes 10-40 minutes), and the options' checks. The scale
part is tested with bench scale's data, in tests/bench/test_bench_scale.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench import suite_cpu
from bench.command import main as bench_main
from bench.fast_paths import FastReport

# A fake of the repository's Makefile: setup targets that only say so, and a `make test`
# that burns a little CPU in a shell loop and ends as pytest -q ends.
FAKE_MAKEFILE = """\
install-dev:
\t@echo fake install-dev
model:
\t@echo fake model
test:
\t@echo "fake lint: All checks passed!"
\t@i=0; while [ $$i -lt {loops} ]; do i=$$((i+1)); done; echo "{passed} passed in 0.01s"
"""
# A suite whose tests ran, some failing: measured, its failures shown.
FAILED_TESTS_MAKEFILE = """\
install-dev model:
\t@echo fake setup
test:
\t@echo "1 failed, 2 passed in 0.01s"; exit 1
"""
# A make that stops before any test (lint): no measure, the bench stops.
FAILING_MAKEFILE = """\
install-dev model:
\t@echo fake setup
test:
\t@echo "fake lint: 1 error"; exit 2
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=fake", "-c", "user.email=fake@example.com"]
        + list(args),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(repo: Path, makefile: str, tag: str) -> None:
    (repo / "Makefile").write_text(makefile)
    git(repo, "add", "Makefile")
    git(repo, "commit", "-q", "-m", tag)
    git(repo, "tag", tag)


@pytest.fixture
def fake_repo(tmp_path: Path) -> Path:
    """A repository of four revisions: `before` (3 tests), `after` (5), `failing` (2
    passed, 1 failed) and `broken` (stops before its tests)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, FAKE_MAKEFILE.format(loops=40_000, passed=3), "before")
    commit(repo, FAKE_MAKEFILE.format(loops=20_000, passed=5), "after")
    commit(repo, FAILED_TESTS_MAKEFILE, "failing")
    commit(repo, FAILING_MAKEFILE, "broken")
    return repo


def untouched(repo: Path) -> tuple[str, str, str]:
    return (
        git(repo, "worktree", "list", "--porcelain"),
        git(repo, "status", "--porcelain"),
        git(repo, "rev-parse", "HEAD"),
    )


def test_suite_cpu_measures_make_test_at_each_revision_in_a_clone_it_removes(
    fake_repo: Path, tmp_path: Path
) -> None:
    state = untouched(fake_repo)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    said: list[str] = []
    runs = suite_cpu.measure_suites(
        fake_repo, ["before", "after"], tmp_path / "logs", said.append, scratch
    )
    assert [run.revision for run in runs] == ["before", "after"]
    assert [run.passed for run in runs] == [3, 5]
    assert runs[0].commit == git(fake_repo, "rev-parse", "before")
    for run in runs:
        assert run.cpu_s > 0 and run.wall_s > 0
        assert run.cpu_per_test_s == pytest.approx(run.cpu_s / run.passed)
        assert all(load >= 0 for load in run.load_before + run.load_after)
        assert "fake model" in (tmp_path / "logs" / f"{run.commit[:12]}-install.log").read_text()
    assert list(scratch.iterdir()) == []  # the clones are gone
    assert untouched(fake_repo) == state
    assert any("make test" in line for line in said)

    text = suite_cpu.render(runs)
    assert "before (" in text and "after (" in text and "change, after / before" in text
    expected = f"{runs[1].cpu_s / runs[0].cpu_s - 1:+.0%}"
    assert expected in text.splitlines()[-1]
    summary = suite_cpu.summary(runs)
    assert [r["passed"] for r in summary["runs"]] == [3, 5]
    assert summary["cpu_per_test_change"] == pytest.approx(
        runs[1].cpu_per_test_s / runs[0].cpu_per_test_s - 1, abs=1e-4
    )

    # Beside the other parts of `bench fast`, in its table and its JSON.
    report = FastReport((0.1, 0.2, 0.3), (0.1, 0.2, 0.3), [], {}, {}, 0, "43", suite=runs)
    assert "CPU s (user+sys)" in report.render()
    assert report.summary()["suite"]["runs"][1]["revision"] == "after"


def test_suite_cpu_names_the_revision_whose_make_test_fails(
    fake_repo: Path, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(SystemExit, match=r"`make test` failed at revision broken \(") as failed:
        suite_cpu.measure_suites(fake_repo, ["before", "broken"], tmp_path / "logs", print, scratch)
    assert "fake lint: 1 error" in str(failed.value)  # the log's tail
    assert list(scratch.iterdir()) == []  # removed on failure too


def test_suite_cpu_measures_a_suite_whose_tests_fail_and_shows_it(
    fake_repo: Path, tmp_path: Path
) -> None:
    (run,) = suite_cpu.measure_suites(fake_repo, ["failing"], tmp_path / "logs", print)
    assert (run.passed, run.failed) == (2, 1)
    assert "2 (1 failed)" in suite_cpu.render([run])
    assert suite_cpu.summary([run])["runs"][0]["failed"] == 1


def test_suite_cpu_refuses_an_unknown_revision_before_running_any(
    fake_repo: Path, tmp_path: Path
) -> None:
    with pytest.raises(SystemExit, match="'no-such-tag' is not a revision"):
        suite_cpu.measure_suites(fake_repo, ["before", "no-such-tag"], tmp_path / "logs", print)
    assert not (tmp_path / "logs").exists()  # `before` was not run


def test_bench_fast_wants_both_scale_folders(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="--scale-data and --scale-workdir together"):
        bench_main(["fast", str(tmp_path), "--scale-data", str(tmp_path)])
