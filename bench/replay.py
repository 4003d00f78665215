"""`python -m bench replay DIR...`: conversations captured by the Claude Code hooks, and
recalled at every prompt (issue 50).

Each conversation of a set (LoCoMo, REALTALK, BEAM: ../shared/bench-data) is replayed as
Claude Code sessions: one transcript file per session in Claude Code's JSONL format (the
first speaker is the user, the other the assistant; each turn one message whose id is the
turn's id and whose text is `"{speaker}: {text}"`, as the retrieval protocol stores it),
in a git work tree of its own with a home of its own. The real SessionEnd hook runs on
each transcript, then every question is asked through the real UserPromptSubmit hook and
the `<memories>` block it injects is scored: recall of the question's evidence turns
within each budget (`prompt_max_tokens`), for each threshold (`prompt_min_match`). The
questions of another conversation of the same set, asked in this one's work tree, have no
relevant memory there: the share of them that got no block is the other half of the
threshold's choice.

The hooks run through `memory_mcp.hooks.runner.main`, the function hooks/memory-mcp-hook
calls, in this process (a process per prompt, per budget and per threshold would take an
hour on the shared machine); a sample of prompts is also run as whole processes
(hooks/user-prompt, JSON on stdin) for the hook's wall time, beside the least the other
road would cost: a process that loads the embedding model and embeds the prompt.
Messages never expire here (kind `conversation` kept for good: the sets' dates are years old)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.locomo import Conversation, load_conversation, recall_at
from bench.stats import table

REPO_ROOT = Path(__file__).resolve().parents[1]
HOOKS = REPO_ROOT / "hooks"
BUDGETS = (1_000, 2_000)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6)
START = 1_767_225_600.0  # 2026-01-01 UTC: the replayed messages' clock, a minute a turn
_KEY = re.compile(r' key="conversation:[^:"]*:([^"#]*)(?:#\d+)?"')


@dataclass
class SetResult:
    name: str
    conversations: int = 0
    messages: int = 0
    capture_seconds: list[float] = field(default_factory=list)
    # (threshold, budget) -> per-question recall; threshold -> per-negative "empty"
    recall: dict[tuple[float, int], list[float]] = field(default_factory=dict)
    answered: dict[tuple[float, int], list[bool]] = field(default_factory=dict)
    empty: dict[float, list[bool]] = field(default_factory=dict)
    block_tokens: dict[tuple[float, int], list[int]] = field(default_factory=dict)
    hook_seconds: list[float] = field(default_factory=list)
    start_seconds: list[float] = field(default_factory=list)  # SessionStart, beside it
    model_seconds: list[float] = field(default_factory=list)
    in_process_seconds: list[float] = field(default_factory=list)


def _sessions(conversation: Conversation) -> list[tuple[str, list[tuple[str, str]]]]:
    """(session, [(turn id, text)]) in order."""
    sessions: dict[str, list[tuple[str, str]]] = {}
    for turn in conversation.turns:
        sessions.setdefault(turn.session or "session", []).append((turn.key, turn.value))
    return list(sessions.items())


def write_transcripts(conversation: Conversation, folder: Path, cwd: Path) -> list[Path]:
    """One Claude Code transcript (JSONL) per session of `conversation`."""
    folder.mkdir(parents=True, exist_ok=True)
    first = conversation.turns[0].value.split(":", 1)[0] if conversation.turns else ""
    paths = []
    minute = 0
    for number, (_, turns) in enumerate(_sessions(conversation)):
        session_id = f"{conversation.name}-{number:03d}"
        lines = []
        for turn_id, text in turns:
            minute += 1
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START + 60 * minute))
            role = "user" if text.split(":", 1)[0] == first else "assistant"
            event: dict[str, Any] = {
                "type": role,
                "sessionId": session_id,
                "cwd": str(cwd),
                "timestamp": stamp,
                "uuid": f"{session_id}-{minute}",
            }
            if role == "user":
                event["uuid"] = turn_id
                event["message"] = {"role": "user", "content": text}
            else:
                content = [{"type": "text", "text": text}]
                event["message"] = {"id": turn_id, "role": "assistant", "content": content}
            lines.append(json.dumps(event))
        path = folder / f"{session_id}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


@contextlib.contextmanager
def hook_environment(home: Path, **settings: str) -> Iterator[dict[str, str]]:
    """This process's environment as a hook's in a fresh home: no MEMORY_MCP_* of the
    user's, an empty settings file, the store under `home`."""
    config = home / "config.toml"
    home.mkdir(parents=True, exist_ok=True)
    config.write_text("", encoding="utf-8")
    saved = dict(os.environ)
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORY_MCP_")}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "xdg"),
        XDG_CONFIG_HOME=str(home / "config"),
        MEMORY_MCP_CONFIG=str(config),
        MEMORY_MCP_AGENT_ID="bench",
        MEMORY_MCP_MEMORY_DIR=str(home / "notes"),
        MEMORY_MCP_WATCH="false",
        MEMORY_MCP_MAX_MEMORIES_PER_AGENT="0",
        MEMORY_MCP_TTL_KIND_DAYS='{"conversation": 0}',
        MEMORY_MCP_CAPTURE_MAX_MESSAGES="100000",
    )
    env.update({f"MEMORY_MCP_{name.upper()}": value for name, value in settings.items()})
    os.environ.clear()
    os.environ.update(env)
    try:
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_hook(event: str, payload: dict[str, Any]) -> str:
    """The hook `event` in this process, as hooks/memory-mcp-hook runs it; its stdout."""
    from memory_mcp.app.opener import open_app_when_called
    from memory_mcp.hooks.runner import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([event], json.dumps(payload).encode(), watchdog=False, open_app=open_app_when_called)
    return out.getvalue()


def injected(stdout: str) -> str:
    """The block a UserPromptSubmit hook's output adds to the context ("" for none)."""
    if not stdout.strip():
        return ""
    output = json.loads(stdout)
    return str(output["hookSpecificOutput"]["additionalContext"])


def turn_ids(block: str) -> list[str]:
    return list(dict.fromkeys(_KEY.findall(block)))


def _prompt(cwd: Path, text: str) -> dict[str, Any]:
    return {
        "session_id": "bench-questions",
        "transcript_path": str(cwd / "none.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
    }


def _safe(turn_id: str) -> str:
    return re.sub(r"[^\w.-]", "_", turn_id)[:100]


def replay_set(
    directory: Path,
    *,
    thresholds: Sequence[float],
    budgets: Sequence[int],
    negatives: int,
    timed: int,
    limit_conversations: int | None,
    say: Callable[[str], None],
) -> SetResult:
    every = sorted(directory.glob("*.json"))
    conversations = [load_conversation(p) for p in every[:limit_conversations]]
    result = SetResult(directory.name)
    for index, conversation in enumerate(conversations):
        # Another conversation's questions, also when only some are replayed.
        other = load_conversation(every[(index + 1) % len(every)])
        if other.name == conversation.name:
            raise ValueError(f"{directory}: the negatives need a second conversation")
        with tempfile.TemporaryDirectory(prefix="replay-") as scratch:
            root = Path(scratch)
            work = root / "work" / conversation.name
            work.mkdir(parents=True)
            subprocess.run(["git", "init", "-q", str(work)], check=True)
            transcripts = write_transcripts(conversation, root / "transcripts", work)
            with hook_environment(root / "home") as env:
                for path in transcripts:
                    start = time.perf_counter()
                    run_hook(
                        "session-end",
                        {
                            "session_id": path.stem,
                            "transcript_path": str(path),
                            "cwd": str(work),
                            "hook_event_name": "SessionEnd",
                            "reason": "exit",
                        },
                    )
                    result.capture_seconds.append(time.perf_counter() - start)
                _score(result, conversation, other, work, thresholds, budgets, negatives)
                _time_processes(result, conversation, work, env, timed)
            result.conversations += 1
            result.messages += len(conversation.turns)
            say(f"{directory.name}/{conversation.name}: {len(transcripts)} sessions replayed")
    return result


def _score(
    result: SetResult,
    conversation: Conversation,
    other: Conversation,
    work: Path,
    thresholds: Sequence[float],
    budgets: Sequence[int],
    negatives: int,
) -> None:
    keys = {_safe(t.key): t.key for t in conversation.turns}
    for threshold in thresholds:
        for budget in budgets:
            os.environ["MEMORY_MCP_PROMPT_MIN_MATCH"] = str(threshold)
            os.environ["MEMORY_MCP_PROMPT_MAX_TOKENS"] = str(budget)
            for question in conversation.questions:
                start = time.perf_counter()
                block = injected(run_hook("user-prompt", _prompt(work, question.text)))
                result.in_process_seconds.append(time.perf_counter() - start)
                found = [keys.get(i, i) for i in turn_ids(block)]
                result.recall.setdefault((threshold, budget), []).append(
                    recall_at(question.evidence, found, len(found) or 1)
                )
                result.answered.setdefault((threshold, budget), []).append(bool(block))
                result.block_tokens.setdefault((threshold, budget), []).append(len(block) // 4)
        os.environ["MEMORY_MCP_PROMPT_MAX_TOKENS"] = str(budgets[-1])
        for question in other.questions[:negatives]:
            block = injected(run_hook("user-prompt", _prompt(work, question.text)))
            result.empty.setdefault(threshold, []).append(not block)


def _time_processes(
    result: SetResult, conversation: Conversation, work: Path, env: dict[str, str], timed: int
) -> None:
    """The prompt hook as Claude Code runs it (a process, JSON on stdin), on the first
    `timed` questions; and the model's floor (load it, embed the prompt) on a few."""
    env = {**os.environ}

    def timed_hook(script: str, payload: dict[str, Any]) -> float:
        start = time.perf_counter()
        subprocess.run(
            [str(HOOKS / script)],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return time.perf_counter() - start

    for question in conversation.questions[:timed]:
        # Side by side, so the load of the moment weighs on both alike.
        result.hook_seconds.append(timed_hook("user-prompt", _prompt(work, question.text)))
        start_payload = {**_prompt(work, ""), "hook_event_name": "SessionStart"}
        result.start_seconds.append(timed_hook("session-start", start_payload))
    for question in conversation.questions[: max(1, timed // 10)]:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bench.replay", "embed", question.text],
            env={**env, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            check=True,
            timeout=120,
        )
        result.model_seconds.append(time.perf_counter() - start)


def embed_once(text: str) -> None:
    """The least a prompt hook that searched by meaning would do: load the model the
    server uses (settings' embedder, ONNX) and embed the prompt."""
    import anyio

    from memory_mcp.app.root import embedder_from
    from memory_mcp.settings import Settings

    embedder = embedder_from(Settings())

    async def embed() -> None:
        await embedder.wait_ready()
        await embedder.embed([text])

    anyio.run(embed)


def _median_ms(values: Sequence[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f}" if values else "-"


def render(results: Sequence[SetResult], load: str) -> str:
    out = []
    for r in results:
        rows = []
        thresholds = sorted({t for t, _ in r.recall})
        budgets = sorted({b for _, b in r.recall})
        for t in thresholds:
            row: list[object] = [f"{t:g}"]
            for b in budgets:
                values = r.recall[(t, b)]
                row.append(f"{statistics.fmean(values):.3f}")
            answered = r.answered[(t, budgets[-1])]
            row.append(f"{sum(answered) / len(answered):.2f}")
            empties = r.empty.get(t, [])
            row.append(f"{sum(empties) / len(empties):.2f}" if empties else "-")
            tokens = r.block_tokens[(t, budgets[-1])]
            row.append(f"{statistics.fmean(tokens):.0f}")
            rows.append(row)
        header = [
            "min match",
            *(f"recall @{b} tok" for b in budgets),
            "answered",
            "empty (no relevant)",
            f"mean tokens @{budgets[-1]}",
        ]
        questions = len(next(iter(r.recall.values())))
        negatives = len(next(iter(r.empty.values()), []))
        out.append(
            f"## {r.name}: {r.conversations} conversations, {r.messages} messages, "
            f"{questions} questions, {negatives} questions of another conversation\n"
            + table(header, rows)
            + f"\nSessionEnd hook (capture + summary, in process): median "
            f"{_median_ms(r.capture_seconds)} ms over {len(r.capture_seconds)} sessions; "
            f"prompt hook in process: median {_median_ms(r.in_process_seconds)} ms; "
            f"as a whole process: median {_median_ms(r.hook_seconds)} ms "
            f"({len(r.hook_seconds)} prompts; the SessionStart hook beside it "
            f"{_median_ms(r.start_seconds)} ms); load the model and embed the prompt, as a "
            f"whole process: median {_median_ms(r.model_seconds)} ms "
            f"({len(r.model_seconds)} prompts)"
        )
    out.append(f"load: {load}")
    return "\n\n".join(out)


def summary(results: Sequence[SetResult]) -> dict[str, Any]:
    return {
        r.name: {
            "recall": {f"{t:g}@{b}": statistics.fmean(v) for (t, b), v in r.recall.items()},
            "empty": {f"{t:g}": sum(v) / len(v) for t, v in r.empty.items() if v},
            "hook_ms_median": statistics.median(r.hook_seconds) * 1000 if r.hook_seconds else None,
            "session_start_ms_median": statistics.median(r.start_seconds) * 1000
            if r.start_seconds
            else None,
            "model_ms_median": statistics.median(r.model_seconds) * 1000
            if r.model_seconds
            else None,
        }
        for r in results
    }


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(args: Any, say: Callable[[str], None]) -> int:
    loads = [_load()]
    results = []
    for directory in args.dir:
        results.append(
            replay_set(
                directory,
                thresholds=args.thresholds,
                budgets=args.budgets,
                negatives=args.negatives,
                timed=args.timed,
                limit_conversations=args.limit_conversations,
                say=say,
            )
        )
        loads.append(_load())
    print(render(results, " | ".join(loads)))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(summary(results), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__" and sys.argv[1:2] == ["embed"]:
    embed_once(" ".join(sys.argv[2:]))
