"""Leave-one-conversation-out: a variant's parameters are chosen on four conversations (the
best mean of R@5 and R@10 over their questions) and measured on the fifth; the five
held-out measurements are pooled question by question."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from bench.lab.data import CATEGORY_NAMES

CUTOFFS = (5, 10)


@dataclass
class Scores:
    """Per question of one conversation: category, R@5, R@10."""

    categories: np.ndarray
    r5: np.ndarray
    r10: np.ndarray


@dataclass
class Outcome:
    name: str
    in_sample: tuple[float, float]  # best single setting on all five
    in_sample_params: Hashable
    loo: tuple[float, float]
    chosen: list[Hashable]  # per fold
    by_category: dict[int | str, tuple[int, float, float]] = field(default_factory=dict)
    by_conversation: dict[str, tuple[float, float]] = field(default_factory=dict)


def pooled(parts: Sequence[Scores]) -> Scores:
    return Scores(
        np.concatenate([p.categories for p in parts]),
        np.concatenate([p.r5 for p in parts]),
        np.concatenate([p.r10 for p in parts]),
    )


def objective(s: Scores) -> float:
    return float((s.r5.sum() + s.r10.sum()) / 2)


P = TypeVar("P", bound=Hashable)


def leave_one_out(
    name: str,
    conversations: Sequence[str],
    grid: Sequence[P],
    score: Callable[[str, P], Scores],
) -> Outcome:
    """`score(conversation, params)` -> that conversation's per-question recalls."""
    table = {(c, p): score(c, p) for c in conversations for p in grid}
    best_all = max(grid, key=lambda p: objective(pooled([table[(c, p)] for c in conversations])))
    everything = pooled([table[(c, best_all)] for c in conversations])
    held: list[Scores] = []
    chosen: list[Hashable] = []
    by_conversation: dict[str, tuple[float, float]] = {}
    for test in conversations:
        train = [c for c in conversations if c != test]
        best = max(grid, key=lambda p: objective(pooled([table[(c, p)] for c in train])))
        chosen.append(best)
        part = table[(test, best)]
        held.append(part)
        by_conversation[test] = (float(part.r5.mean()), float(part.r10.mean()))
    out = pooled(held)
    by_category = {
        cat: (
            int((out.categories == cat).sum()),
            float(out.r5[out.categories == cat].mean()),
            float(out.r10[out.categories == cat].mean()),
        )
        for cat in sorted(set(out.categories.tolist()))
    }
    return Outcome(
        name,
        (float(everything.r5.mean()), float(everything.r10.mean())),
        best_all,
        (float(out.r5.mean()), float(out.r10.mean())),
        chosen,
        by_category,
        by_conversation,
    )


def render(outcomes: Sequence[Outcome], baseline: Outcome | None = None) -> str:
    cats = sorted({c for o in outcomes for c in o.by_category})
    head = ["variant", "in-sample R@5/R@10", "LOO R@5", "LOO R@10"]
    head += [f"c{c} {CATEGORY_NAMES.get(c, '')[:10]}" for c in cats]
    head += ["chosen per fold"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for o in outcomes:
        delta = ""
        if baseline is not None and o is not baseline:
            delta = f" ({o.loo[0] - baseline.loo[0]:+.3f}/{o.loo[1] - baseline.loo[1]:+.3f})"
        row = [
            o.name,
            f"{o.in_sample[0]:.3f} / {o.in_sample[1]:.3f}",
            f"{o.loo[0]:.3f}",
            f"{o.loo[1]:.3f}{delta}",
        ]
        row += [
            f"{o.by_category[c][1]:.3f} / {o.by_category[c][2]:.3f}" if c in o.by_category else ""
            for c in cats
        ]
        distinct = list(dict.fromkeys(o.chosen))
        row += [", ".join(str(p) for p in distinct)]
        lines.append(" | ".join(row))
    return "\n".join(lines)
