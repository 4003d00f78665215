"""`bench scale-data` (bench/scale_data.py) end to end on tiny sources in the four formats it
reads, with the real model: the folder `bench scale` reads (its own `load_data`), and the
recipe's promises (docs/VECTOR_INDEX.md, "How the data is made")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import anyio
import numpy as np
import pytest

from bench.command import main as bench_main
from bench.scale import load_data
from bench.scale_data import make_scale_data
from bench.scale_sources import Sources
from memory_mcp.semantic.embeddings import Embedder
from memory_mcp.semantic.passages import embed_memories

ROWS = 120
CHUNK = 4  # 13 texts: four parts, the last one short
QUESTIONS = [
    "What is the name of Ana's cat?",
    "Where did Ben run?",
    "Ana: How long did the training take you?",  # a turn too: a search, never stored
]

CONVERSATION = {
    "speaker_a": "Ana",
    "speaker_b": "Ben",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat called Miso last week."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Does Miso like the new flat?"},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "She sleeps on the printer all afternoon."},
    ],
    "session_2": [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "I ran my first half marathon in Lisbon."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "How long did the training take you?"},
    ],
    "qa": [{"question": q, "evidence": [], "category": 5} for q in QUESTIONS],
}
PACKAGES = """Package: ripgrep
Version: 13.0.0-4
Description: Recursively searches directories for a regex pattern
Section: utils

Package: sqlite3
Version: 3.40.1-2
Description: Command line interface for SQLite 3
Section: database

Package: sqlite3
Version: 3.40.1-2+deb12u1
Description: Command line interface for SQLite 3

Package: curl
Description: command line tool for transferring data with URL syntax

Package: tmux
Description: terminal multiplexer
"""
WORDNET_NOUN = """  1 This software and database is being provided to you, the LICENSEE, by
  2 Princeton University under the following license.
00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 | that which is perceived or known or inferred to have its own distinct existence  
02121620 05 n 02 cat 0 true_cat 0 002 @ 02120997 n 0000 | feline mammal usually having thick soft fur and no ability to roar: "domestic cats"; "wildcats"  
07800091 13 n 01 bread 0 001 @ 07566340 n 0000 | food made from dough of flour or meal and usually raised with yeast  
"""  # noqa: E501
WORDNET_ADJ = """00001740 00 a 01 able(a) 0 005 = 05207437 n 0000 | (usually followed by `to') having the necessary means or skill to do something  
"""  # noqa: E501
MAN_PAGE = r""".\" a comment
.TH FROB 1 "2026" "frob 1.0" "User Commands"
.SH NAME
frob \- rearrange the \fBwidgets\fR of a file
.SH SYNOPSIS
.B frob
[\fIOPTION\fR]... \fIFILE\fR
.SH DESCRIPTION
.B frob
reads each \fIFILE\fR and writes its widgets back in the order of their weight,
heaviest first, keeping the file's own line endings.
.PP
When no file is given, or when \fIFILE\fR is \-, frob reads the standard input and
writes the standard output\(emuseful in a pipeline.
.TP
\fB\-r\fR, \fB\-\-reverse\fR
put the lightest widgets first instead of the heaviest ones in every file
.SH "SEE ALSO"
.BR sort (1)
"""


@pytest.fixture
def sources(tmp_path: Path) -> Sources:
    locomo = tmp_path / "locomo"
    locomo.mkdir()
    (locomo / "1.json").write_text(json.dumps(CONVERSATION))
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "deb.example.org_dists_main_binary-amd64_Packages").write_text(PACKAGES)
    wordnet = tmp_path / "wordnet"
    wordnet.mkdir()
    for part, text in (("noun", WORDNET_NOUN), ("verb", ""), ("adj", WORDNET_ADJ), ("adv", "")):
        (wordnet / f"data.{part}").write_text(text)
    man1 = tmp_path / "man" / "man1"
    man1.mkdir(parents=True)
    (man1 / "frob.1.gz").write_bytes(gzip.compress(MAN_PAGE.encode()))
    (man1 / "unfrob.1.gz").write_bytes(gzip.compress(b".so man1/frob.1\n"))
    (man1 / "frobnicate.1.gz").symlink_to("frob.1.gz")
    return Sources(locomo, lists, wordnet, tmp_path / "man")


def _quiet(line: str) -> None:
    pass


def _lines(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_scale_data_makes_what_bench_scale_reads(
    sources: Sources, tmp_path: Path, real_embedder: Embedder, anyio_backend: str
) -> None:
    out = tmp_path / "data"
    said: list[str] = []
    made = anyio.run(
        lambda: make_scale_data(out, sources, real_embedder, said.append, 100, ROWS, 2, CHUNK)
    )
    assert any("texts/s" in line for line in said)
    corpus = _lines(out / "corpus.jsonl")
    searches = _lines(out / "bench_queries.jsonl")
    texts = [row["text"] for row in corpus]
    # Every source read, each text once, written as a memory would hold it.
    assert made["corpus"]["read"] == {"locomo": 5, "debian": 5, "wordnet": 4, "man": 3}
    pool = texts + [row["text"] for row in searches if row["source"] != "locomo-question"]
    assert "sqlite3: Command line interface for SQLite 3" in pool
    assert "cat, true cat: feline mammal usually having thick soft fur" in " ".join(pool)
    assert "able: (usually followed by `to') having" in " ".join(pool)
    assert "Ana: I adopted a grey cat called Miso last week." in pool
    assert "frob - rearrange the widgets of a file" in pool
    assert (
        "frob(1): When no file is given, or when FILE is -, frob reads the standard input "
        "and writes the standard output-useful in a pipeline." in pool
    )
    assert not any("lightest" in t or "SEE ALSO" in t for t in pool)  # options, other sections
    assert len(pool) == len({t.casefold() for t in pool}) == 5 + 4 + 4 + 3 - 1  # minus a question
    assert len(corpus) == len(pool) - 2  # two held out
    # The searches: the held-out texts and every LoCoMo question, none of them stored.
    questions = {r["text"] for r in searches if r["source"] == "locomo-question"}
    assert questions == set(QUESTIONS)
    assert len(searches) == 2 + 3
    assert not {r["text"] for r in searches} & set(texts)

    data = load_data(out, ROWS)  # bench scale's own reader
    assert data.vectors.shape == (ROWS, 384) and data.vectors.dtype == np.float32
    assert data.texts == texts and data.query_texts == [r["text"] for r in searches]
    assert np.allclose(np.linalg.norm(data.vectors, axis=1), 1.0, atol=1e-5)
    assert ((data.parents >= 0) & (data.parents < len(texts))).all()
    # Each text's own vector (as the product embeds a memory) once, among shuffled rows.
    real = anyio.run(embed_memories, real_embedder, texts)
    assert data.is_real.sum() == len(texts)
    assert sorted(data.parents[data.is_real].tolist()) == list(range(len(texts)))
    assert np.allclose(data.vectors[data.is_real], real[data.parents[data.is_real]], atol=1e-6)
    assert not data.is_real[: len(texts)].all()
    # A new point is near its parent, never on it.
    cosines = (data.vectors * real[data.parents]).sum(axis=1)[~data.is_real]
    assert cosines.max() < 0.9999 and cosines.mean() > 0.5
    # The searches embedded as a search embeds them: the text alone.
    queries = anyio.run(real_embedder.embed, data.query_texts)
    assert np.allclose(data.query_vectors, queries, atol=1e-6)


class Stopped(Exception):
    pass


class StopsAfter:
    """The real embedder, made to fail after `calls` calls: a run stopped mid-way."""

    def __init__(self, embedder: Embedder, calls: int) -> None:
        self.embedder, self.calls, self.model_name = embedder, calls, embedder.model_name
        self.made = 0

    def is_ready(self) -> bool:
        return self.embedder.is_ready()

    async def wait_ready(self) -> None:
        await self.embedder.wait_ready()

    async def embed(self, texts: list[str]) -> np.ndarray:
        if self.made == self.calls:
            raise Stopped
        self.made += 1
        return await self.embedder.embed(texts)


def test_scale_data_continues_a_stopped_run(
    sources: Sources, tmp_path: Path, real_embedder: Embedder, anyio_backend: str
) -> None:
    out = tmp_path / "data"
    stopping = StopsAfter(real_embedder, 3)  # the searches, then two parts
    with pytest.raises(Stopped):
        anyio.run(lambda: make_scale_data(out, sources, stopping, _quiet, 100, ROWS, 2, CHUNK))
    assert len(list((out / "vectors.parts").glob("*.npy"))) == 2
    rest = StopsAfter(real_embedder, 100)
    anyio.run(lambda: make_scale_data(out, sources, rest, _quiet, 100, ROWS, 2, CHUNK))
    assert rest.made == 2  # the searches and the first two parts were kept...
    texts = [row["text"] for row in _lines(out / "corpus.jsonl")]
    whole = np.load(out / "vectors.npy")
    expected = anyio.run(embed_memories, real_embedder, texts)
    assert np.allclose(whole, expected, atol=1e-6)  # ...and the whole is what one run makes
    first = np.load(out / "million.npy")
    anyio.run(lambda: make_scale_data(out, sources, rest, _quiet, 100, ROWS, 2, CHUNK))
    assert np.array_equal(np.load(out / "million.npy"), first)  # kept, not made again


def test_scale_data_says_which_source_is_missing(sources: Sources, tmp_path: Path) -> None:
    args = ["scale-data", "--out", str(tmp_path / "out"), "--locomo", str(sources.locomo)]
    args += ["--apt-lists", str(sources.apt_lists), "--man", str(sources.man)]
    with pytest.raises(SystemExit, match="wordnet-base"):
        bench_main([*args, "--wordnet", str(tmp_path / "nowhere")])
