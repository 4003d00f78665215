"""Read a Claude Code transcript (JSONL, one event per line) into what a summary needs
(the user's own requests and the files the assistant wrote) and the conversation to
capture (each user and assistant message's text, without tool calls, tool output,
reminders or subagents' traffic). Unknown lines and fields are ignored; reading is bounded
in bytes so a huge transcript cannot stall the hook. A secret in a message is redacted
here, before any summarizer (or model) sees it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_mcp.checks.safety import redact_text
from memory_mcp.rules.conversations import Message

MAX_TRANSCRIPT_BYTES = 32_000_000
MAX_LINE_BYTES = 4_000_000  # longer lines (huge tool results) are skipped unparsed
FILE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_COMMAND = re.compile(
    r"<command-name>\s*(?P<name>[^<]*?)\s*</command-name>"
    r"(?:.*?<command-args>\s*(?P<args>.*?)\s*</command-args>)?",
    re.S,
)
_NOT_REQUESTS = ("<local-command-stdout>", "<local-command-stderr>", "[Request interrupted")


@dataclass
class Transcript:
    path: Path
    requests: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    cwd: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    truncated: bool = False
    # The conversation, in order; an assistant message Claude Code wrote as several lines
    # (one per content block) is one message, its texts joined.
    messages: list[Message] = field(default_factory=list)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def user_request(text: str) -> str | None:
    """The request a person typed, or None for tool output, reminders and command logs."""
    text = _REMINDER.sub("", text).strip()
    if not text or text.startswith(_NOT_REQUESTS):
        return None
    command = _COMMAND.search(text)
    if command:
        text = " ".join(p for p in (command["name"], command["args"] or "") if p)
    return redact_text(text)[0] or None


def _seconds(timestamp: object) -> float | None:
    if not isinstance(timestamp, str):
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _add_message(transcript: Transcript, event: dict[str, Any], role: str, text: str) -> None:
    message = event["message"]
    # An assistant message's blocks share its id; a user message has its line's uuid.
    raw = message.get("id") if role == "assistant" else None
    raw = raw if isinstance(raw, str) and raw else event.get("uuid")
    message_id = raw if isinstance(raw, str) and raw else f"line-{len(transcript.messages)}"
    said = _seconds(event.get("timestamp"))
    last = transcript.messages[-1] if transcript.messages else None
    if last is not None and last.message_id == message_id and last.role == role:
        joined = f"{last.text}\n\n{text}"
        transcript.messages[-1] = Message(message_id, role, joined, last.said_at or said)
        return
    transcript.messages.append(Message(message_id, role, text, said))


def _add_event(transcript: Transcript, event: dict[str, Any]) -> None:
    timestamp = event.get("timestamp")
    if isinstance(timestamp, str):
        transcript.started_at = transcript.started_at or timestamp
        transcript.ended_at = timestamp
    if isinstance(event.get("cwd"), str):
        transcript.cwd = transcript.cwd or event["cwd"]
    if event.get("isSidechain") or event.get("isMeta"):
        return  # subagent traffic and client-generated notes are not the user's words
    message = event.get("message")
    if not isinstance(message, dict):
        return
    if event.get("type") == "user":
        for text in _texts(message.get("content")):
            request = user_request(text)
            if request:
                transcript.requests.append(request)
                _add_message(transcript, event, "user", request)
    elif event.get("type") == "assistant" and isinstance(message.get("content"), list):
        said = redact_text("\n\n".join(t.strip() for t in _texts(message["content"])))[0]
        if said.strip():
            _add_message(transcript, event, "assistant", said.strip())
        for block in message["content"]:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            argument = FILE_TOOLS.get(str(block.get("name")))
            tool_input = block.get("input")
            if argument and isinstance(tool_input, dict):
                path = tool_input.get(argument)
                if isinstance(path, str) and path not in transcript.files:
                    transcript.files.append(path)


def read_transcript(path: Path) -> Transcript:
    transcript = Transcript(path)
    consumed = 0
    with path.open("rb") as handle:
        for line in handle:
            consumed += len(line)
            if consumed > MAX_TRANSCRIPT_BYTES:
                transcript.truncated = True
                break
            if len(line) > MAX_LINE_BYTES or not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line being written right now, or not JSON at all
            if isinstance(event, dict):
                _add_event(transcript, event)
    return transcript
