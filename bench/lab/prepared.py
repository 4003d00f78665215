"""One conversation made ready for the experiments: its memories' vectors as the product
makes them (whole text + passages, passages.py), the queries' vectors, the keyword arm's
hits, and which rows are each question's evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.lab.data import LabConversation
from bench.lab.encoders import CachedEncoder
from bench.lab.replica import KeywordIndex
from memory_mcp.semantic.passages import passages


def unit(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


@dataclass
class Prepared:
    conv: LabConversation
    values: list[str]
    session: np.ndarray
    position: np.ndarray
    questions: list[str]
    categories: np.ndarray
    evidence: list[list[int]]  # rows; -1 for an evidence id that is no turn (always missed)
    whole: np.ndarray  # one vector of the whole value
    base: np.ndarray  # the product's memory vector
    passage_rows: list[np.ndarray]  # per memory, its passages' vectors (whole text first)
    queries: np.ndarray
    keyword: KeywordIndex
    kw_hits: list[list[tuple[int, float]]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.values)

    def same_session_before(self, k: int) -> list[list[int]]:
        """Per memory, the rows of at most `k` memories written just before it in its
        session (what the store holds when it is written)."""
        out: list[list[int]] = []
        for i in range(self.n):
            rows = [j for j in range(max(0, i - k), i) if self.session[j] == self.session[i]]
            out.append(rows)
        return out

    def same_session_after(self, k: int) -> list[list[int]]:
        out: list[list[int]] = []
        for i in range(self.n):
            rows = [
                j
                for j in range(i + 1, min(self.n, i + 1 + k))
                if self.session[j] == self.session[i]
            ]
            out.append(rows)
        return out


def prepare(conv: LabConversation, encoder: CachedEncoder) -> Prepared:
    values = [t.value for t in conv.turns]
    parts = [passages(v) for v in values]
    flat = [p for ps in parts for p in ps]
    vectors = encoder.vectors(flat)
    passage_rows: list[np.ndarray] = []
    start = 0
    for ps in parts:
        passage_rows.append(vectors[start : start + len(ps)])
        start += len(ps)
    whole = np.stack([rows[0] for rows in passage_rows])
    base = unit(np.stack([rows.sum(axis=0) for rows in passage_rows]))
    index_of = {t.key: i for i, t in enumerate(conv.turns)}
    questions = [q.text for q in conv.questions]
    prepared = Prepared(
        conv=conv,
        values=values,
        session=np.array([t.session for t in conv.turns]),
        position=np.array([t.position for t in conv.turns]),
        questions=questions,
        categories=np.array([q.category for q in conv.questions]),
        evidence=[[index_of.get(e, -1) for e in dict.fromkeys(q.evidence)] for q in conv.questions],
        whole=whole,
        base=base,
        passage_rows=passage_rows,
        queries=encoder.vectors(questions),
        keyword=KeywordIndex([t.key for t in conv.turns], values),
    )
    prepared.kw_hits = [prepared.keyword.hits(q) for q in questions]
    return prepared
