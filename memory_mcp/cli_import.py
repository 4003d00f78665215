"""`memory-mcp import FILE`: check the whole file, then store and embed it, stoppable."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio

from memory_mcp.app import AppContext, open_app
from memory_mcp.settings import Settings


def cmd_import(settings: Settings, path: Path, skip_invalid: bool = False) -> int:
    """Check every line first (store_memory's rules, and the cap), store nothing if one is
    bad unless `skip_invalid`; then store and embed. Ctrl-C stops between two writes or two
    batches and says how far it got (exit 130); running again finishes the job."""
    from tqdm import tqdm

    from memory_mcp.embeddings import EmbeddingUnavailableError
    from memory_mcp.jsonl import (
        ImportReport,
        check_cap,
        embed_all,
        prepare_lines,
        read_lines,
        write_lines,
    )

    try:
        lines, errors = read_lines(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(f"memory-mcp: cannot read {path}: {exc}") from exc
    report = ImportReport()
    skipped = 0

    async def job(app: AppContext) -> int:
        nonlocal skipped
        prepared, invalid = prepare_lines(app.service, lines, app.caller)
        bad = sorted(errors + invalid, key=_line_number)
        for error in bad:
            print(f"memory-mcp: {path}: {error}", file=sys.stderr)
        if bad and not skip_invalid:
            print(
                f"memory-mcp: nothing imported: {len(bad)} bad lines (fix them, or use "
                "--skip-invalid to import the others)",
                file=sys.stderr,
            )
            return 1
        skipped = len(bad)
        await check_cap(app.service, prepared)
        if not await write_lines(app.service, prepared, report, stop=interrupt.is_set):
            return 130
        print(f"stored {report.stored} memories; embedding", file=sys.stderr, flush=True)
        with tqdm(desc="embedding", unit="text", file=sys.stderr) as bar:
            finished = await embed_all(
                app.service, report, progress=bar.update, stop=interrupt.is_set
            )
        return (1 if report.refused else 0) if finished else 130

    async def runner() -> int:
        async with open_app(settings, background=False) as app:
            return await job(app)

    with _first_ctrl_c_stops_gently() as interrupt:
        try:
            code = anyio.run(runner)
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
            f"lines skipped, {len(report.refused)} refused by the store), embedded "
            f"{report.embedded} texts",
            file=sys.stderr,
        )
    return code


def _line_number(error: str) -> int:
    number = error.removeprefix("line ").split(":", 1)[0]
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
