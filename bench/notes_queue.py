"""How long a note waits behind a big one: a real `memory-mcp serve` over stdio, its watcher
and its embedding worker, the real model.

Two scenarios. `--hostile ROUNDS`: each round drops the whole hostile set at once (a ~1 MB
note, a binary file named `.md`, a FIFO named `.md`, a hard link to a file outside the
folder, and a burst of 1,000 small notes), then one small note right after (or `--after`
seconds later, while the burst is being indexed), and prints write → found by
memory-search for that note, with the load average; then waits for the round's burst
and big note to be searchable before the next round. Without it:

Drops a 200 KB binary file named `.md` and a ~1 MB note into the memory folder, then small
notes one after another while the big one is processed, and prints:
- each small note: write → found by keyword (memory-search), write → found by meaning
  (a paraphrase that shares no word with it); median and max;
- the big note: write → keyword-searchable (a word from its last section), and write →
  every chunk embedded (read from the database file);
- what the binary file became (memories with its path).

    .venv/bin/python bench/notes_queue.py                      # this checkout's server
    .venv/bin/python bench/notes_queue.py --exe OTHER/.venv/bin/memory-mcp --timeout 300
    .venv/bin/python bench/notes_queue.py --hostile 5          # the hostile drop, 5 rounds
    .venv/bin/python bench/notes_queue.py --hostile 5 --after 2  # the note 2 s after it

A value that never arrived within --timeout is printed as "> timeout"."""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

# Small notes: a fact, a word found nowhere else, and a question that shares no word with it.
FACTS = [
    ("The office cat is called Miso.", "what is the name of our feline"),
    ("The espresso machine on floor three is broken until Friday.", "coffee maker out of order"),
    ("The parking garage closes at ten on weekends.", "when does the car park shut"),
    ("Dana files the quarterly taxes for the company.", "who handles tax paperwork"),
    ("The team lunch is on Thursdays at noon.", "when do colleagues eat together"),
]
WORDS = (
    "deploy canary region staging database backup nightly service queue worker model "
    "vector search index folder memory agent lead swarm release rollback migration "
    "schema latency budget alert dashboard runbook incident review capacity"
).split()


def big_note(size: int, last_word: str = "quetzalcoatl", seed: int = 7) -> str:
    """Markdown prose of about `size` bytes: sections of sentences; `last_word` only at
    the very end, so finding it means every chunk was written."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    section = 0
    while total < size - 200:
        if len(parts) % 6 == 0:
            section += 1
            parts.append(f"## Section {section}")
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14))).capitalize() + "."
            for _ in range(rng.randint(3, 8))
        ]
        parts.append(" ".join(sentences))
        total += len(parts[-1]) + 2
    parts.append(f"## The end\nThe last word is {last_word}.")
    return "\n\n".join(parts)


async def search(client: Client, query: str) -> list[dict[str, Any]]:
    result = await client.call_tool("memory-search", {"query": query, "limit": 50})
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content or {}
    return list(data.get("results", []))


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if await check():
            return time.monotonic() - start
        await anyio.sleep(0.05)
    return None


def unembedded(db: Path, file_path: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM memories m WHERE m.file_path = ? AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash)",
            (file_path,),
        ).fetchone()
        (total,) = conn.execute(
            "SELECT count(*) FROM memories WHERE file_path = ?", (file_path,)
        ).fetchone()
    return int(count) if total else -1


def fmt(value: float | None, timeout: float) -> str:
    return f"{value:.2f} s" if value is not None else f"> {timeout:.0f} s"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


@asynccontextmanager
async def serving(exe: str) -> AsyncIterator[tuple[Client, Path, Path]]:
    """A real server over stdio on a fresh store and notes folder, its model loaded."""
    work = Path(tempfile.mkdtemp(prefix="notes-queue-bench-"))
    notes = work / "notes"
    notes.mkdir()
    db = work / "memory.db"
    params = StdioServerParameters(
        command=exe,
        args=["serve", "--db", str(db), "--memory-dir", str(notes)],
        env={**os.environ, "HOME": str(work), "XDG_DATA_HOME": str(work / "xdg")},
    )
    async with Client(params, read_timeout_seconds=600) as client:
        start = time.monotonic()
        while True:  # the model loaded: a search no longer says it is keyword-only
            result = await client.call_tool("memory-search", {"query": "warm up"})
            if "notices" not in (result.structured_content or {}):
                break
            await anyio.sleep(0.5)
        print(f"model ready after {time.monotonic() - start:.1f} s", flush=True)
        yield client, notes, db


def note_count(db: Path, like: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        (count,) = conn.execute(
            "SELECT count(DISTINCT file_path) FROM memories WHERE file_path LIKE ?", (like,)
        ).fetchone()
    return int(count)


def drop_hostile_set(notes: Path, round_no: int, big_bytes: int, burst: int) -> None:
    """Everything at once, as fast as Python writes it: the folder sees one storm."""
    last_word = f"quetzalcoatl{round_no}"
    (notes / f"big-{round_no}.md").write_text(big_note(big_bytes, last_word, seed=round_no))
    (notes / f"blob-{round_no}.md").write_bytes(os.urandom(200_000))
    os.mkfifo(notes / f"fifo-{round_no}.md")
    outside = notes.parent / f"outside-{round_no}.md"
    outside.write_text("A file outside the memory folder, linked into it.")
    os.link(outside, notes / f"hard-{round_no}.md")
    for n in range(burst):
        (notes / f"burst-{round_no}-{n:04}.md").write_text(f"# Burst {n}\nBurst note {n}.\n")


async def run_hostile(
    exe: str, rounds: int, big_bytes: int, burst: int, after: float, timeout: float
) -> None:
    print(f"machine: {os.cpu_count()} cores; {load()}")
    found_s: list[float | None] = []
    async with serving(exe) as (client, notes, db):
        for r in range(rounds):
            await anyio.sleep(1.0)
            before = load()
            drop_hostile_set(notes, r, big_bytes, burst)
            await anyio.sleep(after)
            (notes / f"small-{r}.md").write_text(f"# After the storm\nCodeword kumquat{r}.\n")

            async def found(r: int = r) -> bool:
                hits = await search(client, f"kumquat{r}")
                return any(f"small-{r}.md" in hit["key"] for hit in hits)

            found_s.append(await wait_for(found, timeout))

            async def settled(r: int = r) -> bool:  # the burst and the big note are in
                if note_count(db, f"%/burst-{r}-%") < burst:
                    return False
                hits = await search(client, f"quetzalcoatl{r}")
                return any(f"big-{r}.md" in hit["key"] for hit in hits)

            settled_s = await wait_for(settled, timeout)
            print(
                f"round {r}: small note found {fmt(found_s[-1], timeout)} after it was "
                f"written ({before} when dropped, {load()} now); burst of {burst:,} and "
                f"big note searchable after {fmt(settled_s, timeout)}",
                flush=True,
            )
    done = [value for value in found_s if value is not None]
    if len(done) < len(found_s):
        print(f"\nsmall note after the hostile drop: {len(found_s) - len(done)} not found")
    else:
        print(
            f"\nsmall note after the hostile drop, write → found: median "
            f"{statistics.median(done):.2f} s, max {max(done):.2f} s ({len(done)} rounds)"
        )


async def run(exe: str, small_notes: int, big_bytes: int, timeout: float) -> None:
    async with serving(exe) as (client, notes, db):
        (notes / "blob.md").write_bytes(os.urandom(200_000))
        big_path = notes / "big.md"
        big_path.write_text(big_note(big_bytes))
        big_written = time.monotonic()
        print(f"wrote blob.md (200,000 random bytes) and big.md ({big_bytes:,} bytes)")

        keyword_s: list[float | None] = []
        meaning_s: list[float | None] = []
        for i in range(small_notes):
            await anyio.sleep(0.5 if i == 0 else 2.0)
            name = f"small-{i}.md"
            fact, question = FACTS[i]
            (notes / name).write_text(f"# Note {i}\n{fact} Codeword kumquat{i}.\n")
            written = time.monotonic()

            async def by_keyword(i: int = i, name: str = name) -> bool:
                return any(name in r["key"] for r in await search(client, f"kumquat{i}"))

            async def by_meaning(name: str = name, question: str = question) -> bool:
                hits = await search(client, question)
                return any(name in r["key"] and r["matched_by"] != "keyword" for r in hits)

            keyword_s.append(await wait_for(by_keyword, timeout))
            found = await wait_for(by_meaning, timeout)
            meaning_s.append(None if found is None else time.monotonic() - written)
            print(
                f"small note {i}: keyword {fmt(keyword_s[-1], timeout)}, "
                f"meaning {fmt(meaning_s[-1], timeout)}",
                flush=True,
            )

        async def big_searchable() -> bool:
            return any("big.md" in r["key"] for r in await search(client, "quetzalcoatl"))

        left_s = max(0.0, timeout - (time.monotonic() - big_written))
        waited = await wait_for(big_searchable, left_s)
        big_keyword = None if waited is None else time.monotonic() - big_written
        big_embedded = None
        chunks = -1
        while time.monotonic() - big_written < timeout:
            left = unembedded(db, str(big_path.resolve()))
            if left == 0:
                big_embedded = time.monotonic() - big_written
                break
            await anyio.sleep(1.0)
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
            (chunks,) = conn.execute(
                "SELECT count(*) FROM memories WHERE file_path = ?", (str(big_path.resolve()),)
            ).fetchone()
            (blob,) = conn.execute(
                "SELECT count(*) FROM memories WHERE file_path = ?",
                (str((notes / "blob.md").resolve()),),
            ).fetchone()

    def summary(values: list[float | None]) -> str:
        done = [v for v in values if v is not None]
        if len(done) < len(values):
            return f"{len(values) - len(done)} of {len(values)} not within {timeout:.0f} s"
        return f"median {statistics.median(done):.2f} s, max {max(done):.2f} s"

    print(f"\nsmall notes, write → keyword:  {summary(keyword_s)}")
    print(f"small notes, write → meaning:  {summary(meaning_s)}")
    print(f"big note ({chunks} chunks), write → keyword-searchable: {fmt(big_keyword, timeout)}")
    print(f"big note, write → fully embedded: {fmt(big_embedded, timeout)}")
    print(f"binary file: {blob} memories")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exe", default=str(Path(sys.executable).with_name("memory-mcp")))
    parser.add_argument("--small-notes", type=int, default=len(FACTS), choices=range(1, 6))
    parser.add_argument("--big-bytes", type=int, default=990_000)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument(
        "--hostile", type=int, default=0, metavar="ROUNDS", help="the hostile-drop scenario"
    )
    parser.add_argument("--burst", type=int, default=1_000, help="small notes per burst")
    parser.add_argument(
        "--after", type=float, default=0.0, help="seconds between the drop and the small note"
    )
    args = parser.parse_args()
    if args.hostile:
        options = (args.hostile, args.big_bytes, args.burst, args.after, args.timeout)
        anyio.run(run_hostile, args.exe, *options)
    else:
        anyio.run(run, args.exe, args.small_notes, args.big_bytes, args.timeout)


if __name__ == "__main__":
    main()
