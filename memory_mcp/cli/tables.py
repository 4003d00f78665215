"""How `memory-mcp search | get | list | history | delete | stats` show their answers: rich
tables for a person, or the same data as JSON for a script (`--json`, the tools' result
shapes from results/memories.py).

Memories are untrusted text: terminal escape sequences and control characters are removed
before a value is shown, and values go into rich `Text` (never markup), so a memory
holding "[bold]" or an escape sequence prints as the characters it holds, inert."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from memory_mcp.checks.text_safety import json_text_for_terminal, strip_terminal_controls

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from memory_mcp.models import JsonValue
    from memory_mcp.results.memories import (
        ListedMemory,
        Memory,
        MemoryHistory,
        MemoryList,
        SearchHit,
        SearchResults,
    )
    from memory_mcp.rules.stats import VisibleStats

# rich is imported where a table is drawn: it is a fifth of `memory-mcp get`'s CPU, which
# off a terminal prints its one memory without it (show_memory).

# Characters of a value shown in one table row (the whole value: `memory-mcp get ID`).
ROW_VALUE_CHARS = 160


# Off a terminal (a pipe, a file) rich would lay tables out for 80 columns and fold keys
# and tags into slivers: there a row is one line as wide as it needs (values are already
# cut to ROW_VALUE_CHARS), so `grep` and `cut` see whole keys and tags.
PIPED_WIDTH = 100_000


def console() -> Console:
    """stdout; plain text when it is not a terminal (a pipe or a file gets no colours),
    and as wide as its rows."""
    from rich.console import Console

    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out = Console(highlight=False, soft_wrap=False, width=PIPED_WIDTH)
    return out


def surely_piped() -> bool:
    """Whether rich would find stdout no terminal (console()): its own test (the
    TTY_COMPATIBLE and FORCE_COLOR variables, else isatty) without importing it. Where
    the variables ask for a terminal this answers False, and rich decides."""
    if os.environ.get("TTY_COMPATIBLE", "") == "1" or os.environ.get("FORCE_COLOR"):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    return isatty is not None and not isatty()


def print_json(data: BaseModel | Mapping[str, Any] | list[Any]) -> None:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, indent=2)
    sys.stdout.write(json_text_for_terminal(text) + "\n")


def safe(text: object) -> Text:
    from rich.text import Text

    return Text(strip_terminal_controls(str(text)))


def one_line(value: str, max_chars: int = ROW_VALUE_CHARS) -> Text:
    from rich.text import Text

    flat = " ".join(strip_terminal_controls(value[: max_chars * 2]).split())
    return Text(flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…")


def minute(timestamp: str | None) -> str:
    """'2026-11-23 16:40' from an ISO timestamp."""
    return timestamp[:16].replace("T", " ") if timestamp else ""


def day(timestamp: str | None) -> str:
    """'2026-11-23' from an ISO timestamp (a table's width is for values)."""
    return timestamp[:10] if timestamp else ""


def updated_cell(item: SearchHit | ListedMemory) -> str:
    """The day it was last written, and its trust marks (rules/trust.py) in a word."""
    marks = [m for m, on in (("stale", item.stale), ("verify", item.needs_verification)) if on]
    return " ".join([day(item.updated_at), *marks])


def show_search(results: SearchResults) -> None:
    out = console()
    for notice in results.notices or []:
        print(f"memory-mcp: {notice}", file=sys.stderr)
    if not results.results:
        out.print("no memories found", style="dim")
        return
    explained = any(hit.explain for hit in results.results)
    table = memory_table("score", out.is_terminal, *(["why"] if explained else []))
    for hit in results.results:
        why = [safe(hit.explain.why if hit.explain else "")] if explained else []
        table.add_row(
            str(hit.id),
            f"{hit.score:.3f}",
            hit.scope.value,
            safe(hit.project),
            safe(hit.key),
            one_line(value_text(hit.value)),
            safe(", ".join(hit.tags)),
            updated_cell(hit),
            *why,
        )
    out.print(table)


def memory_table(measure: str, terminal: bool, *extra: str) -> Table:
    """Columns for one memory a row. On a terminal the value takes the room the others
    leave; off one, every column is as wide as its widest cell."""
    from rich import box
    from rich.table import Table

    if not terminal:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for name in ("id", measure, "scope", "project", "key", "value", "tags", "updated", *extra):
            table.add_column(name, no_wrap=True, justify="right" if name == "id" else "left")
        return table
    table = Table(expand=True, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("id", no_wrap=True, justify="right", min_width=2)
    table.add_column(measure, no_wrap=True, min_width=5)
    table.add_column("scope", no_wrap=True, min_width=5)
    table.add_column("project", ratio=1, min_width=7, max_width=24, overflow="fold")
    table.add_column("key", ratio=2, min_width=16, max_width=40, overflow="fold")
    table.add_column("value", ratio=4, overflow="fold")
    table.add_column("tags", ratio=1, min_width=10, max_width=20, overflow="fold")
    table.add_column("updated", no_wrap=True, min_width=10)
    for name in extra:
        table.add_column(name, ratio=2, overflow="fold")
    return table


def memory_fields(memory: Memory) -> list[tuple[str, str]]:
    """What `memory-mcp get` shows above the value: (name, text as shown, inert)."""
    rows: list[tuple[str, object]] = [
        ("id", memory.id),
        ("key", memory.key),
        ("scope", memory.scope.value),
        ("project", memory.project),
        ("owner", memory.agent_id),
        ("written by", memory.updated_by),
        ("source", memory.source.value),
        ("version", memory.version),
        ("tags", ", ".join(memory.tags)),
        ("created", minute(memory.created_at)),
        ("updated", minute(memory.updated_at)),
        ("expires", minute(memory.expires_at) + (" (expired)" if memory.expired else "")),
        ("reads", memory.access_count),
    ]
    optional: list[tuple[str, object]] = [
        ("kind", memory.kind),
        ("confidence", memory.confidence),
        ("stale", memory.stale_reason),
        ("verify", "needs verification before acting on it" if memory.needs_verification else None),
        ("pinned", "yes" if memory.pinned else None),
        ("about agent", memory.about_agent),
        ("file", memory.file_path),
        ("flags", ", ".join(memory.flags or []) or None),
        ("metadata", json.dumps(memory.metadata, ensure_ascii=False) if memory.metadata else None),
    ]
    shown = rows + [(name, value) for name, value in optional if value is not None]
    return [(name, strip_terminal_controls(str(value))) for name, value in shown]


def value_text(value: JsonValue) -> str:
    """A value as a table shows it: text as it is, a JSON object or array as compact JSON."""
    # json_values.encoded's text, without importing the checks (the light `get` path).
    return (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )


def show_memory(memory: Memory) -> None:
    fields = memory_fields(memory)
    value = strip_terminal_controls(value_text(memory.value))
    piped = piped_memory(fields, value) if surely_piped() else None
    if piped is not None:
        sys.stdout.write(piped)
    else:
        draw_memory(fields, value)


def draw_memory(fields: list[tuple[str, str]], value: str) -> None:
    """The fields in a grid, a blank line, the value: rich's layout (a terminal's width
    and styles on one)."""
    from rich.table import Table
    from rich.text import Text

    out = console()
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for name, text in fields:
        grid.add_row(name, Text(text))
    out.print(grid)
    out.print()
    out.print(Text(value))


def piped_memory(fields: list[tuple[str, str]], value: str) -> str | None:
    """The characters show_memory's rich grid and value print off a terminal (two
    columns two cells apart, each padded to its widest cell), written without rich;
    None where rich would lay them out otherwise (a tab to expand, a line break in a
    field, a line wider than PIPED_WIDTH). tests/cli/test_tables.py holds the two equal."""
    from rich.cells import cell_len  # cell widths as rich counts them (wide CJK, emoji)

    if "\t" in value or any("\t" in text or "\n" in text for _, text in fields):
        return None
    names = max(cell_len(name) for name, _ in fields)
    texts = max(cell_len(text) for _, text in fields)
    if names + 2 + texts > PIPED_WIDTH or any(
        cell_len(line) > PIPED_WIDTH for line in value.split("\n")
    ):
        return None
    rows = (
        f"{name}{' ' * (names - cell_len(name))}  {text}{' ' * (texts - cell_len(text))}\n"
        for name, text in fields
    )
    return "".join(rows) + f"\n{value}\n"


def counts_table(title: str, counts: Mapping[str, int], total: int) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column(title.split()[-1])
    table.add_column("memories", justify="right")
    table.add_column("share", justify="right")
    for name, count in counts.items():
        share = f"{count / total:.0%}" if total else ""
        table.add_row(safe(name), f"{count:,}", share)
    return table


def show_stats(stats: VisibleStats, db_size: int | None) -> None:
    from rich.table import Table

    out = console()
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    size = f"{db_size / 1_048_576:,.1f} MiB ({db_size:,} bytes)" if db_size is not None else "n/a"
    lines: Iterable[tuple[str, str]] = (
        ("agent", f"{stats.agent_id} ({stats.role}): what it may see"),
        ("memories", f"{stats.total:,} ({stats.expired:,} expired, not yet purged)"),
        (
            "embedded",
            f"{stats.embedded_share:.0%} ({stats.embedded_texts:,} of {stats.distinct_texts:,} "
            "distinct texts have a vector)",
        ),
        ("model", stats.model),
        ("database size", size),
    )
    for name, value in lines:
        summary.add_row(name, safe(value))
    out.print(summary)
    for title, counts in (
        ("by scope", stats.by_scope),
        ("by source", stats.by_source),
        ("by agent", stats.by_agent),
        ("by project", stats.by_project),
    ):
        if counts:
            out.print(counts_table(title, counts, stats.total))


def show_list(page: MemoryList) -> None:
    out = console()
    if not page.memories:
        out.print("no memories", style="dim")
    else:
        table = memory_table("owner", out.is_terminal)
        for memory in page.memories:
            table.add_row(
                str(memory.id),
                safe(memory.agent_id),
                memory.scope.value,
                safe(memory.project),
                safe(memory.key),
                one_line(value_text(memory.value)),
                safe(", ".join(memory.tags)),
                updated_cell(memory),
            )
        out.print(table)
    if page.next_cursor:
        out.print(f"more: --cursor {page.next_cursor}", style="dim", soft_wrap=True)


def show_history(history: MemoryHistory) -> None:
    from rich import box
    from rich.table import Table

    out = console()
    table = Table(expand=out.is_terminal, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("version", no_wrap=True, justify="right")
    table.add_column("written", no_wrap=True)
    table.add_column("by", max_width=20, overflow="fold")
    table.add_column("source", no_wrap=True)
    table.add_column("tags", max_width=24, overflow="fold")
    table.add_column("value", ratio=1, overflow="fold")
    for entry in history.versions:
        table.add_row(
            f"{entry.version}{' (current)' if entry.current else ''}",
            minute(entry.written_at),
            safe(entry.written_by),
            entry.source.value,
            safe(", ".join(entry.tags)),
            safe(entry.value),
        )
    out.print(table)
    if history.stale_reason:
        out.print(f"stale: {history.stale_reason}", soft_wrap=True, markup=False)
    if history.needs_verification:
        out.print("needs verification before acting on it", soft_wrap=True)
    if history.earlier is not None:
        out.print(f"earlier: --before {history.earlier}", style="dim", soft_wrap=True)


def show_projects(counts: Mapping[str, int], current: str | None) -> None:
    """`memory-mcp projects`: each project with its memories, the current one marked."""
    from rich import box
    from rich.table import Table

    out = console()
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("project", overflow="fold")
    table.add_column("memories", justify="right", no_wrap=True)
    for name, count in sorted(counts.items(), key=lambda item: (item[0] != "*", item[0])):
        label = f"{name}  (current)" if name == current else name
        if name == "*":
            label = "*  (every project)"
        table.add_row(safe(label), f"{count:,}")
    out.print(table)
