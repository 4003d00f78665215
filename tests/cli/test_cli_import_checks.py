"""`memory-mcp import` checks a whole file before storing anything: store_memory's rules on
every line, the per-agent cap, and Ctrl-C stops it cleanly with a count."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import pytest

from memory_mcp.app import root as app_module
from memory_mcp.cli.main import main
from memory_mcp.settings import Settings
from tests.conftest import FakeEmbedder, opened

EXE = str(Path(sys.executable).with_name("memory-mcp"))

GOOD: list[dict[str, object]] = [
    {"key": "deploy", "value": "Deploys use blue-green switching"},
    {"key": "reviews", "value": "Two reviewers per change", "scope": "swarm"},
]
BAD: list[tuple[dict[str, object], str]] = [
    ({"key": "", "value": "no key"}, "invalid key"),
    ({"key": "where", "value": "far away", "scope": "planet"}, "invalid scope"),
    ({"key": "creds AKIAZ3MJQ7P2XW5KTR4N", "value": "a key is a name"}, "aws-access-token"),
    ({"key": "soon", "value": "gone soon", "ttl_seconds": -5}, "invalid ttl_seconds"),
]


@pytest.fixture(autouse=True)
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about what gets stored, not about meaning: the CLI gets the FAKE
    embedder instead of loading the real model in-process."""
    monkeypatch.setattr(app_module, "embedder_from", lambda _settings: FakeEmbedder())
    for name in list(os.environ):
        if name.startswith("MEMORY_MCP_"):
            monkeypatch.delenv(name)


def write_jsonl(path: Path, lines: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def stored_keys(tmp_path: Path) -> list[str]:
    async def read() -> list[str]:
        settings = Settings(db=str(tmp_path / "m.db"), data_dir=tmp_path, watch=False)
        async with opened(settings) as app:
            return sorted([r.key async for r in app.service.store.iter_records()])

    return anyio.run(read)


def test_one_bad_line_stores_nothing_and_every_bad_line_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], *[b for b, _ in BAD], GOOD[1]])
    assert main(["import", str(source), "--db", str(tmp_path / "m.db")]) == 1
    err = capsys.readouterr().err
    for number, (_, reason) in enumerate(BAD, start=2):
        line = next(x for x in err.splitlines() if f": line {number}:" in x)
        assert reason in line, (number, line)
    assert "nothing imported: 4 bad lines" in err
    assert "Traceback" not in err
    assert stored_keys(tmp_path) == []


def test_skip_invalid_stores_the_good_lines_and_still_reports_the_bad(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], *[b for b, _ in BAD], GOOD[1]])
    db = str(tmp_path / "m.db")
    assert main(["import", str(source), "--db", db, "--skip-invalid"]) == 0
    err = capsys.readouterr().err
    assert all(f": line {n}:" in err for n in range(2, 6))
    assert "imported 2 memories (0 unchanged, 4 bad lines skipped, 0 refused" in err
    assert stored_keys(tmp_path) == ["deploy", "reviews"]


def test_an_import_past_the_cap_is_refused_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_MCP_MAX_MEMORIES_PER_AGENT", "5")
    db = str(tmp_path / "m.db")
    first = [{"key": f"old-{i}", "value": f"old memory {i}"} for i in range(3)]
    assert main(["import", str(write_jsonl(tmp_path / "a.jsonl", first)), "--db", db]) == 0
    capsys.readouterr()

    more = [{"key": f"new-{i}", "value": f"new memory {i}"} for i in range(3)]
    source = write_jsonl(tmp_path / "b.jsonl", first + more)
    assert main(["import", str(source), "--db", db]) == 1
    err = capsys.readouterr().err
    assert "would hold 6 memories (3 stored + 3 new in this file), over its cap of 5" in err
    assert stored_keys(tmp_path) == ["old-0", "old-1", "old-2"], "nothing evicted or added"

    # Lines that update memories already stored take no room: 3 + 2 new fits a cap of 5.
    source = write_jsonl(tmp_path / "c.jsonl", first + more[:2])
    assert main(["import", str(source), "--db", db]) == 0
    assert stored_keys(tmp_path) == ["new-0", "new-1", "old-0", "old-1", "old-2"]


def test_ctrl_c_during_import_says_how_far_it_got_and_a_rerun_finishes(
    tmp_path: Path,
) -> None:
    """A real process and a real SIGINT, with the real model."""
    # Three embedding batches (transfer/batches.EMBED_BATCH_TEXTS), so Ctrl-C, sent when
    # the embedding starts, lands before the last one (before the first, or after it,
    # in every run tried). Four (1,000 texts) cost the two runs ~0.8 s more embedding.
    lines = [
        {"key": f"fact-{i}", "value": f"Fact number {i} about subsystem {i % 37}"}
        for i in range(600)
    ]
    source = write_jsonl(tmp_path / "big.jsonl", lines)
    command = [EXE, "import", str(source), "--db", str(tmp_path / "m.db")]
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert process.stderr is not None
    seen = ""
    deadline = time.monotonic() + 240
    while "stored 600 memories; embedding" not in seen:  # all written, now embedding
        assert time.monotonic() < deadline, seen
        assert process.poll() is None, seen + process.stderr.read()
        seen += process.stderr.readline()
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    err = seen + rest
    assert process.returncode == 130, err
    assert "interrupted: stored 600, embedded " in err
    assert "run again to finish" in err
    assert "Traceback" not in err
    assert "KeyboardInterrupt" not in err

    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "imported 0 memories (600 unchanged, 0 bad lines skipped, 0 refused" in again.stderr
