"""python -m bench.lab DIR [GROUP ...]: prepare the conversations, run the experiment groups."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np

from bench.lab import experiments as ex
from bench.lab.data import load_all
from bench.lab.encoders import CachedEncoder, minilm_onnx
from bench.lab.loo import Outcome, render
from bench.lab.prepared import Prepared, prepare
from bench.lab.replica import KeywordIndex

CACHE = Path("bench/results/lab")


def main() -> None:
    print(run_groups(Path(sys.argv[1]), sys.argv[2:] or ["baseline"], CACHE))


def run_groups(directory: Path, groups: list[str], cache_dir: Path) -> str:
    """The LOO table of the experiment `groups` (bench/README.md, "locomo-loo")."""
    convs = load_all(directory)
    encoder = CachedEncoder("minilm", minilm_onnx(), cache_dir)
    prepared = {c.name: prepare(c, encoder) for c in convs}
    base = ex.run(
        "before issue 23 (no context)",
        prepared,
        [0.7],
        lambda p, w: ex.hybrid(p.base, vector_weight=w),
    )
    outcomes: list[Outcome] = [base]

    @cache
    def windows(name: str, k: int) -> np.ndarray:
        return encoder.vectors(ex.window_texts(prepared[name], k))

    @cache
    def kw_context(
        name: str, k_before: int, k_after: int, weight: float, split: bool = False
    ) -> list[list[tuple[int, float]]]:
        p = prepared[name]
        index = _kw_index(name, k_before, k_after)
        return [index.hits(q, weight, split=split) for q in p.questions]

    @cache
    def _kw_index(name: str, k_before: int, k_after: int) -> KeywordIndex:
        p = prepared[name]
        return KeywordIndex(
            [t.key for t in p.conv.turns], p.values, ex.context_docs(p, k_before, k_after)
        )

    if "shipped" in groups:
        # What the product does now (write_context.py): the previous 4 memories of the
        # session in the keyword document at weight 0.7, own and context words as separate
        # phrases (their own IDF). Its grid: what LOO chose from.
        grid1 = list(itertools.product([2, 3, 4, 5, 8], [0], [0.5, 0.7, 1.0, 1.5, 2.0]))
        outcomes.append(
            ex.run(
                "shipped: keyword doc + previous 4 at 0.7, own IDF (fixed)",
                prepared,
                [(4, 0, 0.7)],
                lambda p, g: ex.hybrid(p.base, kw_context(p.conv.name, *g, True)),
            )
        )
        outcomes.append(
            ex.run(
                "keyword doc + previous k at w, own IDF, k and w chosen per fold (k, 0, w)",
                prepared,
                grid1,
                lambda p, g: ex.hybrid(p.base, kw_context(p.conv.name, *g, True)),
            )
        )

    def window_ranker(k: int) -> Callable[[Prepared, float], ex.Ranker]:
        return lambda p, w: ex.hybrid(ex.with_window(p, windows(p.conv.name, k), w))

    def context_ranker(kb: int, ka: int) -> Callable[[Prepared, float], ex.Ranker]:
        return lambda p, w: ex.hybrid(p.base, kw_context(p.conv.name, kb, ka, w))

    def entity_ranker(
        ents: dict[str, list[set[str]]],
    ) -> Callable[[Prepared, tuple[int, int, float]], ex.Ranker]:
        return lambda p, g: ex.hybrid(
            p.base,
            after=ex.second_hop("entity", g[0], 0, g[2], ents[p.conv.name], rare_up_to=g[1]),
        )

    if "split" in groups:
        grid10 = list(itertools.product([2, 3, 4, 5, 8], [0], [0.5, 0.7, 1.0, 1.5, 2.0]))
        outcomes.append(
            ex.run(
                "keyword doc + previous k at w, own and context words with their own IDF (k, 0, w)",
                prepared,
                grid10,
                lambda p, g: ex.hybrid(p.base, kw_context(p.conv.name, *g, True)),
            )
        )
    if "baseline" in groups:
        outcomes.append(
            ex.run("dense, whole value", prepared, [0], lambda p, _: ex.dense(lambda q: q.whole))
        )
        outcomes.append(
            ex.run("dense, product vectors", prepared, [0], lambda p, _: ex.dense(lambda q: q.base))
        )
    if "context" in groups:
        grid2 = list(itertools.product([1, 2, 3, 5], [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0]))
        outcomes.append(
            ex.run(
                "vector + w * mean(previous k of session) (k, w)",
                prepared,
                grid2,
                lambda p, kw: ex.hybrid(ex.with_previous(p, *kw)),
            )
        )
        grid2b = list(
            itertools.product([1, 2, 3], [0.0, 0.2, 0.3, 0.5], [1, 2, 3], [0.0, 0.2, 0.3, 0.5])
        )
        outcomes.append(
            ex.run(
                "vector + previous k (w) + following k' (w') [following: refreshed later]",
                prepared,
                grid2b,
                lambda p, g: ex.hybrid(ex.with_neighbours(p, *g)),
            )
        )
    if "window" in groups:
        for k in (1, 2):
            outcomes.append(
                ex.run(
                    f"vector + w * vector('previous {k} + this') (w)",
                    prepared,
                    [0.1, 0.2, 0.3, 0.5, 0.7, 1.0],
                    window_ranker(k),
                )
            )
    if "kwcontext" in groups:
        for kb, ka in ((1, 0), (2, 0), (3, 0), (1, 1), (2, 2)):
            outcomes.append(
                ex.run(
                    f"keyword doc + previous {kb} / following {ka} at weight w (w)",
                    prepared,
                    [0.05, 0.1, 0.2, 0.3, 0.5],
                    context_ranker(kb, ka),
                )
            )
    if "kwcontext2" in groups:
        for kb, ka in ((3, 0), (4, 0), (5, 0), (8, 0), (3, 1), (3, 2)):
            outcomes.append(
                ex.run(
                    f"keyword doc + previous {kb} / following {ka} at weight w (w)",
                    prepared,
                    [0.3, 0.5, 0.7, 1.0],
                    context_ranker(kb, ka),
                )
            )
    if "both" in groups:
        grid3 = list(itertools.product([3, 5], [0.5, 0.7, 1.0], [0, 1, 2, 3], [0.0, 0.3, 0.5, 0.7]))
        outcomes.append(
            ex.run(
                "keyword doc + previous kb at w, vector + w' * mean(previous kv) (kb, w, kv, w')",
                prepared,
                grid3,
                lambda p, g: ex.hybrid(
                    ex.with_previous(p, g[2], g[3]), kw_context(p.conv.name, g[0], 0, g[1])
                ),
            )
        )
    if "joint" in groups:
        grid4 = list(itertools.product([1, 2, 3, 4, 5, 8], [0], [0.3, 0.5, 0.7, 1.0]))
        outcomes.append(
            ex.run(
                "keyword doc + previous k at weight w, k and w chosen per fold (k, 0, w)",
                prepared,
                grid4,
                lambda p, g: ex.hybrid(p.base, kw_context(p.conv.name, *g)),
            )
        )
        grid5 = list(itertools.product([2, 3, 4, 5], [0, 1, 2, 3], [0.3, 0.5, 0.7]))
        outcomes.append(
            ex.run(
                "keyword doc + previous k + following k' at w, chosen per fold (k, k', w)",
                prepared,
                grid5,
                lambda p, g: ex.hybrid(p.base, kw_context(p.conv.name, *g)),
            )
        )
    if "hopctx" in groups:
        grid6 = list(itertools.product([1, 2, 3, 5], [1, 2, 3], [0.5, 0.7, 0.8, 0.9, 0.95]))
        outcomes.append(
            ex.run(
                "keyword doc + previous 3 (0.5), then session neighbours hop (m, r, share)",
                prepared,
                [(0, 0, 0.0), *grid6],
                lambda p, g: ex.hybrid(
                    p.base,
                    kw_context(p.conv.name, 3, 0, 0.5),
                    after=None if g[0] == 0 else ex.second_hop("session", *g),
                ),
            )
        )
        outcomes.append(
            ex.run(
                "keyword doc + previous 3 (0.5), vector weight re-chosen (vector weight)",
                prepared,
                [0.5, 0.6, 0.7, 0.8],
                lambda p, w: ex.hybrid(p.base, kw_context(p.conv.name, 3, 0, 0.5), vector_weight=w),
            )
        )
    if "mpnet" in groups:
        outcomes.extend(mpnet_rows(prepared, cache_dir, kw_context))
    if "learned" in groups:
        outcomes.extend(learned(prepared, kw_context))
    if "hop" in groups:
        grid8 = list(itertools.product([1, 2, 3, 5], [1, 2, 3], [0.5, 0.7, 0.8, 0.9, 0.95]))
        outcomes.append(
            ex.run(
                "second hop: session neighbours of the best m within r turns, "
                ">= share x seed (m, r, share)",
                prepared,
                grid8,
                lambda p, g: ex.hybrid(p.base, after=ex.second_hop("session", *g)),
            )
        )
        for caps in (True, False):
            ents = {name: ex.entity_terms(p, caps) for name, p in prepared.items()}
            grid9 = list(itertools.product([1, 2, 3], [2, 3, 5], [0.5, 0.7, 0.9]))
            outcomes.append(
                ex.run(
                    "second hop: memories sharing a rare "
                    + ("capitalised name" if caps else "word (4+ letters)")
                    + " with the best m (m, df <=, share)",
                    prepared,
                    grid9,
                    entity_ranker(ents),
                )
            )
    return render(outcomes, base)


def mpnet_rows(prepared: dict[str, Prepared], cache_dir: Path, kw_context) -> list[Outcome]:  # type: ignore[no-untyped-def]
    """all-mpnet-base-v2 against MiniLM, whole-turn vectors (one per memory, no passages):
    dense alone and in the hybrid, with and without the keyword context. Its vectors come
    from the cache (MPNET_DIR: a local sentence-transformers folder, safetensors only,
    embeds what is missing)."""
    import os

    def load(texts: list[str]) -> np.ndarray:
        from bench.lab.encoders import sentence_transformer

        return sentence_transformer(os.environ["MPNET_DIR"])(texts)

    mpnet = CachedEncoder("mpnet", load, cache_dir)
    whole = {n: mpnet.vectors(p.values) for n, p in prepared.items()}
    queries = {n: mpnet.vectors(p.questions) for n, p in prepared.items()}

    def with_queries(p: Prepared, q: np.ndarray, rank: ex.Ranker) -> ex.Ranker:
        def ranked(_: Prepared, qi: int) -> np.ndarray:
            saved = p.queries
            p.queries = q
            try:
                return rank(p, qi)
            finally:
                p.queries = saved

        return ranked

    rows = [
        ex.run("MiniLM dense, whole turn", prepared, [0], lambda p, _: ex.dense(lambda q: q.whole)),
        ex.run(
            "mpnet dense, whole turn",
            prepared,
            [0],
            lambda p, _: with_queries(
                p, queries[p.conv.name], ex.dense(lambda q: whole[q.conv.name])
            ),
        ),
        ex.run(
            "MiniLM hybrid, whole-turn vectors (vector weight)",
            prepared,
            [0.5, 0.6, 0.7, 0.8],
            lambda p, w: ex.hybrid(p.whole, vector_weight=w),
        ),
        ex.run(
            "mpnet hybrid, whole-turn vectors (vector weight)",
            prepared,
            [0.5, 0.6, 0.7, 0.8],
            lambda p, w: with_queries(
                p, queries[p.conv.name], ex.hybrid(whole[p.conv.name], vector_weight=w)
            ),
        ),
        ex.run(
            "mpnet hybrid, whole-turn vectors + keyword doc previous 3 at 0.5 (vector weight)",
            prepared,
            [0.5, 0.6, 0.7, 0.8],
            lambda p, w: with_queries(
                p,
                queries[p.conv.name],
                ex.hybrid(whole[p.conv.name], kw_context(p.conv.name, 3, 0, 0.5), vector_weight=w),
            ),
        ),
        ex.run(
            "MiniLM hybrid, whole-turn vectors + keyword doc previous 3 at 0.5 (vector weight)",
            prepared,
            [0.5, 0.6, 0.7, 0.8],
            lambda p, w: ex.hybrid(p.whole, kw_context(p.conv.name, 3, 0, 0.5), vector_weight=w),
        ),
    ]
    return rows


def learned(prepared: dict[str, Prepared], kw_context) -> list[Outcome]:  # type: ignore[no-untyped-def]
    """A logistic ranker over the candidates' features, trained on four conversations and
    tested on the fifth (no parameter chosen on the test conversation)."""
    from bench.lab.loo import Scores, pooled

    data: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for name, p in prepared.items():
        hits = kw_context(name, 3, 0, 0.5)
        ctx_only = kw_context(name, 3, 0, -1.0)
        per_q = []
        for qi in range(len(p.questions)):
            cos = p.base @ p.queries[qi]
            fused = ex.fuse(hits[qi], cos)
            x = ex.features(p, qi, fused, cos, ctx_only[qi])
            y = np.isin(fused.rows, p.evidence[qi]).astype(float)
            per_q.append((fused.rows, x, y))
        data[name] = per_q
    outcomes = []
    for l2 in (0.1, 1.0, 10.0):
        held = []
        chosen = []
        for test in prepared:
            x = np.vstack([x for n in prepared if n != test for _, x, _ in data[n]])
            y = np.concatenate([y for n in prepared if n != test for _, _, y in data[n]])
            mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
            w = ex.logistic((x - mean) / std, y, l2)
            chosen.append(tuple(np.round(w, 2)))
            p = prepared[test]
            r5, r10 = [], []
            for qi, (rows, xq, _) in enumerate(data[test]):
                s = ((xq - mean) / std) @ w[:-1]
                order = rows[np.lexsort((-rows, -s))]
                r5.append(ex.recall(order, set(p.evidence[qi]), 5))
                r10.append(ex.recall(order, set(p.evidence[qi]), 10))
            held.append(Scores(p.categories, np.array(r5), np.array(r10)))
        out = pooled(held)
        o = Outcome(
            f"learned (logistic, {len(ex.FEATURES)} features, L2 {l2}) "
            "over keyword doc + previous 3",
            (float("nan"), float("nan")),
            None,
            (float(out.r5.mean()), float(out.r10.mean())),
            [f"fold weights {c}" for c in chosen[:1]],
            {
                int(c): (
                    int((out.categories == c).sum()),
                    float(out.r5[out.categories == c].mean()),
                    float(out.r10[out.categories == c].mean()),
                )
                for c in sorted(set(out.categories.tolist()))
            },
        )
        outcomes.append(o)
    return outcomes


if __name__ == "__main__":
    main()
