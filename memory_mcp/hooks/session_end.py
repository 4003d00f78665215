"""Stop / SessionEnd / PreCompact: remember what the session was about as a
`session_summary` memory (agent scope, so the agent's next sessions recall it; 3 days by
default). One memory per Claude Code session: a later Stop of the same session updates it
in place.

And the conversation itself (`capture_conversations`, on by default): each user and
assistant message of the transcript becomes a memory of the session's project
(rules/conversations.py), kept as long as `ttl_kind_days` says of `conversation` (30
days) from when it was said. PreCompact
captures a long session before Claude Code compacts it; the messages stored by an earlier
run of the same session are left as they are."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory_mcp.app.context import AppContext
from memory_mcp.hooks.job import run_with_app, settings_for
from memory_mcp.hooks.summary import ExtractiveSummarizer, SessionSummarizer
from memory_mcp.hooks.transcript import Transcript, read_transcript
from memory_mcp.models import Scope, Source, StoreRequest
from memory_mcp.settings import Settings

if TYPE_CHECKING:
    from memory_mcp.app.opener import AppOpener
    from memory_mcp.app.team_client import Client

log = logging.getLogger(__name__)


def _session_id(payload: dict[str, Any], transcript_path: Path) -> str:
    raw = payload.get("session_id")
    text = raw if isinstance(raw, str) and raw.strip() else transcript_path.stem
    return re.sub(r"[^\w.-]", "_", text)[:100]


async def _capture(
    app: AppContext, settings: Settings, session: str, transcript: Transcript
) -> None:
    from memory_mcp.rules.conversations import CONVERSATION, capture

    days = settings.ttl_kind_days.get(CONVERSATION, 0)
    # The writer's session is the conversation's: the write-time context links each
    # message to the 3 said just before it and the 4 just after (store/write_context.py).
    caller = replace(app.caller, session_id=session)
    metadata = {"cwd": transcript.cwd} if transcript.cwd else {}
    report = await capture(
        app.service,
        caller,
        session,
        transcript.messages,
        ttl_seconds=days * 86_400 if days else None,
        max_messages=settings.capture_max_messages,
        metadata=metadata,
    )
    for reason in report.refused or []:
        log.warning("a message of session %s was not stored: %s", session, reason)


def run(
    payload: dict[str, Any],
    open_app: AppOpener,
    settings: Settings | None = None,
    summarizer: SessionSummarizer | None = None,
) -> int:
    raw_path = payload.get("transcript_path")
    if not isinstance(raw_path, str) or not raw_path:
        return 0
    path = Path(raw_path).expanduser()
    if not path.is_file():
        return 0
    last_change = path.stat().st_mtime
    transcript = read_transcript(path)
    if transcript.cwd is None and isinstance(payload.get("cwd"), str):
        transcript.cwd = payload["cwd"]
    session = _session_id(payload, path)
    summarizer = summarizer or ExtractiveSummarizer()
    # The session's project: the work tree it ran in (the transcript's cwd, else the
    # payload's), as the session-start block's.
    settings = settings_for({"cwd": transcript.cwd}, settings)
    # Given on every write: an update keeps what it is not given, and a summary lives its
    # days from the session's last change, not from the first Stop (None: for ever).
    days = settings.ttl_session_summary_days
    ttl_seconds = days * 86_400 if days else None

    def _metadata() -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "session_id": session,
            "transcript_path": str(path),
            "files": transcript.files[:50],
        }
        if transcript.cwd:
            metadata["cwd"] = transcript.cwd
        return metadata

    async def job(app: AppContext) -> None:
        if settings.capture_conversations and transcript.messages:
            await _capture(app, settings, session, transcript)
        summary = await summarizer.summarize(transcript)
        if not summary:
            return
        metadata = _metadata()
        request = StoreRequest(
            key=f"session-summary:{session}",
            value=summary,
            scope=Scope.AGENT,
            tags=["session-summary"],
            metadata=metadata,
            source=Source.SESSION_SUMMARY,
            ttl_seconds=ttl_seconds,
            # Dated by the transcript's last change, not by this run: a Stop hook on an
            # unchanged transcript then writes exactly what is stored, and the store
            # leaves it alone (same version) instead of bumping it for a new expiry.
            written_at=last_change,
        )
        await app.service.store_memory(app.caller, request)

    if settings.team_server is not None:
        from memory_mcp.app import team_client as team

        async def remote(client: Client) -> None:
            summary = await summarizer.summarize(transcript)
            if summary:
                arguments = {
                    "key": f"session-summary:{session}",
                    "value": summary,
                    "scope": "agent",
                    "tags": ["session-summary"],
                    "metadata": _metadata(),
                    "source": "session_summary",
                    **({"ttl_seconds": ttl_seconds} if ttl_seconds else {}),
                }
                await team.call(client, "store_memory", arguments)

        team.run_remote(settings.team_server, remote, settings.project)
        return 0
    run_with_app(open_app, settings, job)
    return 0
