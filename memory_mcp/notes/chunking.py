"""Cut a note into chunks: first on markdown headings (each chunk keeps its heading path,
e.g. `# Deploy > ## Staging`), then on blank lines, each bounded in size with a little
overlap so a sentence cut at a boundary can still be found from either side.

Line numbers are 1-based and inclusive, as an editor shows them."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_CHUNK_CHARS = 2_000
OVERLAP_CHARS = 100
# A heading path longer than this is shortened in the chunk text (it stays whole in metadata).
MAX_PREFIX_CHARS = 300

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    heading_path: str  # "" before the first heading and in plain text
    body: str
    start_line: int
    end_line: int
    part: int  # 1, 2, ... when one section is longer than a chunk
    overlap: str = ""  # the end of the previous part, repeated for context

    @property
    def text(self) -> str:
        """What is stored and searched: heading path, overlap, body."""
        prefix = _shorten(self.heading_path, MAX_PREFIX_CHARS)
        pieces = [p for p in (prefix, self.overlap, self.body) if p]
        return "\n\n".join(pieces)


@dataclass
class _Section:
    heading_path: str
    heading_line: int | None
    lines: list[tuple[int, str]]


def split_lines(text: str) -> list[str]:
    """Lines as editors number them (\\r\\n, \\r and \\n only; not str.splitlines' extras)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def chunk_note(
    text: str,
    markdown: bool = True,
    max_chars: int = MAX_CHUNK_CHARS,
    overlap: int = OVERLAP_CHARS,
) -> list[Chunk]:
    lines = split_lines(text)
    sections = _sections(lines) if markdown else [_Section("", None, list(enumerate(lines, 1)))]
    chunks: list[Chunk] = []
    for section in sections:
        chunks.extend(_chunk_section(section, max_chars, overlap))
    if not chunks and text.strip():
        # Only headings, no body: the headings themselves are the note.
        body = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        chunks = _chunk_section(_Section("", None, body), max_chars, overlap)
    return chunks


def _sections(lines: list[str]) -> list[_Section]:
    sections = [_Section("", None, [])]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(lines, 1):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        heading = None if fence is not None or fence_match else _HEADING.match(line)
        if heading is None:
            sections[-1].lines.append((number, line))
            continue
        level = len(heading.group(1))
        title = " ".join((heading.group(2) or "").split())
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, f"{'#' * level} {title}".rstrip()))
        sections.append(_Section(" > ".join(h for _, h in stack), number, []))
    return sections


def _chunk_section(section: _Section, max_chars: int, overlap: int) -> list[Chunk]:
    lines = section.lines
    while lines and not lines[0][1].strip():
        lines = lines[1:]
    while lines and not lines[-1][1].strip():
        lines = lines[:-1]
    if not lines:
        return []
    prefix = _shorten(section.heading_path, MAX_PREFIX_CHARS)
    budget = max(max_chars - len(prefix) - overlap - 4, 200)
    parts = _pack(_pieces(lines, budget), budget)
    chunks: list[Chunk] = []
    for index, (body, start, end) in enumerate(parts):
        if index == 0 and section.heading_line is not None:
            start = section.heading_line
        tail = _tail(parts[index - 1][0], overlap) if index else ""
        chunks.append(Chunk(section.heading_path, body, start, end, index + 1, tail))
    return chunks


Piece = tuple[str, int, int]


def _pieces(lines: list[tuple[int, str]], budget: int) -> list[Piece]:
    """Paragraphs (blank-line separated); a paragraph over budget becomes lines, and a line
    over budget is cut at whitespace."""
    paragraphs: list[list[tuple[int, str]]] = [[]]
    for number, line in lines:
        if line.strip():
            paragraphs[-1].append((number, line))
        elif paragraphs[-1]:
            paragraphs.append([])
    pieces: list[Piece] = []
    for paragraph in filter(None, paragraphs):
        text = "\n".join(line for _, line in paragraph)
        if len(text) <= budget:
            pieces.append((text, paragraph[0][0], paragraph[-1][0]))
            continue
        for number, line in paragraph:
            for cut in _hard_split(line, budget):
                pieces.append((cut, number, number))
    return pieces


def _pack(pieces: list[Piece], budget: int) -> list[Piece]:
    """Greedily join consecutive pieces while they fit; paragraphs joined by a blank line."""
    packed: list[Piece] = []
    for text, start, end in pieces:
        if packed:
            last_text, last_start, last_end = packed[-1]
            if start == last_end:  # cuts of one long line: rejoin as they were
                sep = ""
            elif start == last_end + 1:  # lines of one long paragraph
                sep = "\n"
            else:
                sep = "\n\n"
            if len(last_text) + len(sep) + len(text) <= budget:
                packed[-1] = (last_text + sep + text, last_start, end)
                continue
        packed.append((text, start, end))
    return packed


def _hard_split(line: str, budget: int) -> list[str]:
    cuts: list[str] = []
    while len(line) > budget:
        at = line.rfind(" ", budget // 2, budget)
        at = at if at > 0 else budget
        cuts.append(line[:at])
        line = line[at:]
    if line:
        cuts.append(line)
    return cuts


def _tail(text: str, size: int) -> str:
    """About the last `size` characters, starting at a word boundary."""
    if size <= 0 or len(text) <= size:
        return text if size > 0 else ""
    tail = text[-size:]
    space = tail.find(" ")
    if 0 <= space < size // 2:
        tail = tail[space + 1 :]
    return "…" + tail.strip()


def _shorten(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"
