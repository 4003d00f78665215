"""Session summaries. `SessionSummarizer` is the seam: the extractive one below needs no
model (none is available inside a hook); a model-backed one can replace it later without
touching the hook."""

from __future__ import annotations

import os
from typing import Protocol

from memory_mcp.hooks.transcript import Transcript


class SessionSummarizer(Protocol):
    async def summarize(self, transcript: Transcript) -> str | None:
        """A short summary to remember, or None when there is nothing worth keeping."""
        ...


def _one_line(text: str, size: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= size else line[: size - 1] + "…"


class ExtractiveSummarizer:
    """What the user asked for and which files were written, nothing invented."""

    def __init__(
        self,
        max_requests: int = 8,
        request_chars: int = 240,
        max_files: int = 20,
        max_chars: int = 2_000,
    ) -> None:
        self.max_requests = max_requests
        self.request_chars = request_chars
        self.max_files = max_files
        self.max_chars = max_chars

    async def summarize(self, transcript: Transcript) -> str | None:
        requests = transcript.requests
        if not requests and not transcript.files:
            return None
        when = " to ".join(
            t[:16].replace("T", " ") for t in (transcript.started_at, transcript.ended_at) if t
        )
        head = "Claude Code session" + (f" in {transcript.cwd}" if transcript.cwd else "")
        head += f" ({when} UTC)" if when else ""
        lines = [f"{head}: {len(requests)} requests, {len(transcript.files)} files written."]
        if requests:
            lines.append("User requests:")
            shown = requests
            if len(requests) > self.max_requests:
                first = self.max_requests // 2
                last = self.max_requests - first
                skipped = len(requests) - self.max_requests
                shown = [*requests[:first], f"({skipped} more)", *requests[-last:]]
            lines.extend(f"- {_one_line(r, self.request_chars)}" for r in shown)
        if transcript.files:
            names = [self._relative(p, transcript.cwd) for p in transcript.files]
            more = len(names) - self.max_files
            listed = ", ".join(names[: self.max_files]) + (f" (+{more} more)" if more > 0 else "")
            lines.append(f"Files written: {listed}")
        summary = "\n".join(lines)
        return summary if len(summary) <= self.max_chars else summary[: self.max_chars - 1] + "…"

    @staticmethod
    def _relative(path: str, cwd: str | None) -> str:
        if cwd and path.startswith(cwd.rstrip(os.sep) + os.sep):
            return path[len(cwd.rstrip(os.sep)) + 1 :]
        return path
