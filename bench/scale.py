"""`python -m bench scale --memories N`: a store of N memories of real text with real
MiniLM vectors, and a real server over it on stdio.

The data (`--data DIR`, default bench/data/scale; made by `bench scale-data`,
bench/scale_data.py; docs/VECTOR_INDEX.md has the recipe): `million.npy` (float32 unit
vectors, one per row, N rows at least), `million_parent.npy` and `million_is_real.npy` (the
corpus text each row comes from, and whether the row is that text's own vector),
`corpus.jsonl` (the texts: {"text": ...} per line), and `bench_queries.jsonl` +
`bench_queries.npy` (search texts never stored, and their vectors as the server embeds a
search). A row that is not a text's own vector is a new point near it, stored as that text
plus " (variant ROW)", so every memory has its own content and vector.

What it measures:
- the import of the first N rows without embedding (the import's own batches, then the
  vectors written beside them, as `import` would have computed them): rows/s; the store and
  its persisted vector index are kept in WORKDIR/N for the next runs;
- recall@10 of the same vector index (loaded from its file, in this process) against the
  exact scan of the N stored vectors, over the query vectors; measured first, it also
  leaves the database's pages in memory (the OS's cache, PostgreSQL's shared buffers) as
  a database that has been serving a team would have them, and so does a pass of the
  timed queries through the keyword arm (`warm_keyword_arm`);
- then a new `memory-mcp serve` spawned over stdio: spawn -> the first search answered by
  meaning, then p50/p95 of one search at a time over the query texts, and its peak RSS
  (VmHWM).

`--backend postgres` (or `both`): the same store copied into PostgreSQL + pgvector
(bench/scale_postgres.py), then the same measures of a server on it, recall@10 being
pgvector's HNSW search's; the JSON holds each backend's under "sqlite" and "postgres"."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.latency import SyntheticDocumentEmbedder
from bench.scale_postgres import database_url, has_database, load_from_sqlite, postgres_server
from bench.scale_projects import (
    SCALE_PROJECT,
    database_name,
    project_of,
    split_database,
    stored_project,
)
from bench.settings import BenchSettings, server_env, store_settings
from bench.startup import _initialize, _peak_rss_mb, _search, machine, spawn_server
from bench.stats import percentile_ms
from memory_mcp.app.root import open_app
from memory_mcp.models import EVERY_PROJECT, SearchRequest, StoreRequest, Visibility
from memory_mcp.settings import Settings
from memory_mcp.store.memories_table import content_hash

BATCH = 5_000
GIVE_UP_SECONDS = 600.0
WARM_UP = 5


@dataclass
class ScaleData:
    vectors: np.ndarray  # memory-mapped: N x 384 float32
    parents: np.ndarray
    is_real: np.ndarray
    texts: list[str]
    query_texts: list[str]
    query_vectors: np.ndarray

    def text(self, row: int) -> str:
        text = self.texts[int(self.parents[row])]
        return text if self.is_real[row] else f"{text} (variant {row})"


def load_data(folder: Path, memories: int) -> ScaleData:
    try:
        vectors = np.load(folder / "million.npy", mmap_mode="r")
        data = ScaleData(
            vectors,
            np.load(folder / "million_parent.npy"),
            np.load(folder / "million_is_real.npy"),
            _texts(folder / "corpus.jsonl"),
            _texts(folder / "bench_queries.jsonl"),
            np.load(folder / "bench_queries.npy"),
        )
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"memory-mcp: cannot read the scale data in {folder}: {exc}") from exc
    if len(vectors) < memories:
        raise SystemExit(f"memory-mcp: {folder} holds {len(vectors):,} vectors, not {memories:,}")
    return data


def _texts(path: Path) -> list[str]:
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines]


async def build_store(
    directory: Path, data: ScaleData, memories: int, model_name: str, say: Callable[[str], None]
) -> dict[str, float] | None:
    """The first `memories` rows as memories with their vectors, and the vector index built
    and written beside them; None when an earlier run left them in `directory`."""
    marker = directory / "built"
    if marker.exists() and marker.read_text().strip() == str(memories):
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("memory.db*"):
        if stale.is_dir():
            for part in stale.iterdir():
                part.unlink()
            stale.rmdir()
        else:
            stale.unlink()
    started = time.perf_counter()
    vector_seconds = 0.0
    settings = store_settings(directory, project=SCALE_PROJECT)
    async with open_app(settings, SyntheticDocumentEmbedder(model_name), background=False) as app:
        service, caller, vectors = app.service, app.caller, app.service.vectors
        for start in range(0, memories, BATCH):
            rows = range(start, min(start + BATCH, memories))
            prepared = [
                service.prepare_memory(caller, StoreRequest(f"m{row}", data.text(row)))
                for row in rows
            ]
            await service.write_batch([(caller, new, None) for new in prepared])
            began = time.perf_counter()
            await vectors.rows.save(  # under the text as stored (secrets redacted)
                vectors.model,
                [
                    (content_hash(new.value), np.asarray(data.vectors[row], dtype=np.float32))
                    for row, new in zip(rows, prepared, strict=True)
                ],
                time.time(),
            )
            vector_seconds += time.perf_counter() - began
            if (start // BATCH) % 20 == 19:
                say(f"  {start + BATCH:,} / {memories:,} memories written")
        imported = time.perf_counter() - started
        if await vectors.has_pending():
            raise SystemExit("memory-mcp: some memories have no vector (bench/scale.py)")
        last = await service.get(caller, memories)
        if last.key != f"m{memories - 1}":
            raise SystemExit("memory-mcp: the store's ids do not follow the rows")
        began = time.perf_counter()
        await vectors.search.catch_up()
        await vectors.search.persist_if_due(vectors.clock())
        index_seconds = time.perf_counter() - began
    marker.write_text(f"{memories}\n")
    return {
        "import_rows_per_s": round(memories / imported, 1),
        "import_vector_s": round(vector_seconds, 1),
        "index_build_s": round(index_seconds, 1),
    }


async def build_coarse(directory: Path, model_name: str) -> float | None:
    """The coarse index a server builds in the background at its first start, built here
    first (and written beside the store) so the timed server starts with it; None when
    the store has one already (or is too small for one)."""
    async with open_app(
        store_settings(directory, project=SCALE_PROJECT),
        SyntheticDocumentEmbedder(model_name),
        background=False,
    ) as app:
        vectors = app.service.vectors
        await vectors.search.catch_up()
        began = time.perf_counter()
        if not await vectors.search.build_coarse_if_due():
            return None
        await vectors.search.persist_if_due(vectors.clock())
        return round(time.perf_counter() - began, 1)


def serve_and_search(
    exe: str,
    db: str,
    queries: list[str],
    scratch: Path,
    say: Callable[[str], None],
    project: str,
) -> dict[str, float]:
    """Spawn (its current project the store's, `project`) -> the first search by meaning;
    then each query once, one at a time."""
    started = time.perf_counter()
    proc = spawn_server(exe, db, server_env(scratch, embedder="onnx", project=project))
    try:
        _initialize(proc)
        request_id = 1
        while True:
            request_id += 1
            if _search(proc, request_id, queries[0]).get("semantic"):
                break
            if time.perf_counter() - started > GIVE_UP_SECONDS:
                raise RuntimeError("no search by meaning")
        startup = time.perf_counter() - started
        say(f"first search by meaning {startup:.2f} s after spawn")
        seconds = []
        for i, query in enumerate(queries[1:]):
            request_id += 1
            began = time.perf_counter()
            _search(proc, request_id, query)
            if i >= WARM_UP:
                seconds.append(time.perf_counter() - began)
        return {
            "startup_s": round(startup, 2),
            "p50_ms": round(percentile_ms(seconds, 50), 1),
            "p95_ms": round(percentile_ms(seconds, 95), 1),
            "searches": len(seconds),
            "rss_mb": round(_peak_rss_mb(proc.pid)),
        }
    finally:
        proc.kill()
        proc.wait(timeout=60)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


def exact_top10(data: ScaleData, memories: int, every: int = 1) -> np.ndarray:
    """The memory ids of each query's 10 nearest among the first `memories` rows (those
    whose row is a multiple of `every`: one project of a split store), by the exact
    float32 scan (row r is memory r + 1)."""
    queries = np.ascontiguousarray(data.query_vectors, dtype=np.float32)
    best = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 10), dtype=np.int64)
    for start in range(0, memories, 100_000):
        first = start + (-start % every)
        block = np.asarray(data.vectors[first : min(start + 100_000, memories) : every])
        scores = np.concatenate([best, queries @ block.T], axis=1)
        rows = np.concatenate(
            [
                best_rows,
                np.broadcast_to(
                    np.arange(first, first + every * len(block), every), (len(queries), len(block))
                ),
            ],
            axis=1,
        )
        top = np.argpartition(-scores, 9, axis=1)[:, :10]
        best = np.take_along_axis(scores, top, 1)
        best_rows = np.take_along_axis(rows, top, 1)
    return best_rows + 1


async def recall_at_10(
    settings: Settings, data: ScaleData, truth: np.ndarray, model_name: str
) -> float:
    """The store's own vector search (the in-process index as the server loads it, or
    pgvector's HNSW) against the exact scan's top 10, per query, over what a default
    search sees: the settings' project and `*`."""
    queries = np.ascontiguousarray(data.query_vectors, dtype=np.float32)
    found = 0
    async with open_app(settings, SyntheticDocumentEmbedder(model_name), background=False) as app:
        vectors, caller = app.service.vectors, app.caller
        shown = frozenset({str(settings.project), EVERY_PROJECT})
        await vectors.search.catch_up()
        for query, best in zip(queries, truth, strict=True):
            vis = Visibility(caller=caller, now=time.time(), projects=shown)
            hits = await vectors.search.nearest(query, vis, 10)
            found += len({memory_id for memory_id, _ in hits} & set(best.tolist()))
    return round(found / (10 * len(queries)), 4)


async def warm_keyword_arm(settings: Settings, queries: list[str], model_name: str) -> None:
    """The timed queries once through the keyword arm in this process (no model: the vector
    arm's pages are `recall_at_10`'s), so the store's full-text pages and rows are in
    memory as on a server that has been answering. This machine drops cold pages from its
    cache within minutes (a run after a pause read the store from disk: p50 82 ms)."""
    keyword_only = settings.model_copy(update={"search_model_wait_seconds": 0})
    async with open_app(
        keyword_only, SyntheticDocumentEmbedder(model_name), background=False
    ) as app:
        for query in queries:
            await app.service.search(app.caller, SearchRequest(query, limit=10))


async def run_scale(
    memories: int,
    data_dir: Path,
    workdir: Path,
    model_name: str,
    searches: int,
    say: Callable[[str], None],
    backends: Sequence[str] = ("sqlite",),
    projects: int = 1,
) -> dict[str, Any]:
    data = load_data(data_dir, memories)
    directory = workdir / str(memories)
    say(f"building or reusing the {memories:,}-memory store in {directory}")
    built = await build_store(directory, data, memories, model_name, say)
    if built:
        say(
            f"imported {built['import_rows_per_s']:,.0f} rows/s without embedding; "
            f"index built and written in {built['index_build_s']:.1f} s"
        )
    coarse_seconds = await build_coarse(directory, model_name)
    if coarse_seconds is not None:
        say(f"coarse index built and written in {coarse_seconds:.1f} s")
    texts = data.query_texts
    queries = [texts[i % len(texts)] for i in range(searches + WARM_UP + 1)]
    truth = exact_top10(data, memories)
    result: dict[str, Any] = {
        "benchmark": "scale",
        "memories": memories,
        "machine": machine(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    if projects > 1:
        result["projects"] = projects
    if "sqlite" in backends:
        # Recall first: it also reads the store's pages into memory, as a server that has
        # been running would find them; the server spawned after is new (its start timed).
        say("recall@10 against the exact scan")
        project = stored_project(directory / "memory.db")
        settings = store_settings(directory, project=project)
        recall = await recall_at_10(settings, data, truth, model_name)
        await warm_keyword_arm(settings, queries, model_name)
        served = _served(str(directory / "memory.db"), queries, say, project)
        result["sqlite"] = {**served, "recall_at_10": recall, **(built or {})}
        if coarse_seconds is not None:
            result["sqlite"]["coarse_build_s"] = coarse_seconds
    if "postgres" in backends:
        result["postgres"] = await _on_postgres(
            workdir, directory, memories, built is not None, queries, data, truth, model_name, say
        )
        if projects > 1:
            remade = built is not None or "copy_s" in result["postgres"]
            result[f"postgres_{projects}_projects"] = await _on_postgres(
                workdir, directory, memories, remade, queries, data,
                exact_top10(data, memories, every=projects), model_name, say, projects,
            )  # fmt: skip
    result["load"] = [round(x, 2) for x in os.getloadavg()]
    return result


def _served(
    db: str, queries: list[str], say: Callable[[str], None], project: str
) -> dict[str, float]:
    exe = str(Path(sys.executable).with_name("memory-mcp"))
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
        return serve_and_search(exe, db, queries, Path(scratch), say, project)


async def _on_postgres(
    workdir: Path,
    directory: Path,
    memories: int,
    rebuilt: bool,
    queries: list[str],
    data: ScaleData,
    truth: np.ndarray,
    model_name: str,
    say: Callable[[str], None],
    projects: int = 1,
) -> dict[str, Any]:
    """The SQLite store copied into PostgreSQL once (bench/scale_postgres.py), then the same
    measures on it; with `projects` > 1, on its copy split into that many projects
    (bench/scale_projects.py), searched from the first."""
    name = database_name(memories, projects)
    base = stored_project(directory / "memory.db")
    marker = workdir / "postgres" / f"{name}.built"
    with postgres_server(workdir / "postgres") as server:
        loaded: dict[str, float] = {}
        if rebuilt or not marker.exists() or not has_database(server, name):
            marker.unlink(missing_ok=True)
            if projects > 1:  # the one-project database was made or found just before
                say(f"splitting {database_name(memories, 1)} into {projects} projects")
                loaded = split_database(
                    server, database_name(memories, 1), name, base, projects, say
                )
            else:
                say(f"copying the store into PostgreSQL database {name}")
                loaded = await load_from_sqlite(server, name, directory / "memory.db", say)
            marker.write_text(f"{memories}\n")
        project = project_of(base, 0, projects)
        url = database_url(server, name)
        # Recall first, as on SQLite: PostgreSQL's shared buffers then hold what a team's
        # long-running database would (the HNSW index's pages); the memory server is new.
        say("recall@10 of pgvector against the exact scan")
        settings = BenchSettings(
            db=url, data_dir=directory, agent_id="bench", max_memories_per_agent=0, project=project
        )
        recall = await recall_at_10(settings, data, truth, model_name)
        await warm_keyword_arm(settings, queries, model_name)
        served = _served(url, queries, say, project)
    return {**served, "recall_at_10": recall, **loaded}


def render(result: dict[str, Any]) -> str:
    lines = []
    split = f"postgres_{result.get('projects')}_projects"
    for backend, label in (
        ("sqlite", "SQLite"),
        ("postgres", "PostgreSQL + pgvector"),
        (split, f"PostgreSQL + pgvector, {result.get('projects')} projects, searched from one"),
    ):
        if backend not in result:
            continue
        got = result[backend]
        lines.append(
            f"{result['memories']:,} memories on {label}: first search by meaning "
            f"{got['startup_s']:.2f} s after spawn, search p50 {got['p50_ms']:.1f} ms, "
            f"p95 {got['p95_ms']:.1f} ms over stdio ({got['searches']} searches), "
            f"recall@10 {got['recall_at_10']:.3f} against exact, "
            f"server peak RSS {got['rss_mb']} MB"
        )
        if "import_rows_per_s" in got:
            lines.append(f"  import without embedding: {got['import_rows_per_s']:,.0f} rows/s")
        if "hnsw_build_s" in got:
            lines.append(
                f"  bulk load {got['copy_s']:.0f} s, full-text index {got['fulltext_index_s']:.0f}"
                f" s, HNSW index {got['hnsw_build_s']:.0f} s"
            )
    lines.append(f"{result['machine']}; load average {' '.join(map(str, result['load']))}")
    return "\n".join(lines)
