"""A team server (`memory-mcp serve --transport streamable-http`) indexes only the memory
folders named for it, on its command line or in its settings: never the default personal
folder of whoever runs it, whose notes would otherwise land in the team's store. A stdio
server keeps indexing its default folder (tests/notes/test_notes_watcher.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from tests.http.team_server import TeamServer, running, stored_keys

DEADLINE_SECONDS = 120.0  # a busy 2-core machine; normally a second or two


def operator_env(tmp: Path) -> dict[str, str]:
    """An operator's environment: a HOME of its own, and no MEMORY_MCP_* variable (so no
    folder is named unless a test names one)."""
    env = dict(os.environ)  # no MEMORY_MCP_* variable: tests/conftest.py
    env.update(
        HOME=str(tmp / "home"),
        XDG_DATA_HOME=str(tmp / "xdg-data"),
        XDG_CONFIG_HOME=str(tmp / "xdg-config"),
        HF_HUB_OFFLINE="1",
    )
    return env


def personal_note(tmp: Path) -> Path:
    """A note in the default personal folder (<data dir>/memory) of that operator."""
    note = tmp / "xdg-data" / "memory-mcp" / "memory" / "diary.md"
    note.parent.mkdir(parents=True)
    note.write_text("# Diary\nThe operator's own note about the quetzal migration.")
    return note


def watcher_settled(server: TeamServer) -> str:
    """The watcher's last word once its start-up is done: "watching no memory folder",
    or "watching memory folders: ..." after it indexed them."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        for line in server.log.splitlines():
            if "watching no memory folder" in line or "watching memory folders" in line:
                return line
        time.sleep(0.2)
    raise AssertionError(f"the watcher never finished starting:\n{server.log}")


def note_keys(db: Path) -> list[str]:
    return [key for key in anyio.run(stored_keys, db) if key.startswith("file:")]


def test_the_default_personal_folder_is_not_indexed_into_the_team_store(tmp_path: Path) -> None:
    """Before: 'memory folder .../memory-mcp/memory: 1 notes indexed' into the team store."""
    personal_note(tmp_path)
    db = tmp_path / "team.db"
    with running(tmp_path, "streamable-http", db, env=operator_env(tmp_path)) as server:
        settled = watcher_settled(server)
        assert "watching no memory folder" in settled, settled
        assert "not the default" in server.log  # it says why
        # Issue 35: this line was logged twice at start (the token check opens the app too).
        lines = [line.split(" ", 2)[-1] for line in server.log.splitlines() if " INFO " in line]
        assert len(lines) == len(set(lines)), server.log
    assert note_keys(db) == []


def test_a_folder_named_on_the_command_line_is_indexed(tmp_path: Path) -> None:
    note = personal_note(tmp_path)
    db = tmp_path / "team.db"
    env = operator_env(tmp_path)
    with running(
        tmp_path, "streamable-http", db, "--memory-dir", str(note.parent), env=env
    ) as server:
        settled = watcher_settled(server)  # after its start-up reconcile
        assert str(note.parent) in settled, settled
    keys = note_keys(db)
    # Keyed by the note's path inside the folder: no home folder in a key.
    assert keys and all(key.startswith("file:diary.md#") for key in keys), keys


def test_a_shared_folder_named_in_the_settings_file_is_indexed(tmp_path: Path) -> None:
    personal_note(tmp_path)  # still left alone: only the named folder is the team's
    shared = tmp_path / "team-notes"
    shared.mkdir()
    (shared / "runbook.md").write_text("# Runbook\nRestart the zephyr daemon on failure.")
    config = tmp_path / "xdg-config" / "memory-mcp" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'shared_memory_dir = "{shared}"\n')
    db = tmp_path / "team.db"
    with running(tmp_path, "streamable-http", db, env=operator_env(tmp_path)) as server:
        settled = watcher_settled(server)
        assert str(shared) in settled, settled
    keys = note_keys(db)
    assert keys and all(key.startswith("file:runbook.md#") for key in keys), keys
