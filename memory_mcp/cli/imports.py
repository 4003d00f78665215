"""`memory-mcp import FILE`: check the whole file, then store and embed it in batches,
with a progress bar on a terminal; stoppable, and safe to kill and run again."""

from __future__ import annotations

import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from memory_mcp.app.context import AppContext
from memory_mcp.settings import Settings
from memory_mcp.transfer.importers import read_file

if TYPE_CHECKING:  # the service: imported when the command runs
    from memory_mcp.graph.entities import Relation
    from memory_mcp.graph.profile import KnowledgeGraph


def cmd_import(
    settings: Settings,
    path: Path,
    skip_invalid: bool = False,
    file_format: str = "jsonl",
    scope: str = "agent",
    keep_owners: bool = False,
) -> int:
    """Check every line first (store_memory's rules, ownership of swarm keys, and the
    cap), store nothing if one is bad unless `skip_invalid`; then store in batches (one
    transaction each) and embed. Ctrl-C stops between two batches and says how far it got
    (exit 130); running again finishes the job (transfer/batches.py).

    `file_format`: our own JSONL export, or another server's file (importers/), read into
    the same lines; `scope` is the scope of the memories such a file makes. The memories
    are the importing agent's; a line naming another owner is a bad line unless
    `keep_owners` (transfer/jsonl.prepare_lines). The summary names the owners."""
    from memory_mcp.semantic.embeddings import EmbeddingUnavailableError
    from memory_mcp.transfer.batches import (
        ImportReport,
        embed_batches,
        load_model_quietly,
        ownership_problems,
        texts_to_embed,
        write_batches,
    )
    from memory_mcp.transfer.jsonl import check_cap, others_swarm_lines, prepare_lines

    try:
        source = read_file(path, file_format, scope)
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"memory-mcp: cannot read {path}: {exc}") from exc
    lines, errors, unit = source.lines, source.errors, source.unit
    others: dict[str, int] = {}
    if not keep_owners:
        lines, others = others_swarm_lines(lines, settings.agent_id)
    report = ImportReport()
    skipped = 0
    owners: dict[str, int] = {}

    async def job(app: AppContext, write: bool = True) -> int:
        """The import; `write=False`: its checks only, quiet unless they refuse it."""
        nonlocal skipped
        graph = _graph(app, scope) if file_format == "memory-json" else None
        relations: list[Relation] = []
        own_lines = lines
        if graph is not None:  # relations between entities become links (graph/profile.py)
            own_lines, relations = await graph.split_relations(lines)
        # --project: every line's project; else each line's own (the current project if none).
        prepared, invalid = prepare_lines(
            app.service, own_lines, app.caller, unit, keep_owners, settings.project
        )
        refused = await ownership_problems(app.service, prepared)
        bad = sorted(errors + invalid + refused, key=_line_number)
        refusing = bool(bad) and not skip_invalid
        if not write and not refusing:
            refused_numbers = {_line_number(problem) for problem in refused}
            await check_cap(app.service, [x for x in prepared if x.number not in refused_numbers])
            return 0
        for error in bad:
            print(f"memory-mcp: {path}: {error}", file=sys.stderr)
        if refusing:
            print(
                f"memory-mcp: nothing imported: {len(bad)} bad {source.units} "
                "(fix them, or use --skip-invalid to import the others)",
                file=sys.stderr,
            )
            return 1
        skipped = len(bad)
        for line in prepared:  # stored, with the secret's characters replaced
            for r in line.memory.redactions:
                print(
                    f"memory-mcp: {path}: {line.where}: {r.field}: {r.kind} redacted "
                    f"(characters {r.start + 1}-{r.end})",
                    file=sys.stderr,
                )
        refused_numbers = {_line_number(problem) for problem in refused}
        prepared = [line for line in prepared if line.number not in refused_numbers]
        for line in prepared:
            owners[line.memory.agent_id] = owners.get(line.memory.agent_id, 0) + 1
        await check_cap(app.service, prepared)
        async with anyio.create_task_group() as loading:
            if await app.service.vectors.unembedded(texts_to_embed(prepared, report)):
                # The model loads while the rows are written.
                loading.start_soon(load_model_quietly, app.service)
            with _progress(len(prepared), "storing", "line") as bar:
                written = await write_batches(
                    app.service, prepared, report, progress=bar, stop=interrupt.is_set
                )
            if not written:
                loading.cancel_scope.cancel()
                return 130
            if graph is not None and relations:
                linked, problems = await graph.link_imported(relations)
                report.refused += problems
                print(f"linked {linked} relations", file=sys.stderr, flush=True)
        texts = await app.service.vectors.unembedded(texts_to_embed(prepared, report))
        print(f"stored {report.stored} memories; embedding", file=sys.stderr, flush=True)
        with _progress(len(texts), "embedding", "text") as bar:
            finished = await embed_batches(
                app.service, texts, report, progress=bar, stop=interrupt.is_set
            )
        return (1 if report.refused else 0) if finished else 130

    with _first_ctrl_c_stops_gently() as interrupt:
        try:
            from memory_mcp.app.root import run_with_app

            code = 0
            store = settings.database_file
            if store is not None and not store.exists():
                # A new store: the file is checked against an empty scratch store first,
                # so an import refused as a whole leaves no store behind.
                with tempfile.TemporaryDirectory(prefix="memory-mcp-import-") as scratch:
                    checking = settings.model_copy(update={"db": f"{scratch}/check.db"})
                    code = run_with_app(checking, lambda app: job(app, write=False))
            if code == 0:
                code = run_with_app(settings, job)
        except KeyboardInterrupt:  # a second Ctrl-C
            code = 130
        except EmbeddingUnavailableError as exc:
            print(
                f"memory-mcp: stored {report.stored} memories but cannot embed them ({exc}); "
                "keyword search finds them, and a running server embeds them",
                file=sys.stderr,
            )
            return 1
    for refusal in report.refused:
        print(f"memory-mcp: {path}: refused: {refusal}", file=sys.stderr)
    if code == 130:
        print(
            f"memory-mcp: interrupted: stored {report.stored}, embedded {report.embedded}; "
            "run again to finish",
            file=sys.stderr,
        )
    elif code == 0 or report.refused:
        print(
            f"imported {report.stored} memories ({report.unchanged} unchanged, {skipped} bad "
            f"{source.units} skipped, {len(report.refused)} refused by the "
            f"store), embedded {report.embedded} texts; {_owners(owners)}",
            file=sys.stderr,
        )
    if others and code != 130:
        print(
            f"left out {sum(others.values())} swarm memories of other agents "
            f"({_counts(others)}): they are theirs, not {settings.agent_id!r}'s; "
            "--keep-owners imports them as theirs",
            file=sys.stderr,
        )
    return code


def _owners(counts: dict[str, int]) -> str:
    """Whose memories the file's lines are ("owner me", "owners lead 1, me 2")."""
    if len(counts) <= 1:
        return f"owner {next(iter(counts), '-')}"
    return f"owners {_counts(counts)}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{agent} {n}" for agent, n in sorted(counts.items()))


def _graph(app: AppContext, scope: str) -> KnowledgeGraph:
    from memory_mcp.graph.profile import KnowledgeGraph
    from memory_mcp.models import Scope

    return KnowledgeGraph(app.service, app.caller, Scope(scope))


@contextmanager
def _progress(total: int, what: str, unit: str, stream: TextIO | None = None) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal; nothing at all otherwise (a log
    file or a pipe gets the one-line summary only)."""
    from tqdm import tqdm

    stream = stream or sys.stderr
    with tqdm(total=total, desc=what, unit=unit, file=stream, disable=not stream.isatty()) as bar:
        yield bar.update


def _line_number(error: str) -> int:
    """The number of "line 3: ..." or "memory 3: ..." (0 if there is none)."""
    number = error.split(":", 1)[0].rpartition(" ")[2]
    return int(number) if number.isdigit() else 0


@contextmanager
def _first_ctrl_c_stops_gently() -> Iterator[threading.Event]:
    """The first SIGINT only sets an event the job checks between steps (a query cut off
    mid-flight can hang aiosqlite at loop close); a second one interrupts at once."""
    interrupt = threading.Event()

    def first(_signum: int, _frame: object) -> None:
        interrupt.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)

    try:
        previous = signal.signal(signal.SIGINT, first)
    except ValueError:  # not the main thread (tests): no signal handling
        yield interrupt
        return
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, previous)
