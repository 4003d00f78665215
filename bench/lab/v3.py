"""Issue 37's experiments: the three development sets together (LoCoMo, REALTALK, BEAM),
leave one conversation out over all twenty, every set reported apart.

`python -m bench.lab.v3 [GROUP ...]` (or `python -m bench retrieval-loo`): a replica of
the product's search path on cached vectors (bench/lab/replica.py: FTS5 BM25 with the
product's terms and column weights, the vector arm, ranking.fuse; plus here the write-time
context as store/write_context.py builds it, exact matches first as search/exact_match.py
orders them, and the turns the product refuses left out), so that a grid of settings runs
in seconds once the model has embedded each text once. Its rows are within 0.006 of
`python -m bench retrieval` on the same data (it ranks with FTS5's bm25(), the product
with its own BM25 in store/sqlite/fts5.py: docs/lab/retrieval-v3.md).

Leave one out: a variant's parameters are chosen on nineteen conversations and measured on
the twentieth. The choice maximises the mean over the three sets of each set's mean of
R@5 and R@10 over its training questions, so LoCoMo's 760 questions do not outvote
REALTALK's 344 and BEAM's 179. The held-out measurements are pooled per set."""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache, partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from bench.lab.data import CATEGORY_NAMES, LabConversation, load_all
from bench.lab.encoders import CachedEncoder, Encode, minilm_onnx
from bench.lab.loo import Scores, pooled
from bench.lab.prepared import Prepared, prepare, unit
from bench.lab.replica import KeywordIndex, fuse, recall
from memory_mcp.checks.safety import redact_field
from memory_mcp.search.exact_match import IDENTIFIER_MAX_MATCHES, _verbatim, identifier_tokens
from memory_mcp.settings import Settings
from memory_mcp.store.sqlite.match import phrase
from memory_mcp.store.write_context import MAX_CONTEXT_CHARS

DATA = Path("../shared/bench-data")
SETS = ("locomo-dev", "realtalk-dev", "beam-dev")
FOLDERS = tuple(DATA / name for name in SETS)
CACHE = Path("bench/results/lab")
MAX_VALUE_CHARS = Settings.model_fields["max_value_chars"].default
SHIPPED_WEIGHT = 0.7  # search/pipeline.KEYWORD_COLUMN_WEIGHTS' context weight


# -- what a memory's keyword document holds beside its own words -------------------------


@dataclass(frozen=True)
class Context:
    """The context column of the keyword index. Today: the previous 4 of the session at
    weight 0.7, cut to its last 2,000 characters."""

    before: int = 4  # issue 23's choice
    after: int = 0
    weight: float = SHIPPED_WEIGHT
    topic: float | None = None  # stop at the first neighbour pair whose cosine is below
    topic_mode: str = "chain"  # chain: neighbour to neighbour; self: each to the memory
    date: bool = False  # the session's / message's date as words
    run: bool = False  # the same speaker's other messages of its run (both directions)
    max_chars: int = MAX_CONTEXT_CHARS
    per_memory: int | None = None  # each lender's first this many characters only
    borrow_below: int | None = None  # only memories shorter than this borrow a context
    before_below: int | None = None  # only memories shorter than this borrow previous ones
    distinct: bool = False  # each word of the context once (fewer index places to read)


NO_CONTEXT = Context(before=0, weight=0.0)
TODAY = Context()


def date_words(date: str) -> str:
    """A turn's date as words a question may use: "8 May 2023 Monday"."""
    when = _parse_date(date)
    return "" if when is None else f"{when.day} {when:%B} {when.year} {when:%A}"


def _parse_date(text: str) -> datetime | None:
    text = text.strip()
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%d", "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


# -- one conversation -----------------------------------------------------------------------


@dataclass
class Conv:
    """One conversation made ready: the product's vectors (Prepared) and what the
    replica needs beyond them."""

    p: Prepared
    dataset: str
    speakers: list[str]
    dates: list[str]
    exact_candidates: list[list[int]] = field(default_factory=list)  # per question
    exact_rows: list[set[int]] = field(default_factory=list)  # level 1 per question

    @property
    def name(self) -> str:
        return self.p.conv.name


def stored(conv: LabConversation) -> LabConversation:
    """The turns as the product stores them: a value over max_value_chars is refused (one
    BEAM message of 348k characters; its evidence counts as missed), secrets in a value
    are redacted (checks/safety.py)."""
    turns = []
    for t in conv.turns:
        if len(t.value) > MAX_VALUE_CHARS or not t.value.strip():
            continue
        value, _ = redact_field(t.value, "value")
        prefix = f"{t.speaker}: "
        text = value[len(prefix) :] if value.startswith(prefix) else t.text
        turns.append(replace(t, text=text))
    return replace(conv, turns=tuple(turns))


def make_conv(conv: LabConversation, encoder: CachedEncoder) -> Conv:
    conv = stored(conv)
    c = Conv(
        prepare(conv, encoder),
        conv.dataset,
        [t.speaker for t in conv.turns],
        [t.date for t in conv.turns],
    )
    _exact(c)
    return c


def _exact(c: Conv) -> None:
    """Per question, search/exact_match.py's candidates (holders of a rare identifier of
    the query, as FTS5 phrases in a memory's own words) and its level-1 rows (holding one
    verbatim)."""
    db = c.p.keyword.db
    for question in c.p.questions:
        candidates: dict[int, None] = {}
        rare: list[str] = []
        for identifier in identifier_tokens(question):
            rows = [
                int(r)
                for (r,) in db.execute(
                    "SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?",
                    (f"{{key value tags}} : {phrase(identifier)}", IDENTIFIER_MAX_MATCHES + 1),
                )
            ]
            if len(rows) <= IDENTIFIER_MAX_MATCHES:
                rare.append(identifier)
                candidates.update(dict.fromkeys(rows))
        level = {
            r
            for r in candidates
            for ident in rare
            if _verbatim(ident).search(c.p.values[r])
            or _verbatim(ident).search(c.p.conv.turns[r].key)
        }
        c.exact_candidates.append(list(candidates))
        c.exact_rows.append(level)


def neighbours_before(c: Conv, i: int, ctx: Context) -> list[int]:
    p = c.p
    rows: list[int] = []
    j = i - 1
    while j >= 0 and len(rows) < ctx.before and p.session[j] == p.session[i]:
        if ctx.topic is not None:
            other = p.base[j + 1] if ctx.topic_mode == "chain" else p.base[i]
            if float(p.base[j] @ other) < ctx.topic:
                break
        rows.append(j)
        j -= 1
    return rows[::-1]


def neighbours_after(c: Conv, i: int, ctx: Context) -> list[int]:
    p = c.p
    rows: list[int] = []
    j = i + 1
    while j < p.n and len(rows) < ctx.after and p.session[j] == p.session[i]:
        if ctx.topic is not None:
            other = p.base[j - 1] if ctx.topic_mode == "chain" else p.base[i]
            if float(p.base[j] @ other) < ctx.topic:
                break
        rows.append(j)
        j += 1
    return rows


def run_of(c: Conv, i: int) -> list[int]:
    """The other messages of i's run: the same speaker, consecutive, in one session."""
    p = c.p
    rows = []
    j = i - 1
    while j >= 0 and p.session[j] == p.session[i] and c.speakers[j] == c.speakers[i]:
        rows.append(j)
        j -= 1
    rows.reverse()
    j = i + 1
    while j < p.n and p.session[j] == p.session[i] and c.speakers[j] == c.speakers[i]:
        rows.append(j)
        j += 1
    return rows


def context_docs(c: Conv, ctx: Context) -> list[str]:
    p = c.p
    out = []
    values = p.values if ctx.per_memory is None else [v[: ctx.per_memory] for v in p.values]
    for i in range(p.n):
        if ctx.borrow_below is not None and len(p.values[i]) >= ctx.borrow_below:
            out.append("")
            continue
        lenders = neighbours_before(c, i, ctx)
        if ctx.before_below is not None and len(p.values[i]) >= ctx.before_below:
            lenders = []
        before = "\n".join(values[j] for j in lenders)
        if len(before) > ctx.max_chars:
            before = before[-ctx.max_chars :]
        parts = [before] if before else []
        if ctx.after:
            after = "\n".join(values[j] for j in neighbours_after(c, i, ctx))
            parts.append(after[: ctx.max_chars])
        if ctx.run:
            mates = [j for j in run_of(c, i) if j not in neighbours_before(c, i, ctx)]
            parts.append("\n".join(values[j] for j in mates)[: ctx.max_chars])
        if ctx.date:
            parts.append(date_words(c.dates[i]))
        text = "\n".join(x for x in parts if x)
        if ctx.distinct:
            text = " ".join(dict.fromkeys(re.findall(r"\w+", text.lower())))
        out.append(text)
    return out


# -- the lab --------------------------------------------------------------------------------

Ranker = Callable[[Conv, int], np.ndarray]  # (conversation, question) -> rows, best first
P = TypeVar("P", bound=Hashable)


def _lazy_minilm() -> Encode:
    model: list[Encode] = []

    def encode(texts: list[str]) -> np.ndarray:
        if not model:
            model.append(minilm_onnx())
        return model[0](texts)

    return encode


class Lab:
    def __init__(self, folders: Sequence[Path] = FOLDERS, cache_dir: Path = CACHE):
        self.encoder = CachedEncoder("minilm", _lazy_minilm(), cache_dir)
        self.convs: dict[str, Conv] = {}
        for folder in folders:
            for conv in load_all(folder):
                print(f"preparing {folder.name}/{conv.name}", file=sys.stderr)
                self.convs[conv.name] = make_conv(conv, self.encoder)
        self.sets = list(dict.fromkeys(c.dataset for c in self.convs.values()))
        self._mixed: dict[tuple[str, int, float], np.ndarray] = {}

    @cache  # noqa: B019 - one Lab per process
    def hits(self, name: str, ctx: Context) -> list[list[tuple[int, float]]]:
        c = self.convs[name]
        if ctx.weight == 0.0:
            keyword = c.p.keyword
        else:
            keyword = KeywordIndex(
                [t.key for t in c.p.conv.turns], c.p.values, context_docs(c, ctx)
            )
        return [keyword.hits(q, ctx.weight, split=True) for q in c.p.questions]

    def mixed(self, c: Conv, texts: list[str | None], weight: float) -> np.ndarray:
        key = (c.name, id(texts), weight)
        if key not in self._mixed:
            self._mixed[key] = mixed_vectors(self, c, texts, weight)
        return self._mixed[key]

    def ranker(
        self,
        ctx: Context = TODAY,
        vectors: Callable[[Conv], np.ndarray] | None = None,
        vector_weight: float = 0.7,
        after: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None,
        queries: Callable[[Conv], np.ndarray] | None = None,
    ) -> Ranker:
        """The product's search: fusion, then exact matches first; `after` may re-order
        (rows best first, their relevance, the memory vectors) -> rows; `queries` gives
        other query vectors (one row per question) for the vector arm."""

        def rank(c: Conv, qi: int) -> np.ndarray:
            hits = self.hits(c.name, ctx)[qi]
            extra = [r for r in c.exact_candidates[qi] if r not in {h for h, _ in hits}]
            if extra:
                lowest = min((s for _, s in hits), default=0.0)
                hits = hits + [(r, lowest) for r in extra]
            v = c.p.base if vectors is None else vectors(c)
            cos = v @ (c.p.queries if queries is None else queries(c))[qi]
            fused = fuse(hits, cos, vector_weight)
            keep = fused.in_keyword | (fused.cosine > 0.0)
            rows, rel = fused.rows[keep], fused.relevance[keep]
            order = np.lexsort((-rows, -rel))
            rows, rel = rows[order], rel[order]
            if after is not None:
                rows, rel = after(c, qi, rows, rel, v)
            level = c.exact_rows[qi]
            if level:
                first = np.array([r in level for r in rows])
                rows = np.concatenate([rows[first], rows[~first]])
            return rows

        return rank

    def scores(self, c: Conv, rank: Ranker) -> Scores:
        r5, r10 = [], []
        for qi, evidence in enumerate(c.p.evidence):
            order = rank(c, qi)
            r5.append(recall(order, set(evidence), 5))
            r10.append(recall(order, set(evidence), 10))
        return Scores(c.p.categories, np.array(r5), np.array(r10))

    # A grid's points are whatever its ranker_for takes (ints, floats, tuples of both).
    def run(
        self, name: str, grid: Sequence[Any], ranker_for: Callable[[Any], Ranker]
    ) -> SetOutcome:
        rankers = {g: ranker_for(g) for g in grid}
        table = {(c, g): self.scores(self.convs[c], rankers[g]) for c in self.convs for g in grid}
        return leave_one_out(name, {n: c.dataset for n, c in self.convs.items()}, grid, table)


# -- leave one out, balanced over the sets --------------------------------------------------


@dataclass
class SetOutcome:
    name: str
    chosen: list[Hashable]  # per held-out conversation
    in_sample_params: Hashable
    held: dict[str, Scores]  # per set, pooled held-out
    in_sample: dict[str, Scores]  # per set, the best single setting on all twenty

    def overall(self, which: str = "held") -> dict[str, tuple[float, float]]:
        parts = self.held if which == "held" else self.in_sample
        return {s: (float(x.r5.mean()), float(x.r10.mean())) for s, x in parts.items()}


def _objective(parts: dict[str, list[Scores]]) -> float:
    total = 0.0
    for scores in parts.values():
        s = pooled(scores)
        total += float((s.r5.mean() + s.r10.mean()) / 2)
    return total / len(parts)


def leave_one_out(
    name: str, set_of: dict[str, str], grid: Sequence[P], table: dict[tuple[str, P], Scores]
) -> SetOutcome:
    convs = list(set_of)

    def by_set(members: Sequence[str], g: P) -> dict[str, list[Scores]]:
        out: dict[str, list[Scores]] = {}
        for c in members:
            out.setdefault(set_of[c], []).append(table[(c, g)])
        return out

    best_all = max(grid, key=lambda g: _objective(by_set(convs, g)))
    chosen: list[Hashable] = []
    held: dict[str, list[Scores]] = {}
    for test in convs:
        train = [c for c in convs if c != test]
        best = max(grid, key=lambda g: _objective(by_set(train, g)))
        chosen.append(best)
        held.setdefault(set_of[test], []).append(table[(test, best)])
    return SetOutcome(
        name,
        chosen,
        best_all,
        {s: pooled(x) for s, x in held.items()},
        {s: pooled(x) for s, x in by_set(convs, best_all).items()},
    )


def _cat_name(c: object) -> str:
    return f"{c} {CATEGORY_NAMES.get(c, '')}".strip() if isinstance(c, int) else str(c)


def render(outcomes: Sequence[SetOutcome], base: SetOutcome) -> str:
    """One summary table (LOO R@5 / R@10 per set, change against `base`), then per set
    its categories."""
    sets = list(base.held)
    head = ["variant"] + [f"{s} LOO R@5 / R@10 (Δ R@10)" for s in sets] + ["chosen"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for o in outcomes:
        row = [o.name]
        for s in sets:
            r5, r10 = o.held[s].r5.mean(), o.held[s].r10.mean()
            d = r10 - base.held[s].r10.mean()
            row.append(f"{r5:.3f} / {r10:.3f} ({d:+.3f})")
        row.append(", ".join(str(g) for g in dict.fromkeys(o.chosen)))
        lines.append(" | ".join(row))
    for s in sets:
        cats = sorted(set(base.held[s].categories.tolist()), key=str)
        head = ["variant", "n"] + [_cat_name(c) for c in cats]
        lines += [
            "",
            f"{s}, LOO R@5 / R@10 per category",
            " | ".join(head),
            " | ".join("---" for _ in head),
        ]
        for o in outcomes:
            x = o.held[s]
            row = [o.name, str(len(x.r5))]
            for cat in cats:
                m = x.categories == cat
                row.append(f"{x.r5[m].mean():.3f} / {x.r10[m].mean():.3f}")
            lines.append(" | ".join(row))
    return "\n".join(lines)


# -- the groups -------------------------------------------------------------------------------


def run_vectors(c: Conv, weight: float) -> np.ndarray:
    """A memory's vector plus `weight` x the unit sum of its run-mates' (the same speaker's
    consecutive messages of its session): no model call, only stored vectors summed."""
    p = c.p
    out = p.base.copy()
    for i in range(p.n):
        mates = run_of(c, i)
        if mates:
            out[i] = p.base[i] + weight * unit(p.base[mates].sum(axis=0))
    return unit(out)


WINDOW_LENDER_CHARS = 300


def window_texts(c: Conv, k: int, lender_chars: int = WINDOW_LENDER_CHARS) -> list[str | None]:
    """Per memory, "the k previous messages of its session (each its first `lender_chars`),
    then this one" (None without a previous one): a second text to embed."""
    p = c.p
    out: list[str | None] = []
    for i in range(p.n):
        before = neighbours_before(c, i, Context(before=k))
        if not before:
            out.append(None)
            continue
        out.append("\n".join([p.values[j][:lender_chars] for j in before] + [p.values[i]]))
    return out


def run_texts(c: Conv) -> list[str | None]:
    """Per memory in a run of two or more, the run as one message: its speaker, then the
    texts in order (None for a memory alone)."""
    p = c.p
    out: list[str | None] = []
    for i in range(p.n):
        rows = sorted([i, *run_of(c, i)])
        if len(rows) < 2:
            out.append(None)
            continue
        out.append(f"{c.speakers[i]}: " + "\n".join(p.conv.turns[j].text for j in rows))
    return out


def mixed_vectors(lab: Lab, c: Conv, texts: list[str | None], weight: float) -> np.ndarray:
    """unit(vector + weight x vector of the memory's extra text), where it has one."""
    rows = [i for i, t in enumerate(texts) if t is not None]
    out = c.p.base.copy()
    if rows:
        extra = lab.encoder.vectors([texts[i] for i in rows])  # type: ignore[misc]
        out[rows] = c.p.base[rows] + weight * extra
    return unit(out)


def mmr(
    lam: float, n: int, floor: float = 0.0, keep: int = 0
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """Maximal marginal relevance over the best `n`: each next result maximises
    lam x relevance - (1 - lam) x its largest cosine above `floor` with those chosen
    (rescaled so that `floor` is 0 and 1 is 1)."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        top, trel = rows[:n], rel[:n]
        sims = np.clip((v[top] @ v[top].T - floor) / (1.0 - floor), 0.0, None)
        chosen: list[int] = list(range(min(keep, len(top))))  # the best `keep` stay first
        penalty = sims[chosen].max(axis=0) if chosen else np.zeros(len(top))
        left = np.ones(len(top), dtype=bool)
        left[chosen] = False
        for _ in range(len(top) - len(chosen)):
            score = np.where(left, lam * trel - (1 - lam) * penalty, -np.inf)
            i = int(np.argmax(score))
            chosen.append(i)
            left[i] = False
            penalty = np.maximum(penalty, sims[i])
        idx = np.array(chosen, dtype=np.int64)
        return np.concatenate([top[idx], rows[n:]]), np.concatenate([trel[idx], rel[n:]])

    return after


ORDER_WORDS = re.compile(
    r"\b(in (what|which) order|in order|order in which|chronolog\w*|sequence|timeline)\b", re.I
)


def time_order(k: int) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """When the question asks for an order, its best `k` results in the order written."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        if not ORDER_WORDS.search(c.p.questions[qi]):
            return rows, rel
        head = np.argsort(rows[:k], kind="stable")
        return np.concatenate([rows[:k][head], rows[k:]]), np.concatenate([rel[:k][head], rel[k:]])

    return after


def _mixed_ranker(
    lab: Lab, ctx: Context, texts: dict[str, list[str | None]]
) -> Callable[[float], Ranker]:
    """A ranker per weight w: the vector arm on vector + w x vector(texts[i])."""

    def ranker(w: float) -> Ranker:
        return lab.ranker(ctx, vectors=lambda one: lab.mixed(one, texts[one.name], w))

    return ranker


def _topic_ranker(lab: Lab, mode: str, t: float | None) -> Ranker:
    return lab.ranker(Context(topic=t, topic_mode=mode))


def groups(lab: Lab, names: Sequence[str]) -> list[SetOutcome]:
    grid: list[Any]  # each group's settings
    out = [
        lab.run("no context (2026-11-24)", [0], lambda _: lab.ranker(NO_CONTEXT)),
        lab.run("today: previous 4 at 0.7", [0], lambda _: lab.ranker(TODAY)),
    ]
    if "context" in names:
        grid = list(itertools.product([1, 2, 3, 4, 5], [0.3, 0.5, 0.7, 1.0]))
        out.append(
            lab.run(
                "previous k at w (k, w)",
                grid,
                lambda g: lab.ranker(Context(before=g[0], weight=g[1])),
            )
        )
    if "following" in names:
        grid = list(itertools.product([2, 3, 4], [1, 2, 3], [0.5, 0.7, 1.0]))
        out.append(
            lab.run(
                "previous k + following k' at w (k, k', w)",
                grid,
                lambda g: lab.ranker(Context(before=g[0], after=g[1], weight=g[2])),
            )
        )
    if "percap" in names:
        grid = list(itertools.product([200, 400, 800, 2000], [2, 4], [0.5, 0.7, 1.0]))
        out.append(
            lab.run(
                "previous k at w, each lender's first c chars (c, k, w)",
                grid,
                lambda g: lab.ranker(Context(before=g[1], weight=g[2], per_memory=g[0])),
            )
        )
    if "combo" in names:
        grid = list(itertools.product([2, 3, 4], [1, 2, 3, 4], [0.7, 1.0], [None, 500, 1000]))
        out.append(
            lab.run(
                "previous k (only below L chars) + following k' at w (k, k', w, L)",
                grid,
                lambda g: lab.ranker(
                    Context(before=g[0], after=g[1], weight=g[2], before_below=g[3])
                ),
            )
        )
    if "after" in names:
        grid = list(itertools.product([0, 1, 2, 3, 4], [1, 2, 3, 4], [0.5, 0.7, 1.0]))
        out.append(
            lab.run(
                "previous k + following k' at w (k, k', w)",
                grid,
                lambda g: lab.ranker(Context(before=g[0], after=g[1], weight=g[2])),
            )
        )
    if "after2" in names:
        grid = list(itertools.product([2, 3, 4], [3, 4, 5, 6, 8], [0.7, 1.0, 1.5]))
        out.append(
            lab.run(
                "previous k + following k' at w, wider (k, k', w)",
                grid,
                lambda g: lab.ranker(Context(before=g[0], after=g[1], weight=g[2])),
            )
        )
    if "fixed" in names:
        for g in [(4, 4, 0.7), (4, 4, 1.0), (3, 4, 0.7), (4, 2, 0.7), (4, 3, 0.7), (3, 3, 0.7)]:
            out.append(
                lab.run(
                    f"previous {g[0]} + following {g[1]} at {g[2]} (fixed)",
                    [g],
                    lambda g: lab.ranker(Context(before=g[0], after=g[1], weight=g[2])),
                )
            )
    if "stack" in names:
        base = Context(before=3, after=4, weight=0.7)
        out.append(lab.run("previous 3 + following 4 at 0.7", [0], lambda _: lab.ranker(base)))
        out.append(
            lab.run(
                "  + the date as words",
                [0],
                lambda _: lab.ranker(replace(base, date=True)),
            )
        )
        out.append(
            lab.run(
                "  + the run's other messages",
                [0],
                lambda _: lab.ranker(replace(base, run=True)),
            )
        )
        out.append(
            lab.run(
                "  , vector weight re-chosen (w)",
                [0.6, 0.7, 0.8],
                lambda w: lab.ranker(base, vector_weight=w),
            )
        )
        for k in (1, 2, 3):
            texts = {n: window_texts(cv, k) for n, cv in lab.convs.items()}
            out.append(
                lab.run(
                    f"  + vector + w x vector('previous {k} + this') (w)",
                    [0.0, 0.2, 0.3, 0.5],
                    _mixed_ranker(lab, base, texts),
                )
            )
        texts = {n: run_texts(cv) for n, cv in lab.convs.items()}
        out.append(
            lab.run(
                "  + vector + w x vector(the run as one message) (w)",
                [0.0, 0.2, 0.3, 0.5],
                lambda w: lab.ranker(base, vectors=lambda one: lab.mixed(one, texts[one.name], w)),
            )
        )
        grid = list(itertools.product([0.7, 0.8, 0.9, 1.0], [15, 30], [0.5, 0.7]))
        out.append(
            lab.run("  + MMR (lambda, n, floor)", grid, lambda g: lab.ranker(base, after=mmr(*g)))
        )
    if "distinct" in names:
        out.append(
            lab.run(
                "previous 3 + following 4, each word once, at w (w)",
                [0.5, 0.7, 1.0, 1.5],
                lambda w: lab.ranker(Context(before=3, after=4, weight=w, distinct=True)),
            )
        )
    if "short" in names:
        grid = list(itertools.product([150, 300, 500, 1000, 2000], [0.5, 0.7, 1.0]))
        out.append(
            lab.run(
                "previous 4 at w, only memories shorter than L borrow (L, w)",
                grid,
                lambda g: lab.ranker(Context(borrow_below=g[0], weight=g[1])),
            )
        )
    if "topic" in names:
        for mode in ("chain", "self"):
            grid = [(None, 0), *itertools.product([0.1, 0.2, 0.3, 0.4, 0.5], [0])]
            out.append(
                lab.run(
                    f"previous 4 at 0.7, stop at a neighbour cosine below t ({mode}) (t)",
                    [g[0] for g in grid],
                    partial(_topic_ranker, lab, mode),
                )
            )
    if "date" in names:
        out.append(
            lab.run(
                "previous 4 at w + the date as words (w)",
                [0.5, 0.7, 1.0],
                lambda w: lab.ranker(Context(weight=w, date=True)),
            )
        )
    if "run" in names:
        out.append(
            lab.run(
                "previous 4 at 0.7 + the run's other messages in the context",
                [0],
                lambda _: lab.ranker(Context(run=True)),
            )
        )
        out.append(
            lab.run(
                "previous 4 at 0.7, vector + w x the run's (w)",
                [0.0, 0.2, 0.3, 0.5, 0.7, 1.0],
                lambda w: lab.ranker(TODAY, vectors=lambda c: run_vectors(c, w)),
            )
        )
    if "mmr" in names:
        grid = list(itertools.product([0.6, 0.7, 0.8, 0.9, 1.0], [15, 30], [0.0, 0.5, 0.7]))
        out.append(
            lab.run(
                "today + MMR (lambda, n, floor)",
                grid,
                lambda g: lab.ranker(TODAY, after=mmr(*g)),
            )
        )
    if "order" in names:
        out.append(
            lab.run(
                "today + time order of the top k when asked for an order (k)",
                [5, 10],
                lambda k: lab.ranker(TODAY, after=time_order(k)),
            )
        )
    if "window" in names:
        for k in (1, 2, 3):
            texts = {n: window_texts(cv, k) for n, cv in lab.convs.items()}
            out.append(
                lab.run(
                    f"today, vector + w x vector('previous {k} + this') (w)",
                    [0.0, 0.2, 0.3, 0.5, 0.7, 1.0],
                    _mixed_ranker(lab, TODAY, texts),
                )
            )
    if "runvec" in names:
        texts = {n: run_texts(cv) for n, cv in lab.convs.items()}
        out.append(
            lab.run(
                "today, vector + w x vector(the run as one message) (w)",
                [0.0, 0.2, 0.3, 0.5, 0.7, 1.0],
                lambda w: lab.ranker(TODAY, vectors=lambda c: lab.mixed(c, texts[c.name], w)),
            )
        )
    if "weight" in names:
        out.append(
            lab.run(
                "today, vector weight re-chosen (w)",
                [0.5, 0.6, 0.7, 0.8],
                lambda w: lab.ranker(TODAY, vector_weight=w),
            )
        )
    return out


def main(argv: list[str]) -> None:
    """python -m bench.lab.v3 [GROUP ...]: the three development sets in ../shared."""
    lab = Lab()
    outcomes = groups(lab, argv)
    print(render(outcomes, outcomes[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
