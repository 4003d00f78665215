"""Turn-level retrieval on LoCoMo, REALTALK and BEAM, following the protocol of the data
sets' READMEs (../shared/bench-data/*/README.md):

- one fresh, empty store (a temporary SQLite file) per conversation;
- every turn stored as one memory through `MemoryService.store_memory`, key = its id
  (LoCoMo's dia_id), value = "{speaker}: {text}", in order, by a writer whose session is
  the conversation's session (an agent's memories arrive that way: one session after
  another);
- every question with evidence (LoCoMo: of category 1-4) sent to `MemoryService.search`
  (the service behind the `memory-search` tool) with limit 10;
- recall@k = share of the question's evidence ids among the top k keys, averaged over
  questions, overall and per category.

Two file formats, told apart by their keys: LoCoMo's (`session_N` lists of turns and `qa`)
and the one REALTALK and BEAM were converted to (`turns` and `questions`).

The store is built by `open_app`, the same composition root the server uses, with the
user's default settings: nothing here changes how search behaves.

`--interleave` stores one LoCoMo session at a time and asks, right after it, the questions
whose evidence that session completes, with the server's background workers running: a
search then meets memories whose passage vectors are still being made (issue 39's
"passages after the answer"); `--passage-vectors both` runs every conversation that way
twice, passages before and after a store's answer, and prints both side by side."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from bench.settings import BenchSettings
from bench.stats import mean, percentile_ms, table
from memory_mcp.app.root import open_app
from memory_mcp.errors import MemoryMcpError
from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.store.table_copy import empty_store

PassageVectors = Literal["after-answer", "before-answer"]
PASSAGE_MODES: tuple[PassageVectors, ...] = ("before-answer", "after-answer")
ANSWERABLE_CATEGORIES = (1, 2, 3, 4)
SEARCH_LIMIT = 10
CUTOFFS = (5, 10)


@dataclass
class Turn:
    key: str
    value: str
    session: str = ""  # the LoCoMo session: the writer's session_id, as an agent's would be


@dataclass
class Question:
    text: str
    category: int | str  # LoCoMo's 1-4; REALTALK's and BEAM's names
    evidence: list[str]


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


@dataclass
class QuestionResult:
    conversation: str
    question: str
    category: int | str
    evidence: list[str]
    retrieved: list[str]
    recall: dict[int, float]
    seconds: float


@dataclass
class ConversationRun:
    name: str
    turns: int
    refused: list[str]
    ingest_seconds: float
    results: list[QuestionResult] = field(default_factory=list)


def load_conversation(path: Path) -> Conversation:
    """One conversation file, in either format (the module docstring)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if "turns" in data and "questions" in data:
        return _load_turns_format(path.stem, data)
    return _load_locomo(path.stem, data)


def _load_turns_format(name: str, data: dict[str, Any]) -> Conversation:
    """REALTALK's and BEAM's converted files: `turns` ({id, text, session, date, speaker})
    and `questions` ({q, evidence, category}); a question without evidence is no query."""
    turns = [
        Turn(
            key=str(turn["id"]),
            value=f"{turn['speaker']}: {turn['text']}",
            session=str(turn["session"]),
        )
        for turn in data["turns"]
    ]
    questions = [
        Question(str(q["q"]), str(q["category"]), [str(e) for e in q["evidence"]])
        for q in data["questions"]
        if q.get("evidence")
    ]
    return Conversation(name=name, turns=turns, questions=questions)


def _load_locomo(name: str, data: dict[str, Any]) -> Conversation:
    """LoCoMo: `session_N` lists of turns, and `qa` with category and evidence."""
    sessions = sorted(
        (int(name.removeprefix("session_")), turns)
        for name, turns in data.items()
        if name.startswith("session_")
        and name.removeprefix("session_").isdigit()
        and isinstance(turns, list)
    )
    turns = [
        Turn(
            key=str(turn["dia_id"]),
            value=f"{turn['speaker']}: {turn['text']}",
            session=f"session_{number}",
        )
        for number, session in sessions
        for turn in session
    ]
    questions = [
        Question(
            text=str(qa["question"]),
            category=int(qa["category"]),
            evidence=[str(e) for e in qa["evidence"]],
        )
        for qa in data.get("qa", [])
        if qa.get("category") in ANSWERABLE_CATEGORIES and qa.get("evidence")
    ]
    return Conversation(name=name, turns=turns, questions=questions)


def load_conversations(directory: Path, limit: int | None = None) -> list[Conversation]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no conversation files (*.json) in {directory}")
    return [load_conversation(p) for p in paths[:limit]]


def recall_at(evidence: Iterable[str], retrieved: list[str], k: int) -> float:
    wanted = list(dict.fromkeys(evidence))
    top = set(retrieved[:k])
    return sum(1 for e in wanted if e in top) / len(wanted) if wanted else 0.0


async def run_conversation(
    conversation: Conversation,
    embedder: Embedder,
    workdir: Path,
    db: str | None = None,
    interleave: bool = False,
    passage_vectors: PassageVectors = "after-answer",
    sessions: bool = True,
) -> ConversationRun:
    """Ingest every turn into a fresh store (or `db`, emptied first), then ask every
    question. `interleave`: store one LoCoMo session, then ask at once the questions whose
    evidence it completes (its last evidence turn is in it), as an agent asks right after
    it stored; the server's background workers run meanwhile (the passage vectors follow
    a store's answer there, unless `passage_vectors` is "before-answer"). `sessions`
    False: every turn written in a session of its own, so no memory gets a write-time
    context (the product before issue 23)."""
    if db is not None:
        await empty_store(db)
    settings = BenchSettings(
        db=db or str(workdir / "memory.db"),
        data_dir=workdir,
        watch=False,
        passage_vectors=passage_vectors,
    )
    async with open_app(settings, embedder, background=interleave) as app:
        service, caller = app.service, app.caller
        run = ConversationRun(conversation.name, len(conversation.turns), [], 0.0)
        for turns, questions in _rounds(conversation, interleave):
            started = time.perf_counter()
            for turn in turns:
                # Each LoCoMo session is one session of the writing agent (a server process
                # over stdio, an MCP session over HTTP): what store/write_context.py reads.
                session = (turn.session or caller.session_id) if sessions else f"turn {turn.key}"
                writer = replace(caller, session_id=session)
                try:
                    await service.store_memory(writer, StoreRequest(turn.key, turn.value))
                except MemoryMcpError:
                    run.refused.append(turn.key)
            if not interleave:  # normally a no-op: store_memory embeds inline
                await service.vectors.embed_pending()
            run.ingest_seconds += time.perf_counter() - started
            for question in questions:
                run.results.append(await _ask(service, caller, conversation.name, question))
        return run


def _rounds(
    conversation: Conversation, interleave: bool
) -> list[tuple[list[Turn], list[Question]]]:
    """(turns to store, then questions to ask): every turn then every question; or, with
    `interleave`, one LoCoMo session at a time and the questions it completes (those whose
    evidence is nowhere among the turns last)."""
    if not interleave:
        return [(conversation.turns, conversation.questions)]
    sessions = list(dict.fromkeys(turn.session for turn in conversation.turns))
    order = {name: i for i, name in enumerate(sessions)}
    session_of = {turn.key: order[turn.session] for turn in conversation.turns}
    rounds: list[tuple[list[Turn], list[Question]]] = [
        ([t for t in conversation.turns if t.session == name], []) for name in sessions
    ]
    rounds.append(([], []))
    for question in conversation.questions:
        known = [session_of[e] for e in question.evidence if e in session_of]
        rounds[max(known) if known else -1][1].append(question)
    return rounds


async def _ask(service: Any, caller: Any, name: str, question: Question) -> QuestionResult:
    started = time.perf_counter()
    result = await service.search(caller, SearchRequest(question.text, limit=SEARCH_LIMIT))
    seconds = time.perf_counter() - started
    retrieved = [hit.record.key for hit in result.hits]
    return QuestionResult(
        name,
        question.text,
        question.category,
        question.evidence,
        retrieved,
        {k: recall_at(question.evidence, retrieved, k) for k in CUTOFFS},
        seconds,
    )


async def run_locomo(
    conversations: list[Conversation],
    embedder: Embedder,
    progress: Callable[[ConversationRun], None] | None = None,
    db: str | None = None,
    interleave: bool = False,
    passage_vectors: PassageVectors = "after-answer",
    sessions: bool = True,
) -> LocomoReport:
    await embedder.wait_ready()  # the model's load time is not ingest time
    runs = []
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="memory-mcp-locomo-") as tmp:
            run = await run_conversation(
                conversation, embedder, Path(tmp), db, interleave, passage_vectors, sessions
            )
        runs.append(run)
        if progress:
            progress(run)
    return LocomoReport(runs)


async def compare_passage_vectors(
    conversations: list[Conversation],
    embedder: Embedder,
    progress: Callable[[str, ConversationRun], None] | None = None,
) -> dict[str, LocomoReport]:
    """The interleaved protocol with the passages' vectors made before a store answers
    and after it, each conversation in both ways one after the other (the same load)."""
    await embedder.wait_ready()
    runs: dict[str, list[ConversationRun]] = {mode: [] for mode in PASSAGE_MODES}
    for conversation in conversations:
        for mode in PASSAGE_MODES:
            with tempfile.TemporaryDirectory(prefix="memory-mcp-locomo-") as tmp:
                run = await run_conversation(conversation, embedder, Path(tmp), None, True, mode)
            runs[mode].append(run)
            if progress:
                progress(mode, run)
    return {mode: LocomoReport(found) for mode, found in runs.items()}


def render_comparison(reports: dict[str, LocomoReport]) -> str:
    """The two interleaved runs side by side: recall overall and per category."""
    summaries = {mode: report.summary() for mode, report in reports.items()}
    first = next(iter(summaries.values()))
    parts = [("all", "overall")] + [(f"category {c}", c) for c in first["by_category"]]
    rows = []
    for label, part in parts:
        row: list[object] = [label]
        for s in summaries.values():
            found = s["overall"] if part == "overall" else s["by_category"][part]
            row += [found["recall@5"], found["recall@10"]]
        rows.append(row)
    head = ["LoCoMo, a session stored then its questions"]
    for mode in summaries:
        head += [f"R@5 {mode}", f"R@10 {mode}"]
    ingest = ", ".join(f"{mode} {s['ingest_turns_per_second']}" for mode, s in summaries.items())
    return "\n".join([table(head, rows), "", f"ingest turns/s (store + embed): {ingest}"])


@dataclass
class LocomoReport:
    runs: list[ConversationRun]
    title: str = "LoCoMo"

    @property
    def results(self) -> list[QuestionResult]:
        return [r for run in self.runs for r in run.results]

    def summary(self) -> dict[str, Any]:
        results = self.results
        turns = sum(run.turns for run in self.runs)
        ingest = sum(run.ingest_seconds for run in self.runs)
        seconds = [r.seconds for r in results]

        def recalls(items: list[QuestionResult]) -> dict[str, Any]:
            return {"questions": len(items)} | {
                f"recall@{k}": round(mean([r.recall[k] for r in items]), 4) for k in CUTOFFS
            }

        categories = sorted({r.category for r in results}, key=str)
        return {
            "conversations": len(self.runs),
            "turns": turns,
            "refused_turns": sum(len(run.refused) for run in self.runs),
            "overall": recalls(results),
            "by_category": {
                str(c): recalls([r for r in results if r.category == c]) for c in categories
            },
            "by_conversation": {run.name: recalls(run.results) for run in self.runs},
            "ingest_turns_per_second": round(turns / ingest, 1) if ingest else 0.0,
            "search_ms_p50": round(percentile_ms(seconds, 50), 2),
            "search_ms_p95": round(percentile_ms(seconds, 95), 2),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": "locomo",
            "summary": self.summary(),
            "questions": [asdict(r) for r in self.results],
        }

    def render(self) -> str:
        s = self.summary()
        rows: list[list[object]] = [
            ["all", s["overall"]["questions"], s["overall"]["recall@5"], s["overall"]["recall@10"]]
        ]
        for name, part in s["by_category"].items():
            rows.append(
                [f"category {name}", part["questions"], part["recall@5"], part["recall@10"]]
            )
        for name, part in s["by_conversation"].items():
            rows.append(
                [f"conversation {name}", part["questions"], part["recall@5"], part["recall@10"]]
            )
        lines = [
            table([f"{self.title} (turn level)", "questions", "R@5", "R@10"], rows),
            "",
            f"ingest: {s['turns']} turns in {s['conversations']} conversations, "
            f"{s['ingest_turns_per_second']} turns/s (store + embed)"
            + (f", {s['refused_turns']} refused" if s["refused_turns"] else ""),
            f"search: p50 {s['search_ms_p50']:.1f} ms, p95 {s['search_ms_p95']:.1f} ms "
            f"(limit {SEARCH_LIMIT})",
        ]
        return "\n".join(lines)
