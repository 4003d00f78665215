"""`bench scale` (bench/scale.py) on a tiny data folder in its format: real texts embedded by
the real model, variants made from them as docs/VECTOR_INDEX.md describes; a real server
spawned over stdio. No speed thresholds (benchmarks are not timed tests): the numbers are
computed, reported, and the store is built once."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.command import main as bench_main
from memory_mcp.semantic.embeddings import Embedder

TOPICS = [
    "The deploy script runs database migrations before restarting the web workers.",
    "Our staging cluster uses PostgreSQL 16 with nightly snapshots to object storage.",
    "The cat named Miso sleeps on the office printer every afternoon.",
    "Release checklists are owned by the platform team and reviewed on Fridays.",
    "Unit tests run with pytest in two workers; integration tests need Docker.",
    "The mobile app caches user avatars for a week before fetching them again.",
    "Invoices are generated on the first of the month and emailed as PDF files.",
    "The search service ranks results by BM25 and then by recency.",
]
QUERIES = [
    "how are migrations applied during deploys",
    "which database does staging use",
    "what is the office pet called",
    "who owns the release checklist",
    "how do we run the tests",
    "when are invoices sent",
]
MEMORIES = 40


@pytest.fixture
def scale_data(tmp_path: Path, real_embedder: Embedder, anyio_backend: str) -> Path:
    import anyio

    folder = tmp_path / "data"
    folder.mkdir()
    real = anyio.run(real_embedder.embed, TOPICS)
    queries = anyio.run(real_embedder.embed, QUERIES)
    rng = np.random.default_rng(26)
    parents = np.arange(MEMORIES) % len(TOPICS)
    vectors = real[parents] + rng.standard_normal((MEMORIES, real.shape[1])) * 0.02
    vectors[: len(TOPICS)] = real  # each text's own vector once
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(folder / "million.npy", vectors.astype(np.float32))
    np.save(folder / "million_parent.npy", parents)
    np.save(folder / "million_is_real.npy", np.arange(MEMORIES) < len(TOPICS))
    np.save(folder / "bench_queries.npy", queries)
    for name, texts in (("corpus.jsonl", TOPICS), ("bench_queries.jsonl", QUERIES)):
        (folder / name).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return folder


def test_bench_scale_reports_every_number_and_builds_once(
    scale_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.json"
    args = ["scale", "--memories", str(MEMORIES), "--searches", "3", "--data", str(scale_data)]
    args += ["--workdir", str(tmp_path / "work"), "--json", str(out)]
    assert bench_main(args) == 0
    printed = capsys.readouterr()
    assert "rows/s" in printed.err and "load average" in printed.out
    first = json.loads(out.read_text())["sqlite"]
    for key in ("startup_s", "p50_ms", "p95_ms", "recall_at_10", "rss_mb"):
        assert first[key] > 0, key
    assert first["recall_at_10"] == 1.0  # a small store: the exact scan
    assert first["import_rows_per_s"] > 0
    # Every row a memory of its own (the variants too), with its own vector.
    db = tmp_path / "work" / str(MEMORIES) / "memory.db"
    import sqlite3

    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (MEMORIES,)
        assert conn.execute("SELECT count(*) FROM embeddings").fetchone() == (MEMORIES,)
        # One project, whichever working tree the benchmark runs from (the server is
        # spawned with the store's: another would see none of it).
        assert conn.execute("SELECT DISTINCT project FROM memories").fetchall() == [("scale",)]
    assert bench_main(args) == 0
    second = json.loads(out.read_text())["sqlite"]
    assert "import_rows_per_s" not in second  # the store was kept, not built again
    assert second["recall_at_10"] == 1.0


def test_bench_scale_names_missing_data(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="cannot read the scale data"):
        bench_main(["scale", "--memories", "10", "--data", str(tmp_path / "nothing")])


def test_bench_fast_scale_part_prints_p50_p95_against_the_target(
    scale_data: Path, tmp_path: Path
) -> None:
    """`bench fast --scale-data --scale-workdir`: bench scale's store and server, its
    numbers printed beside the fast paths' (the other parts left empty here)."""
    from bench.fast_paths import SCALE_TARGET_RATIO, FastReport, ScaleRequest, scale_search

    said: list[str] = []
    request = ScaleRequest(scale_data, tmp_path / "work", MEMORIES, searches=3)
    result = scale_search(request, said.append)
    assert any("building or reusing" in line for line in said)
    assert (tmp_path / "work" / str(MEMORIES) / "built").read_text().strip() == str(MEMORIES)
    report = FastReport((0.1, 0.2, 0.3), (0.1, 0.2, 0.3), [], {}, {}, 0, "43", scale=result)
    scale = report.summary()["scale"]
    assert scale["memories"] == MEMORIES and scale["searches"] == 3
    assert scale["recall_at_10"] == 1.0
    assert scale["p95_over_p50"] == round(scale["p95_ms"] / scale["p50_ms"], 2)
    assert len(scale["load_average"]) == 2
    row = report.render().splitlines()[-1]
    assert f"{scale['p50_ms']:.1f}" in row and f"{scale['p95_ms']:.1f}" in row
    met = scale["p95_ms"] / scale["p50_ms"] <= SCALE_TARGET_RATIO
    assert row.endswith("  met" if met else "not met")
    assert f"{MEMORIES:,} memories, SQLite" in report.render()


def test_bench_scale_splits_the_postgres_store_into_projects_searched_from_one(
    scale_data: Path, tmp_path: Path, pg_server: object
) -> None:
    """`--projects 2`: a copy of the PostgreSQL database with its memories dealt into two
    projects, measured as the whole one is, recall against the first project's rows."""
    from bench.scale_postgres import database_url, postgres_server
    from tests.conftest import pg_query

    out = tmp_path / "scale.json"
    args = ["scale", "--memories", str(MEMORIES), "--searches", "3", "--data", str(scale_data)]
    args += ["--workdir", str(tmp_path / "work"), "--json", str(out), "--backend", "postgres"]
    assert bench_main([*args, "--projects", "2"]) == 0
    result = json.loads(out.read_text())
    split = result["postgres_2_projects"]
    for key in ("startup_s", "p50_ms", "p95_ms", "rss_mb", "split_s"):
        assert split[key] > 0, key
    assert split["recall_at_10"] == 1.0 and result["postgres"]["recall_at_10"] == 1.0
    with postgres_server(tmp_path / "work" / "postgres") as server:
        rows = pg_query(
            server,
            database_url(server, f"scale_{MEMORIES}_p2"),
            "SELECT string_agg(concat_ws(':', project, n, first), ',' ORDER BY project) "
            "FROM (SELECT project, count(*) n, min(id) first FROM memories GROUP BY 1) p;",
        )
        indexes = [
            pg_query(
                server,
                database_url(server, name),
                "SELECT indexname FROM pg_indexes WHERE tablename = 'memories';",
            )
            for name in (f"scale_{MEMORIES}", f"scale_{MEMORIES}_p2")
        ]
    assert "scale-00:20:1,scale-01:20:2" in rows
    # Both made by the benchmark: opening a store whose schema is current makes none.
    assert all("ix_memories_search_text" in found for found in indexes)
