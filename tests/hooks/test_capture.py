"""Conversations captured and recalled by the Claude Code hooks, run the way Claude Code
runs them: the real scripts in hooks/, a process each, JSON on stdin with `cwd` and
`transcript_path`, in git work trees, with a home of their own (no MEMORY_MCP_DB: the store
is the default one under that home). A session's messages are stored once however often
the hooks read its transcript; a later prompt about something said gets that message, and
another repository's prompt gets nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_mcp.models import MemoryRecord
from memory_mcp.settings import Settings
from tests.conftest import opened

if sys.platform == "win32":  # pragma: no cover - the hooks are POSIX shell scripts
    pytest.skip("POSIX only", allow_module_level=True)

HOOKS = Path(__file__).resolve().parents[2] / "hooks"
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"  # a real-shaped fake
SESSION = "5d1c7e2a-0b9f-4c61-9a57-3f0e6a2b8c41"

LEDGER = (
    "Let's keep the invoices in the Quixotic ledger format, version 3: the auditors in "
    "Lisbon only accept that one."
)
SAID = [  # (role, text): what the people in the session said, in order
    ("user", LEDGER),
    ("assistant", "Understood. I will convert the exporter in billing/export.py to it."),
    ("user", f"Use my token {GITHUB_TOKEN} to push the branch when you are done."),
    ("assistant", "I will not store or reuse credentials; push from your own shell instead."),
    ("user", "The nightly job should run at 02:30 so it finishes before the backups start."),
    ("assistant", "Scheduled the nightly job for 02:30 in the cron table of the worker host."),
    ("user", "Rename the staging bucket to acme-staging-eu before Friday's release."),
    ("assistant", "Renamed the bucket and updated the Terraform variables that name it."),
]


STARTED = time.time() - 600  # the session's first line; a transcript's lines keep their times


def _event(role: str, text: str, index: int, cwd: Path) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(STARTED + index))
    event: dict[str, Any] = {
        "type": role,
        "uuid": f"uuid-{index}",
        "sessionId": SESSION,
        "cwd": str(cwd),
        "timestamp": stamp,
    }
    if role == "user":
        event["message"] = {"role": "user", "content": text}
    else:
        content = [{"type": "text", "text": text}]
        event["message"] = {"id": f"msg_{index}", "role": "assistant", "content": content}
    return event


def write_transcript(path: Path, cwd: Path, said: list[tuple[str, str]]) -> None:
    """Claude Code's transcript of `said`, with what is not a person's words between."""
    events: list[dict[str, Any]] = [{"type": "summary", "summary": "Invoices", "leafUuid": "x"}]
    for index, (role, text) in enumerate(said):
        events.append(_event(role, text, index, cwd))
        if index == 1:  # the assistant's tool call (same message id) and its output
            tool_use = _event("assistant", "", index, cwd)
            tool_use["message"]["content"] = [
                {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "x.py"}}
            ]
            events.append(tool_use)
            result = _event("user", "", 100 + index, cwd)
            result["message"]["content"] = [
                {"type": "tool_result", "tool_use_id": "t1", "content": "TOOL-OUTPUT-MARKER"}
            ]
            events.append(result)
            subagent = _event("user", "SUBAGENT-MARKER talking to itself", 200 + index, cwd)
            events.append({**subagent, "isSidechain": True})
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    """Two git work trees and a home of their own; the hooks' environment."""
    repos = {}
    for name in ("ledger-app", "other-app"):
        repo = tmp_path / name
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        repos[name] = repo
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORY_MCP_")}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CONFIG_HOME=str(home / ".config"),
        MEMORY_MCP_MEMORY_DIR=str(tmp_path / "notes"),
        # What a slow machine's settings would say: this one is shared, and the
        # SessionEnd hook opens the whole store (~1 s quiet, past 8 s at a load of 13).
        MEMORY_MCP_HOOK_BUDGET_SECONDS="60",
    )
    return {"repos": repos, "home": home, "env": env, "transcript": tmp_path / f"{SESSION}.jsonl"}


def run_hook(script: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [str(HOOKS / script)],
        input=json.dumps(payload),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )
    assert done.returncode == 0
    assert done.stderr == "", done.stderr
    return done.stdout


def end_of_session(world: dict[str, Any], script: str = "session-end") -> None:
    repo = world["repos"]["ledger-app"]
    payload = {
        "session_id": SESSION,
        "transcript_path": str(world["transcript"]),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "PreCompact" if script == "pre-compact" else "SessionEnd",
        "reason": "exit",
        "trigger": "auto",
    }
    run_hook(script, payload, world["env"], repo)


def prompt(world: dict[str, Any], repo: str, text: str) -> str:
    """The block the prompt hook adds to the context in `repo` ("" for none)."""
    cwd = world["repos"][repo]
    payload = {
        "session_id": "later-session",
        "transcript_path": str(cwd / "later.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }
    out = run_hook("user-prompt", payload, world["env"], cwd)
    if not out.strip():
        return ""
    output = json.loads(out)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    return str(output["additionalContext"])


def stored(world: dict[str, Any]) -> list[MemoryRecord]:
    database = world["home"] / ".local" / "share" / "memory-mcp" / "memory.db"
    settings = Settings(db=str(database), data_dir=database.parent, memory_dir=world["home"])

    async def read() -> list[MemoryRecord]:
        async with opened(settings) as app:
            return [r async for r in app.service.store.iter_records()]

    return anyio.run(read)


def conversation(records: list[MemoryRecord]) -> list[MemoryRecord]:
    return [r for r in records if r.key.startswith("conversation:")]


def test_a_session_is_captured_once_and_recalled_in_its_repository_only(
    world: dict[str, Any],
) -> None:
    repo = world["repos"]["ledger-app"]
    write_transcript(world["transcript"], repo, SAID[:4])
    end_of_session(world, "pre-compact")  # Claude Code compacts a long session
    write_transcript(world["transcript"], repo, SAID)  # it went on, then ended
    end_of_session(world)
    end_of_session(world)  # and again: nothing new

    messages = conversation(stored(world))
    assert len(messages) == len(SAID), [m.key for m in messages]
    assert all(m.version == 1 for m in messages), "stored once, never rewritten"
    texts = [m.value for m in sorted(messages, key=lambda m: m.id)]
    assert texts[0] == LEDGER
    assert texts[1] == SAID[1][1], "the tool call is not part of the message"
    assert "[REDACTED:github-pat]" in texts[2] and "ghp_" not in texts[2]
    everything = " ".join(m.value for m in messages)
    assert "TOOL-OUTPUT-MARKER" not in everything and "SUBAGENT-MARKER" not in everything
    ledger = messages[0] if messages[0].value == LEDGER else None
    assert ledger is not None
    assert ledger.project.startswith("ledger-app-"), ledger.project
    assert ledger.metadata["role"] == "user" and ledger.metadata["session_id"] == SESSION
    assert ledger.expires_at is not None
    assert 29.9 * 86_400 < ledger.expires_at - time.time() < 30.1 * 86_400

    block = prompt(world, "ledger-app", "Which ledger format do the Lisbon auditors accept?")
    memories = ET.fromstring(block).findall("memory")
    assert memories, block
    first = memories[0]
    assert first.text == LEDGER
    assert first.attrib["turn"] == "user" and first.attrib["session"] == SESSION
    assert first.attrib["said"][:4] == time.strftime("%Y", time.gmtime())

    assert prompt(world, "other-app", "Which ledger format do the Lisbon auditors accept?") == ""
    assert prompt(world, "ledger-app", "How do I center a div with CSS flexbox?") == ""
    assert prompt(world, "ledger-app", "/compact") == ""


def test_capture_is_off_with_one_setting(world: dict[str, Any]) -> None:
    repo = world["repos"]["ledger-app"]
    write_transcript(world["transcript"], repo, SAID)
    world["env"]["MEMORY_MCP_CAPTURE_CONVERSATIONS"] = "false"
    end_of_session(world)
    records = stored(world)
    assert conversation(records) == []
    assert [r.key for r in records] == [f"session-summary:{SESSION}"], "the summary stays"
    del world["env"]["MEMORY_MCP_CAPTURE_CONVERSATIONS"]  # on by default
    end_of_session(world)
    assert len(conversation(stored(world))) == len(SAID)


@pytest.mark.parametrize(
    ("setting", "value", "days"),
    [
        ("MEMORY_MCP_TTL_KIND_DAYS", '{"conversation": 14}', 14.0),
        # The older name still sets the line; 0 keeps them for good (it fell back to the
        # table's 30 days while two settings owned the lifetime).
        ("MEMORY_MCP_TTL_CONVERSATION_DAYS", "0", None),
    ],
)
def test_how_long_a_conversation_is_kept_is_the_kind_table_s(
    world: dict[str, Any], setting: str, value: str, days: float | None
) -> None:
    repo = world["repos"]["ledger-app"]
    write_transcript(world["transcript"], repo, SAID[:2])
    world["env"][setting] = value
    end_of_session(world)
    messages = conversation(stored(world))
    assert len(messages) == 2
    for message in messages:
        if days is None:
            assert message.expires_at is None
        else:
            assert message.expires_at is not None
            kept = message.expires_at - message.created_at
            assert days * 86_400 - 5 < kept < days * 86_400 + 5, kept


def test_the_prompt_hook_searches_without_the_app(tmp_path: Path) -> None:
    """At every prompt: the keyword index on the standard library, as SessionStart reads
    its block (app/reads.py), none of SQLAlchemy, the service or the model loaded."""
    from tests.hooks.test_hooks import hook_env
    from tests.hooks.test_hooks import run_hook as run_script
    from tests.test_light_entry_points import READING_HEAVY, heavy, imported, seed

    seed(tmp_path)  # "deploy": "Deploys use blue-green", "cat": "The cat is Miso"
    env = {**hook_env(tmp_path), "PYTHONPROFILEIMPORTTIME": "1"}
    payload = {"session_id": "s", "cwd": str(tmp_path), "prompt": "Do we deploy blue-green?"}
    done, _elapsed = run_script("user-prompt", payload, env)
    assert done.returncode == 0
    block = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    keys = [item.attrib["key"] for item in ET.fromstring(block).findall("memory")]
    assert keys == ["deploy"]
    names = imported(done.stderr)
    assert "memory_mcp.store.sqlite.fts5" in names  # the log is read, and it searched
    assert heavy(names, READING_HEAVY) == []
