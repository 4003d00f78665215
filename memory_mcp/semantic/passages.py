"""What a memory's vector is made of.

all-MiniLM-L6-v2 mean-pools one vector per text and reads at most 256 word pieces, so one
vector of a whole memory blurs a multi-sentence memory into its filler ("Hey! Good to see
you!") and never sees the tail of a long one. Instead a memory is cut into short passages
of whole sentences (about `PASSAGE_CHARS` each), every passage keeps the memory's context
label (a leading `Label:` such as a speaker or a topic, or a first-line markdown heading
path such as `# Deploy > ## Staging`), and the memory's one vector is the normalised sum of
the whole text's vector and its passages' vectors. Still one vector per memory: the index
and its scan cost are unchanged. docs/RETRIEVAL.md has the measurements.

Queries are embedded as they are: they are short, and the model was trained on such."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import anyio
import numpy as np

from memory_mcp.semantic.embeddings import Embedder

RECIPE = "passages-v1"
PASSAGE_CHARS = 80
# A very long memory gets longer passages rather than hundreds of them.
MAX_PASSAGES = 32
# A "sentence" longer than this (a log line, minified code) is cut at spaces.
MAX_PIECE_CHARS = 1_000

_LABEL = re.compile(r"^([^\n:]{1,40}):[ \t]+(?=\S)")
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}[ \t][^\n]{0,200}\n")
_BREAK = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def vector_model(model_name: str) -> str:
    """The name vectors are stored under: the model plus this recipe, so a store embedded
    with another recipe is re-embedded by the background worker instead of mixed."""
    return f"{model_name}+{RECIPE}"


def context_label(text: str) -> tuple[str, str]:
    """(label to repeat in every passage, the rest of the text)."""
    heading = _HEADING_LINE.match(text)
    if heading:
        return heading.group(0).strip() + "\n", text[heading.end() :]
    label = _LABEL.match(text)
    if label:
        return label.group(1).strip() + ": ", text[label.end() :]
    return "", text


def _pieces(body: str) -> list[str]:
    pieces: list[str] = []
    for piece in _BREAK.split(body):
        piece = piece.strip()
        while len(piece) > MAX_PIECE_CHARS:
            cut = piece.rfind(" ", 0, MAX_PIECE_CHARS)
            cut = cut if cut > 0 else MAX_PIECE_CHARS
            pieces.append(piece[:cut])
            piece = piece[cut:].strip()
        if piece:
            pieces.append(piece)
    return pieces


def passages(text: str) -> list[str]:
    """The texts whose vectors are summed into the memory's vector; the first is the whole
    text. A memory that makes only one passage is embedded once, as it is."""
    label, body = context_label(text)
    budget = max(PASSAGE_CHARS, len(body) // MAX_PASSAGES + 1)
    groups: list[str] = []
    current = ""
    for piece in _pieces(body):
        if current and len(current) + 1 + len(piece) > budget:
            groups.append(current)
            current = piece
        else:
            current = f"{current} {piece}" if current else piece
    if current:
        groups.append(current)
    if len(groups) <= 1:
        return [text]
    return [text, *(label + group for group in groups)]


async def embed_memories(
    embedder: Embedder, texts: list[str], call_chars: int | None = None
) -> np.ndarray:
    """One unit vector per memory text, from all their passages: in one call to the model,
    or in short calls (see `_short_calls`) so that a query waits for at most one."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    owners: list[int] = []
    flat: list[str] = []
    for owner, text in enumerate(texts):
        parts = passages(text)
        flat.extend(parts)
        owners.extend([owner] * len(parts))
    if call_chars is None:
        vectors = np.asarray(await embedder.embed(flat), dtype=np.float32)
    else:
        calls = _short_calls(flat, call_chars)
        outs = [np.asarray(await embedder.embed([flat[i] for i in c])) for c in calls]
        vectors = np.empty((len(flat), outs[0].shape[1]), dtype=np.float32)
        for call, out in zip(calls, outs, strict=True):
            vectors[call] = out
    summed = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
    np.add.at(summed, np.asarray(owners), vectors)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    return summed / np.where(norms > 0, norms, 1.0)


async def embed_memory(
    embedder: Embedder, text: str, needed: Callable[[], Awaitable[bool]] | None = None
) -> np.ndarray | None:
    """One memory's unit vector (what `embed_memories` gives it), in two calls: the whole
    text (`embed_whole`), then its passages together (`add_passages`). In one call the
    passages are padded to the whole text's length: on LoCoMo's chat turns (2.9 texts
    each) that cost ~40% more model CPU than the two calls (measured by `bench store`).
    `needed`: see embed_whole; None when it says no."""
    whole = await embed_whole(embedder, text, needed)
    return None if whole is None else await add_passages(embedder, whole, passages(text))


async def embed_whole(
    embedder: Embedder, text: str, needed: Callable[[], Awaitable[bool]] | None = None
) -> np.ndarray | None:
    """The whole text's vector as the model gives it (not normalised): a memory's vector
    starts from it, and a store answers with it (semantic/vectors.py). `needed` (whether
    the text still lacks a vector: a store read) is asked beside the model's call rather
    than before it, so a store does not wait for the read before the model starts; when
    it says no, None is returned."""
    wanted = True

    async def ask(needed: Callable[[], Awaitable[bool]]) -> None:
        nonlocal wanted
        wanted = await needed()

    async with anyio.create_task_group() as group:
        if needed is not None:
            group.start_soon(ask, needed)
        whole = np.asarray(await embedder.embed([text]), dtype=np.float32)[0]
    return whole if wanted else None


async def add_passages(embedder: Embedder, whole: np.ndarray, parts: list[str]) -> np.ndarray:
    """The memory's unit vector from its whole text's (`embed_whole`) and its passages
    (`passages(text)`, whose first is the whole text): the passages in one call."""
    summed = whole
    if len(parts) > 1:
        for passage in np.asarray(await embedder.embed(parts[1:]), dtype=np.float32):
            summed = summed + passage  # in embed_memories' order: the same float32 sums
    return unit(summed)


async def add_passages_of(
    embedder: Embedder, items: list[tuple[np.ndarray, list[str]]], call_chars: int
) -> list[np.ndarray]:
    """`add_passages` for several memories at once (whole vector, passages): their
    passages in as few calls as `_short_calls` makes of them (passages are short and alike,
    so few), which costs less than a call per memory."""
    flat = [part for _, parts in items for part in parts[1:]]
    embedded = np.zeros((len(flat), items[0][0].shape[0]), dtype=np.float32)
    for call in _short_calls(flat, call_chars) if flat else []:
        embedded[call] = np.asarray(await embedder.embed([flat[i] for i in call]))
    vectors, start = [], 0
    for whole, parts in items:
        summed = whole
        for passage in embedded[start : start + len(parts) - 1]:
            summed = summed + passage
        start += len(parts) - 1
        vectors.append(unit(summed))
    return vectors


def unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    normalised: np.ndarray = vector / (norm if norm > 0 else 1.0)
    return normalised


def _short_calls(texts: list[str], call_chars: int) -> list[list[int]]:
    """Indexes of `texts` in calls, longest first, each call at most `call_chars` once every
    text is padded to its longest (the model pads a call that way): a memory's whole text
    goes alone and its short passages together. With the whole text and its passages in
    one call, the passages were padded to 256 word pieces and the call took ~6x longer."""
    calls: list[list[int]] = []
    for index in sorted(range(len(texts)), key=lambda i: -len(texts[i])):
        if calls and (len(calls[-1]) + 1) * len(texts[calls[-1][0]]) <= call_chars:
            calls[-1].append(index)
        else:
            calls.append([index])
    return calls
