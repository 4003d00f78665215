"""`python -m bench projects DIR...`: many projects in one store rank as if each were
alone (issue 36).

Every conversation of the development sets (LoCoMo, REALTALK, BEAM: ../shared/bench-data)
is run twice with the retrieval protocol of bench/locomo.py (each turn one memory keyed by
its id, written by a writer whose session is the conversation's session; each question a
search with limit 10): once in a store of its own, once in ONE store holding every
conversation, each in its own project, each question asked from its conversation's
project. Recall@5/@10 must be the same, and so should every question's top 10.

What could tell the two apart is held still: each turn is written at the same time in both
runs (a fixed start, one second a turn) and every search asks at the same fixed time (the
recency prior), the per-agent cap is off (20 conversations are ~10,000 memories), and the
real model's vectors are computed once per text and reused by both runs (`CachedVectors`:
the same numbers either way, half the time)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo import Conversation, load_conversation, recall_at
from bench.settings import BenchSettings
from bench.stats import mean, percentile_ms, table
from memory_mcp.app.root import open_app
from memory_mcp.errors import MemoryMcpError
from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.semantic.embeddings import Embedder

SEARCH_LIMIT = 10
CUTOFFS = (5, 10)
WRITTEN_FROM = 1_750_000_000.0  # every run's first turn, UNIX seconds
ASKED_AT = WRITTEN_FROM + 30 * 86_400.0  # every search's "now"


def project_of(conversation: Conversation) -> str:
    """The project a conversation's turns go to in the shared store."""
    return f"bench/{conversation.name}"


def load_all(folders: Sequence[Path]) -> list[Conversation]:
    """Every conversation file in `folders`, in either format (bench/locomo.py)."""
    found = []
    for path in (path for folder in folders for path in sorted(folder.glob("*.json"))):
        try:
            found.append(load_conversation(path))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} is not a conversation file: {exc!r}") from exc
    if not found:
        raise FileNotFoundError(f"no conversation files (*.json) in {', '.join(map(str, folders))}")
    return found


class CachedVectors:
    """The real model, each text embedded once and its vector reused (both runs ask for
    the same texts): an Embedder, as the service takes it."""

    def __init__(self, model: Embedder) -> None:
        self.model = model
        self.model_name = model.model_name
        self._vectors: dict[str, np.ndarray] = {}

    def is_ready(self) -> bool:
        return self.model.is_ready()

    async def wait_ready(self) -> None:
        await self.model.wait_ready()

    async def embed(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, await self.model.embed(missing), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts])


@dataclass
class Run:
    """One way of storing the conversations: each question's retrieved keys, in order."""

    name: str
    retrieved: dict[str, list[list[str]]] = field(default_factory=dict)  # by conversation
    seconds: list[float] = field(default_factory=list)  # each search
    refused: set[str] = field(default_factory=set)  # turns the store refused


async def ingest_and_ask(
    conversations: list[Conversation],
    embedder: Embedder,
    db: Path,
    run: Run,
    in_projects: bool,
    progress: Callable[[str], None],
) -> None:
    """Write `conversations` into the store at `db` (each into its project if
    `in_projects`), then ask each one's questions from where its turns are."""
    settings = BenchSettings(db=str(db), data_dir=db.parent, max_memories_per_agent=0)
    async with open_app(settings, embedder, background=False) as app:
        service = app.service
        service.clock = lambda: ASKED_AT
        for conversation in conversations:
            caller = replace(app.caller, project=project_of(conversation) if in_projects else None)
            for index, turn in enumerate(conversation.turns):
                writer = replace(caller, session_id=turn.session)
                request = StoreRequest(turn.key, turn.value, written_at=WRITTEN_FROM + index)
                try:
                    await service.store_memory(writer, request)
                except MemoryMcpError:  # over the value limit (a BEAM turn): as a user's
                    run.refused.add(f"{conversation.name}/{turn.key}")
            await service.vectors.embed_pending()
            answers = []
            for question in conversation.questions:
                started = time.perf_counter()
                result = await service.search(
                    caller, SearchRequest(question.text, limit=SEARCH_LIMIT)
                )
                run.seconds.append(time.perf_counter() - started)
                answers.append([hit.record.key for hit in result.hits])
            run.retrieved[conversation.name] = answers
            progress(f"{run.name}: {conversation.name} ({len(conversation.turns)} turns)")


async def run_projects(
    conversations: list[Conversation], model: Embedder, progress: Callable[[str], None]
) -> ProjectsReport:
    await model.wait_ready()
    embedder = CachedVectors(model)
    alone, together = Run("one store each"), Run("one store, a project each")
    with tempfile.TemporaryDirectory(prefix="memory-mcp-projects-") as tmp:
        for n, conversation in enumerate(conversations):
            db = Path(tmp) / f"alone-{n}" / "memory.db"
            db.parent.mkdir()
            await ingest_and_ask([conversation], embedder, db, alone, False, progress)
        shared = Path(tmp) / "shared" / "memory.db"
        shared.parent.mkdir()
        await ingest_and_ask(conversations, embedder, shared, together, True, progress)
    return ProjectsReport(conversations, alone, together)


@dataclass
class ProjectsReport:
    conversations: list[Conversation]
    alone: Run
    together: Run

    def recalls(self, run: Run, names: Iterable[str] | None = None) -> dict[int, float]:
        wanted = set(names) if names is not None else None
        values: dict[int, list[float]] = {k: [] for k in CUTOFFS}
        for conversation in self.conversations:
            if wanted is not None and conversation.name not in wanted:
                continue
            answers = run.retrieved[conversation.name]
            for question, retrieved in zip(conversation.questions, answers, strict=True):
                for k in CUTOFFS:
                    values[k].append(recall_at(question.evidence, retrieved, k))
        return {k: mean(v) for k, v in values.items()}

    def differing(self) -> int:
        """Questions whose top 10 is not the same list in both runs."""
        return sum(
            a != b
            for c in self.conversations
            for a, b in zip(
                self.alone.retrieved[c.name], self.together.retrieved[c.name], strict=True
            )
        )

    def summary(self) -> dict[str, Any]:
        return {
            "conversations": len(self.conversations),
            "turns": sum(len(c.turns) for c in self.conversations),
            "questions": sum(len(c.questions) for c in self.conversations),
            "alone": {f"recall@{k}": round(v, 4) for k, v in self.recalls(self.alone).items()},
            "together": {
                f"recall@{k}": round(v, 4) for k, v in self.recalls(self.together).items()
            },
            "questions_with_another_top10": self.differing(),
            "refused_turns": {
                "alone": len(self.alone.refused),
                "together": len(self.together.refused),
            },
            "search_ms_p50": {
                "alone": round(percentile_ms(self.alone.seconds, 50), 2),
                "together": round(percentile_ms(self.together.seconds, 50), 2),
            },
            "by_conversation": {
                c.name: {
                    "alone": [round(v, 4) for v in self.recalls(self.alone, [c.name]).values()],
                    "together": [
                        round(v, 4) for v in self.recalls(self.together, [c.name]).values()
                    ],
                }
                for c in self.conversations
            },
        }

    def render(self) -> str:
        s = self.summary()
        rows: list[list[object]] = [
            [name, s["questions"], s[key]["recall@5"], s[key]["recall@10"]]
            for name, key in (
                ("one store each", "alone"),
                ("one store, a project each", "together"),
            )
        ]
        return "\n".join(
            [
                table([f"{s['conversations']} conversations", "questions", "R@5", "R@10"], rows),
                "",
                f"questions whose top 10 differs: {s['questions_with_another_top10']} "
                f"of {s['questions']}",
                f"search p50: {s['search_ms_p50']['alone']:.1f} ms alone, "
                f"{s['search_ms_p50']['together']:.1f} ms in one store "
                f"({s['turns']:,} memories)",
            ]
        )


# -- search latency over stdio: 100k memories in one project, and in 20 ------------------

LATENCY_PROJECTS = 20
LATENCY_BATCH = 500  # memories per transaction, as `memory-mcp import` writes them


async def build_latency_store(
    directory: Path, size: int, projects: int, model_name: str, say: Callable[[str], None]
) -> None:
    """`size` synthetic memories (bench/latency.py's text and vectors), memory i in project
    `p{i % projects}`, unless an earlier run left them in `directory`."""
    from bench.latency import GENERATOR_VERSION, SyntheticDocumentEmbedder, SyntheticText
    from bench.settings import store_settings

    marker = directory / f"built-v{GENERATOR_VERSION}-{projects}"
    if marker.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("memory.db*"):
        stale.unlink()
    text, embedder = SyntheticText(), SyntheticDocumentEmbedder(model_name)
    async with open_app(store_settings(directory), embedder, background=False) as app:
        service, caller = app.service, app.caller
        for start in range(0, size, LATENCY_BATCH):
            batch = []
            for i in range(start, min(start + LATENCY_BATCH, size)):
                writer = replace(caller, project=f"p{i % projects:02d}")
                request = StoreRequest(f"note-{i}", text.memory())
                batch.append((writer, service.prepare_memory(writer, request), None))
            await service.write_batch(batch)
            if (start + LATENCY_BATCH) % 20_000 == 0:
                say(f"  {start + LATENCY_BATCH:,} / {size:,} memories in {projects} project(s)")
        embedder.ready = True
        await service.vectors.embed_pending(batch_size=2_048)
    marker.write_text(f"{size}\n")


def search_latency(
    stores: dict[int, Path | str],
    scratch: Path,
    size: int,
    searches: int,
    embedder: str,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Search p50/p95 over stdio of a server in project p00 of a store of `size` memories
    in 1 project and of one in LATENCY_PROJECTS (`stores`: each one's SQLite file or
    database URL, by its number of projects): both servers up at once, each query sent
    to one then the other (the order alternating), so a change of load hits both alike."""
    import sys

    from bench.latency import QUERY_KINDS, SyntheticText
    from bench.settings import server_env
    from bench.startup import _initialize, _search, spawn_server

    exe = str(Path(sys.executable).with_name("memory-mcp"))
    servers = {}
    for projects, db in stores.items():
        env = server_env(scratch, embedder=embedder, project="p00")
        servers[projects] = spawn_server(exe, db, env)
    seconds: dict[int, list[float]] = {projects: [] for projects in servers}
    try:
        for proc in servers.values():
            _initialize(proc)
        text = SyntheticText(seed=size + 1)
        request_id = 1
        for proc in servers.values():  # the model loaded, the index caught up
            while not _search(proc, request_id := request_id + 1, "warm up").get("semantic"):
                time.sleep(0.2)
            for i in range(5):
                _search(proc, request_id := request_id + 1, text.query(QUERY_KINDS[i % 3]))
        for i in range(searches):
            query = text.query(QUERY_KINDS[i % len(QUERY_KINDS)])
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for projects in order:
                began = time.perf_counter()
                _search(servers[projects], request_id := request_id + 1, query)
                seconds[projects].append(time.perf_counter() - began)
            if (i + 1) % 50 == 0:
                say(f"  {i + 1} / {searches} searches each")
    finally:
        for proc in servers.values():
            proc.kill()
            proc.wait(timeout=60)
    one, many = seconds[1], seconds[LATENCY_PROJECTS]
    return {
        "memories": size,
        "searches": searches,
        "one_project_ms": {"p50": percentile_ms(one, 50), "p95": percentile_ms(one, 95)},
        "twenty_projects_ms": {"p50": percentile_ms(many, 50), "p95": percentile_ms(many, 95)},
        "p50_ratio": percentile_ms(many, 50) / percentile_ms(one, 50),
    }


async def run_latency(
    workdir: Path,
    size: int,
    searches: int,
    embedder_name: str,
    embedder: Embedder,
    say: Callable[[str], None],
    backend: str = "sqlite",
) -> dict[str, Any]:
    """`search_latency` on the SQLite stores (built on the first run), or on copies of
    them in PostgreSQL (`backend` "postgres": bench/scale_postgres.py's server and bulk
    load, kept in `workdir`/postgres for the next runs)."""
    import anyio.to_thread

    files: dict[int, Path | str] = {}
    for projects in (1, LATENCY_PROJECTS):
        say(f"building or reusing {size:,} memories in {projects} project(s)")
        folder = workdir / f"{size}-in-{projects}"
        await build_latency_store(folder, size, projects, embedder.model_name, say)
        files[projects] = folder / "memory.db"
    scratch = workdir / "scratch"
    if backend == "sqlite":
        measured = await anyio.to_thread.run_sync(
            search_latency, files, scratch, size, searches, embedder_name, say
        )
        return {**measured, "backend": "sqlite"}
    from bench.scale_postgres import database_url, has_database, load_from_sqlite, postgres_server

    with postgres_server(workdir / "postgres") as server:
        urls: dict[int, Path | str] = {}
        for projects, file in files.items():
            name = f"projects_{size}_in_{projects}"
            marker = workdir / "postgres" / f"{name}.built"
            if not marker.exists() or not has_database(server, name):
                say(f"copying {file} into PostgreSQL database {name}")
                await load_from_sqlite(server, name, Path(file), say)
                marker.write_text(f"{size}\n")
            urls[projects] = database_url(server, name)
        measured = await anyio.to_thread.run_sync(
            search_latency, urls, scratch, size, searches, embedder_name, say
        )
    return {**measured, "backend": "postgres"}


def render_latency(result: dict[str, Any]) -> str:
    rows = [
        [f"{result['memories']:,} in 1 project", result["one_project_ms"]["p50"],
         result["one_project_ms"]["p95"]],
        [f"{result['memories']:,} in {LATENCY_PROJECTS} projects",
         result["twenty_projects_ms"]["p50"], result["twenty_projects_ms"]["p95"]],
    ]  # fmt: skip
    title = f"search over stdio ({result.get('backend', 'sqlite')}), in project p00"
    return "\n".join(
        [
            table([title, "p50 ms", "p95 ms"], rows),
            f"p50 ratio ({LATENCY_PROJECTS} projects / 1): {result['p50_ratio']:.3f}",
        ]
    )


__all__ = ["load_all", "render_latency", "run_latency", "run_projects"]
