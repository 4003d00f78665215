"""`bench scale --projects P`: the same store split into P projects, searched from one.

Every store `bench scale` builds is in one project, SCALE_PROJECT, and its server is
spawned with the store's project (`stored_project`: a store built before it was pinned is
in the project of the working tree it was built from) as the current one, wherever the
benchmark runs from: a server whose project (by default its working tree's) differs from
the store's sees none of it, and a benchmark of it measures searches that find nothing
(docs/lab/postgres-at-scale.md).

With P > 1 (PostgreSQL only), memory `id` is in project `project_of(BASE, id - 1, P)` (rows
dealt round-robin, so each project's rows are spread over the whole table, as a team's
projects written over time are): a copy of the one-project database (a template copy:
the HNSW index, on `embeddings`, does not depend on the project and is copied as it is),
whose memories get their projects in one UPDATE, without the full-text index, made after.
The server searches from `project_of(BASE, 0, P)`; recall@10 is against the exact scan of that
project's rows only."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCALE_PROJECT = "scale"


def stored_project(sqlite_file: Path) -> str:
    """The project of the store's memories (its first one's: the build writes one)."""
    source = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True)
    try:
        row = source.execute("SELECT project FROM memories ORDER BY id LIMIT 1").fetchone()
    finally:
        source.close()
    return str(row[0]) if row else SCALE_PROJECT


def project_of(base: str, row: int, projects: int) -> str:
    """The project of the store's row `row` (memory row + 1) when split into `projects`."""
    return base if projects <= 1 else f"{base}-{row % projects:02d}"


def database_name(memories: int, projects: int) -> str:
    return f"scale_{memories}" if projects <= 1 else f"scale_{memories}_p{projects}"


def split_database(
    server: Any, source: str, name: str, base: str, projects: int, say: Callable[[str], None]
) -> dict[str, float]:
    """Database `name`: a copy of `source` (one project) with its memories in `projects`
    projects. No connection may be open to `source` (CREATE DATABASE ... TEMPLATE)."""
    from bench.scale_postgres import FULLTEXT_INDEX, fulltext_index_ddl, has_database

    began = time.perf_counter()
    if has_database(server, name):
        server.psql(f"DROP DATABASE {name} WITH (FORCE);")
    server.psql(f"CREATE DATABASE {name} TEMPLATE {source} STRATEGY FILE_COPY;")
    copied_s = time.perf_counter() - began
    say(f"  {source} copied to {name} in {copied_s:.0f} s; setting its projects")
    began = time.perf_counter()
    server.psql(
        f"\\c {name}\n"
        f"DROP INDEX IF EXISTS {FULLTEXT_INDEX};\n"
        f"UPDATE memories SET project = '{base}-' || "
        f"lpad(((id - 1) % {projects})::text, 2, '0');"
    )
    # The product's own GIN index (its schema is current: opening the store makes nothing).
    server.psql(f"\\c {name}\n{fulltext_index_ddl()};\nVACUUM ANALYZE;")
    split_s = time.perf_counter() - began
    say(f"  projects, full-text index and statistics in {split_s:.0f} s")
    return {"template_copy_s": round(copied_s, 1), "split_s": round(split_s, 1)}
