"""The real texts of the scale corpus (bench/scale_data.py), read from this machine.

Four kinds, so the 1M store is not one genre: LoCoMo chat turns (what an agent stores),
Debian package descriptions (short, technical), WordNet glosses (short, general English)
and man page prose (longer, technical). Each reader gives its texts in its own order with
whitespace collapsed; deduplication, order and the cut are the corpus step's.

Texts are written as a memory would hold them: a LoCoMo turn as `bench locomo` stores it
("Speaker: text"), a package as "name: description", a synset as "lemma, lemma: gloss",
a man page's NAME line as it reads ("ls - list directory contents") and its DESCRIPTION
paragraphs under the page's name ("ls(1): List information about ...")."""

from __future__ import annotations

import gzip
import json
import lzma
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.locomo import load_conversations
from bench.man_prose import sections

# Man pages: the first paragraphs of DESCRIPTION (the overview; the rest of a long page
# is reference), prose only: enough words to be a sentence, short enough to be a memory.
MAN_PARAGRAPHS_PER_PAGE = 3
MAN_MIN_WORDS = 8
MAN_MAX_CHARS = 1_000
WORDNET_PARTS = ("noun", "verb", "adj", "adv")


@dataclass(frozen=True)
class Sources:
    locomo: Path  # a folder of LoCoMo conversation files (*.json)
    apt_lists: Path  # apt's lists: *_Packages, plain or .lz4 / .gz / .xz
    wordnet: Path  # WordNet's database: data.noun, data.verb, data.adj, data.adv
    man: Path  # a man page tree: man1/ ... man8/


def _clean(text: str) -> str:
    return " ".join(text.split())


def read_all(sources: Sources) -> dict[str, list[str]]:
    """Each source's texts, by its name."""
    return {
        "locomo": locomo_turns(sources.locomo),
        "debian": debian_descriptions(sources.apt_lists),
        "wordnet": wordnet_glosses(sources.wordnet),
        "man": man_prose(sources.man),
    }


def locomo_turns(folder: Path) -> list[str]:
    try:
        conversations = load_conversations(folder)
    except (OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"memory-mcp: cannot read LoCoMo data in {folder}: {exc}") from exc
    return [_clean(turn.value) for c in conversations for turn in c.turns]


def locomo_questions(folder: Path) -> list[str]:
    """Every question of every conversation (all categories): searches never stored."""
    questions: list[str] = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        questions.extend(_clean(str(qa["question"])) for qa in data.get("qa", []))
    return [q for q in dict.fromkeys(questions) if q]


def _packages_files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.glob("*_Packages*") if p.name.endswith(("Packages", ".lz4", ".gz", ".xz"))
    )


def _decompressed(path: Path) -> bytes:
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes())
    if path.suffix == ".xz":
        return lzma.decompress(path.read_bytes())
    if path.suffix == ".lz4":  # no lz4 module in the standard library: Debian's tool
        try:
            return subprocess.run(["lz4", "-dc", str(path)], capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise SystemExit(f"memory-mcp: cannot decompress {path} with lz4: {exc}") from exc
    return path.read_bytes()


def debian_descriptions(folder: Path) -> list[str]:
    """ "package: short description" for every package of apt's lists."""
    files = _packages_files(folder)
    if not files:
        raise SystemExit(
            f"memory-mcp: no Packages lists in {folder} (run `apt-get update`, or give --apt-lists)"
        )
    texts: list[str] = []
    for path in files:
        for record in _decompressed(path).decode("utf-8", "replace").split("\n\n"):
            fields = dict(line.split(": ", 1) for line in record.splitlines() if ": " in line[:80])
            if "Package" in fields and "Description" in fields:
                texts.append(_clean(f"{fields['Package']}: {fields['Description']}"))
    return texts


def wordnet_glosses(folder: Path) -> list[str]:
    """ "lemma, lemma: gloss" for every synset of WordNet's data files."""
    paths = [folder / f"data.{part}" for part in WORDNET_PARTS]
    if not all(p.is_file() for p in paths):
        raise SystemExit(
            f"memory-mcp: no WordNet database in {folder} (install Debian's wordnet-base: "
            "apt-get install --no-install-recommends wordnet-base, or give --wordnet)"
        )
    texts: list[str] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(" ") or " | " not in line:  # the licence at the top
                continue
            fields, gloss = line.split(" | ", 1)
            words = fields.split()
            count = int(words[3], 16)
            lemmas = [
                re.sub(r"\(\w+\)$", "", w).replace("_", " ") for w in words[4 : 4 + 2 * count : 2]
            ]
            texts.append(_clean(f"{', '.join(dict.fromkeys(lemmas))}: {gloss}"))
    return texts


def man_prose(tree: Path) -> list[str]:
    """The NAME line and the first DESCRIPTION paragraphs of every page of the tree's
    man1/ ... man9/ (not its translations); links and `.so` aliases are left out."""
    pages = sorted(p for p in tree.glob("man[1-9]*/*") if p.is_file() and not p.is_symlink())
    if not pages:
        raise SystemExit(f"memory-mcp: no man pages in {tree} (give --man)")
    texts: list[str] = []
    for page in pages:
        raw = gzip.decompress(page.read_bytes()) if page.suffix == ".gz" else page.read_bytes()
        source = raw.decode("utf-8", "replace")
        if source.lstrip().startswith(".so "):
            continue
        found = sections(source, ("NAME", "DESCRIPTION"))
        name = page.name.removesuffix(".gz")
        stem, _, section = name.rpartition(".")
        texts.extend(t for t in found.get("NAME", [])[:1] if " - " in t)
        prose = [
            p
            for p in found.get("DESCRIPTION", [])
            if len(p.split()) >= MAN_MIN_WORDS and len(p) <= MAN_MAX_CHARS
        ]
        texts.extend(f"{stem}({section}): {p}" for p in prose[:MAN_PARAGRAPHS_PER_PAGE])
    return [t for t in texts if "\ufffd" not in t]
