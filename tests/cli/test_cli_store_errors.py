"""A bad --db is one clear line on stderr and a non-zero exit, never a traceback: in
process for each kind, and once as a real process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp.cli.main import main

EXE = str(Path(sys.executable).with_name("memory-mcp"))


@pytest.mark.parametrize(
    ("db", "message"),
    [
        ("notes.txt", "file is not a database"),
        ("mysql://user@host/memories", "not supported"),
        ("/proc/no-such-dir/memory.db", "does not exist"),
        (".", "is a folder"),
    ],
)
def test_serve_refuses_a_bad_database_clearly(
    db: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "notes.txt").write_text("plain text, not SQLite\n" * 200)
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--db", db, "--no-watch"]) == 1
    out, err = capsys.readouterr()
    assert message in err
    assert out == ""
    assert (tmp_path / "notes.txt").read_text().startswith("plain text"), "left untouched"


def test_a_serve_process_refuses_a_bad_database_clearly(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("plain text, not SQLite\n" * 200)
    db, message = "notes.txt", "file is not a database"
    result = subprocess.run(
        [EXE, "serve", "--db", db, "--no-watch"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert (tmp_path / "notes.txt").read_text().startswith("plain text"), "left untouched"
