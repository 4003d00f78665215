"""Conversations as memories: each user or assistant message of a Claude Code session
stored as one memory (a long one in parts), so that a later question finds the message
that answers it, and the write-time context (store/write_context.py) links each to the
messages around it: they are written in the session's order, by a writer whose session is
the conversation's.

A message is keyed by its session and its own id (`conversation:<session>:<message id>`),
so capturing a transcript twice (PreCompact, then SessionEnd) stores each message once:
all are written in one transaction, and the store leaves alone each one it already holds
as it is (the same key, text, time and expiry: nothing changes, not even its version).
Every message passes the checks of any write (rules/service.py prepare_memory: sizes,
secrets redacted, instruction-like text flagged). The hooks parse the transcript
(hooks/transcript.py); this module knows nothing of Claude Code's format.

Imported by the `<memories>` block (rules/memories_block.py), which shows a message as a
turn with its role, session and time: the standard library only at import."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_mcp.errors import InvalidInputError, PermissionDeniedError
from memory_mcp.models import Caller, MemoryRecord, Scope, StoreRequest

if TYPE_CHECKING:
    from memory_mcp.models import NewMemory
    from memory_mcp.rules.service import MemoryService

CONVERSATION = "conversation"  # the kind (models.KINDS) and a tag of a captured message
KEY_PREFIX = "conversation:"
# A message longer than this is stored in parts, each whole paragraphs where it can: a
# <memories> block shows a memory whole or not at all, and a 1,000-token block holds
# ~4,000 characters.
PART_CHARS = 2_000
MIN_CHARS = 12  # "ok", "thanks!": nothing a later question could be answered by
_ID = re.compile(r"[^\w.-]")


@dataclass(frozen=True)
class Message:
    """One message of a conversation: its id within the session (stable across reads of
    the transcript), who said it (`user` or `assistant`), its text and when (UNIX
    seconds; None: unknown)."""

    message_id: str
    role: str
    text: str
    said_at: float | None = None


@dataclass
class CaptureReport:
    stored: int = 0
    already: int = 0  # stored by an earlier capture of this session
    skipped: int = 0  # too short, or over the session's bound
    refused: list[str] | None = None


def conversation_key(session: str, message_id: str, part: int = 0) -> str:
    name = f"{KEY_PREFIX}{_ID.sub('_', session)[:100]}:{_ID.sub('_', message_id)[:100]}"
    return name if part == 0 else f"{name}#{part + 1}"


def is_conversation(record: MemoryRecord) -> bool:
    return record.kind == CONVERSATION


def conversation_attributes(record: MemoryRecord) -> list[tuple[str, object]]:
    """A captured message's turn as the block shows it: who said it, in which session,
    when (UTC, to the minute)."""
    if not is_conversation(record):
        return []
    attributes: list[tuple[str, object]] = []
    meta = record.metadata
    for name, field in (("turn", "role"), ("session", "session_id"), ("said", "said")):
        value = meta.get(field)
        if isinstance(value, str) and value:
            shown = value[:16].replace("T", " ") if name == "said" else value[:100]
            attributes.append((name, shown))
    return attributes


def parts_of(text: str, size: int = PART_CHARS) -> list[str]:
    """`text` in parts of at most `size` characters: whole paragraphs packed together,
    a paragraph too long for one part cut at a space."""
    text = text.strip()
    if len(text) <= size:
        return [text]
    parts: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = paragraph.strip()
        while len(paragraph) > size:
            cut = paragraph.rfind(" ", size // 2, size)
            cut = cut if cut > 0 else size
            pieces = (paragraph[:cut].rstrip(), paragraph[cut:].lstrip())
            if current:
                parts.append(current)
                current = ""
            parts.append(pieces[0])
            paragraph = pieces[1]
        if current and len(current) + 2 + len(paragraph) > size:
            parts.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        parts.append(current)
    return [part for part in parts if part]


def _requests(
    session: str,
    messages: Sequence[Message],
    ttl_seconds: float | None,
    metadata: dict[str, str],
) -> list[tuple[StoreRequest, float | None]]:
    from memory_mcp.checks.validation import iso

    requests = []
    for message in messages:
        pieces = parts_of(message.text)
        for part, text in enumerate(pieces):
            meta = {**metadata, "session_id": session, "role": message.role}
            said = iso(message.said_at)
            if said:
                meta["said"] = said
            if len(pieces) > 1:
                meta["part"] = f"{part + 1}/{len(pieces)}"
            request = StoreRequest(
                key=conversation_key(session, message.message_id, part),
                value=text,
                scope=Scope.AGENT,
                tags=[CONVERSATION, message.role],
                metadata=meta,
                ttl_seconds=ttl_seconds,
                written_at=message.said_at,
                kind=CONVERSATION,
            )
            requests.append((request, message.said_at))
    return requests


async def capture(
    service: MemoryService,
    caller: Caller,
    session: str,
    messages: Sequence[Message],
    *,
    ttl_seconds: float | None,
    max_messages: int,
    metadata: dict[str, str] | None = None,
) -> CaptureReport:
    """Store the messages of `session` not stored yet (the last `max_messages` of them),
    as `caller` (whose session should be `session`: the write-time context links a
    message to the 3 written just before it and the 4 just after it in the writer's
    session), in its current
    project, agent scope, expiring `ttl_seconds` after each was said (None: never)."""
    report = CaptureReport()
    kept = [m for m in messages if len(m.text.strip()) >= MIN_CHARS]
    report.skipped = len(messages) - len(kept)
    if len(kept) > max_messages:
        report.skipped += len(kept) - max_messages
        kept = kept[-max_messages:]
    prepared: list[tuple[NewMemory, float | None]] = []
    refused: list[str] = []
    for request, said_at in _requests(session, kept, ttl_seconds, metadata or {}):
        try:
            prepared.append((service.prepare_memory(caller, request), said_at))
        except (InvalidInputError, PermissionDeniedError) as exc:  # this message, not the rest
            refused.append(f"{request.key}: {exc}")
    if prepared:
        # A message stored before is the same memory to the last field (its key, text,
        # time and expiry all come from the transcript): the store counts it unchanged
        # and writes nothing (store/writes.py, is_unchanged).
        outcome = await service.write_batch([(caller, new, at) for new, at in prepared])
        report.stored = outcome.created + outcome.updated
        report.already = outcome.unchanged
        refused.extend(reason for _, reason in outcome.refused)
    report.refused = refused or None
    return report


__all__ = [
    "CONVERSATION",
    "CaptureReport",
    "Message",
    "capture",
    "conversation_attributes",
    "conversation_key",
    "is_conversation",
    "parts_of",
]
