"""Issue 52's experiments: a second hop through entities, and pseudo-relevance feedback,
on v3's replica of the search path (bench/lab/v3.py), over the development conversations
minus a final check set aside before any choice (docs/lab/retrieval-v4.md).

`python -m bench.lab.v4 [GROUP ...]`: leave one out over the iterate-on conversations
(set-balanced, as v3), per set and per category. `python -m bench.lab.v4 --final GROUP ...`:
each variant's setting chosen on all the iterate-on conversations, measured once on the
final check."""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.entities import rule_entities
from bench.lab.loo import Scores, pooled
from bench.lab.v3 import DATA, Context, Conv, Lab, SetOutcome, render
from memory_mcp.store.keyword import query_terms

# The context the product writes today (v3: previous 3 + following 4 at 0.7).
SHIPPED = Context(before=3, after=4, weight=0.7)

# The final check: the last two files by name of each set (docs/lab/retrieval-v4.md).
FINAL = frozenset(
    {"42", "43", "Chat_7_Nebraas_Vanessa", "Chat_9_Fahim_Akib", "beam128k_09", "beam128k_10"}
)

After = Callable[..., tuple[np.ndarray, np.ndarray]]


def _resort(rel_of: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.array(list(rel_of), dtype=np.int64)
    rel = np.array(list(rel_of.values()), dtype=np.float64)
    order = np.lexsort((-rows, -rel))  # ties to the newer memory, as the product
    return rows[order], rel[order]


# -- entities, one hop -----------------------------------------------------------------------


@dataclass
class EntityIndex:
    per_row: list[set[str]]
    holders: dict[str, list[int]]


_ENTITIES: dict[tuple[str, bool], EntityIndex] = {}


def lower_words(c: Conv) -> Counter[str]:
    """How often each word is written in lower case in the conversation."""
    counts: Counter[str] = Counter()
    for t in c.p.conv.turns:
        counts.update(re.findall(r"\b[a-z][a-z'’]+\b", t.text))
    return counts


def clean_names(text: str, lower: Counter[str]) -> set[str]:
    """rule_entities with the curly apostrophe read as the straight one ("I’m" is "i'm",
    a common word), and without a name whose words are all written in lower case
    elsewhere in the conversation at least twice ("However", "Miami" stays)."""
    names = rule_entities(text.replace("’", "'"))
    return {n for n in names if not all(lower[w] >= 2 for w in re.findall(r"[a-z][a-z']+", n))}


def entity_index(c: Conv, clean: bool = False) -> EntityIndex:
    key = (c.name, clean)
    if key not in _ENTITIES:
        speakers = {s.lower() for s in c.speakers} | set(aliases(c))
        lower = lower_words(c)
        per_row = [
            (clean_names(t.text, lower) if clean else rule_entities(t.text)) - speakers
            for t in c.p.conv.turns
        ]
        holders: dict[str, list[int]] = {}
        for i, names in enumerate(per_row):
            for name in names:
                holders.setdefault(name, []).append(i)
        _ENTITIES[key] = EntityIndex(per_row, holders)
    return _ENTITIES[key]


def entity_hop(
    seeds: int, weight: float, cap: int, mode: str, through: str = "hits", clean: bool = False
) -> After:
    """One hop from the best `seeds` results through their rare entities (held by at most
    `cap` memories; speakers left out): each holder gets `weight` x the seed's relevance,
    added to its own (`add`: a candidate the hop agrees with rises, a new one ranks low) or
    as a floor (`max`). `through`: `hits` every entity of the seeds; `shared` only those the
    query names too; `query` the query's own rare entities (from the best result's
    relevance)."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        index = entity_index(c, clean)
        query_names = (
            clean_names(c.p.questions[qi], lower_words(c))
            if clean
            else rule_entities(c.p.questions[qi])
        )
        via: dict[int, float] = {}
        if through == "query":
            top = float(rel[0]) if rel.size else 0.0
            for name in query_names:
                holders = index.holders.get(name, [])
                if 0 < len(holders) <= cap:
                    for h in holders:
                        via[h] = max(via.get(h, 0.0), weight * top)
        else:
            for seed, seed_rel in zip(rows[:seeds].tolist(), rel[:seeds].tolist(), strict=True):
                for name in index.per_row[seed]:
                    if through == "shared" and name not in query_names:
                        continue
                    holders = index.holders[name]
                    if len(holders) > cap:
                        continue
                    for h in holders:
                        if h != seed:
                            via[h] = max(via.get(h, 0.0), weight * seed_rel)
        if not via:
            return rows, rel
        rel_of = dict(zip(rows.tolist(), rel.tolist(), strict=True))
        for h, lift in via.items():
            own = rel_of.get(h, 0.0)
            rel_of[h] = own + lift if mode == "add" else max(own, lift)
        return _resort(rel_of)

    return after


def speaker_lift(weight: float) -> After:
    """Who in the question: when the question names a speaker of the conversation (one
    word of it, any case), each memory written by that speaker gets `weight` added, those
    already a candidate only (no new candidates)."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        words = set(re.findall(r"\w+", c.p.questions[qi].lower()))
        named = {s for s in set(c.speakers) if s.lower() in words}
        if not named or len(named) == len(set(c.speakers)):
            return rows, rel
        lift = np.array([weight if c.speakers[r] in named else 0.0 for r in rows.tolist()])
        rel_of = dict(zip(rows.tolist(), (rel + lift).tolist(), strict=True))
        return _resort(rel_of)

    return after


# -- pseudo-relevance feedback -----------------------------------------------------------------


_DF: dict[str, tuple[Counter[str], int]] = {}
_SECOND: dict[tuple[str, int, int, int], list[tuple[int, float]]] = {}


def doc_freq(c: Conv) -> tuple[Counter[str], int]:
    if c.name not in _DF:
        df: Counter[str] = Counter()
        for value in c.p.values:
            df.update(set(query_terms(value)))
        _DF[c.name] = (df, c.p.n)
    return _DF[c.name]


def feedback_words(c: Conv, qi: int, rows: Sequence[int], words: int) -> list[str]:
    """The `words` most distinctive words of the given results (in how many of them x
    idf), not the query's own, each in at least two of them or rare."""
    df, n = doc_freq(c)
    own = set(query_terms(c.p.questions[qi]))
    counts: Counter[str] = Counter()
    for r in rows:
        counts.update(set(query_terms(c.p.values[r])) - own)
    scored = {
        w: k * math.log(n / df[w])
        for w, k in counts.items()
        if df[w] and not w.isdigit() and len(w) > 2 and df[w] < n / 10
    }
    return sorted(scored, key=lambda w: -scored[w])[:words]


def feedback(seeds: int, words: int, weight: float) -> After:
    """A second keyword query: the best `seeds` results' `words` most distinctive words;
    its BM25 min-max scaled, `weight` x it added to each candidate's relevance (a new
    candidate gets only that)."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        key = (c.name, qi, seeds, words)
        if key not in _SECOND:
            terms = feedback_words(c, qi, rows[:seeds].tolist(), words)
            _SECOND[key] = c.p.keyword.hits(" ".join(terms)) if terms else []
        second = _SECOND[key]
        if not second or weight == 0.0:
            return rows, rel
        scores = np.array([s for _, s in second])
        high, low = float(scores.max()), float(scores.min())
        span = max(high - low, 1e-9)
        rel_of = dict(zip(rows.tolist(), rel.tolist(), strict=True))
        top = set(rows[:seeds].tolist())
        for r, s in second:
            if r not in top:
                rel_of[r] = rel_of.get(r, 0.0) + weight * (s - low) / span
        return _resort(rel_of)

    return after


# -- memories that only ask, and their replies -------------------------------------------------

_SENTENCES = re.compile(r"[^.!?]+[.!?]*")


def only_asks(value: str, speaker: str | None = None) -> bool:
    """A memory that only asks: its text (after "speaker: ") ends with a question mark and
    none of its sentences states anything (each ends with "?", or is under four words: a
    greeting, a name called)."""
    text = value.split(": ", 1)[1] if speaker and value.startswith(f"{speaker}: ") else value
    text = text.strip()
    if not text.endswith("?"):
        return False
    for sentence in _SENTENCES.findall(text):
        sentence = sentence.strip()
        if sentence and not sentence.endswith("?") and len(sentence.split()) >= 4:
            return False
    return True


_ASKS: dict[str, np.ndarray] = {}


def asks(c: Conv) -> np.ndarray:
    if c.name not in _ASKS:
        _ASKS[c.name] = np.array(
            [only_asks(v, s) for v, s in zip(c.p.values, c.speakers, strict=True)]
        )
    return _ASKS[c.name]


def question_down(weight: float, reply: float = 0.0, seeds: int = 10) -> After:
    """A memory that only asks holds no answer: its relevance x (1 - `weight`). With
    `reply` > 0, each asking memory among the best `seeds` lends `reply` x its relevance
    to the next memory of its session written by someone else (the answer, a hop through
    the conversation's order), added to that one's own."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        a = asks(c)
        rel_of = dict(zip(rows.tolist(), rel.tolist(), strict=True))
        if reply > 0.0:
            p = c.p
            for r, r_rel in zip(rows[:seeds].tolist(), rel[:seeds].tolist(), strict=True):
                if not a[r]:
                    continue
                j = r + 1
                while j < p.n and p.session[j] == p.session[r] and c.speakers[j] == c.speakers[r]:
                    j += 1
                if j < p.n and p.session[j] == p.session[r]:
                    rel_of[j] = rel_of.get(j, 0.0) + reply * r_rel
        for r in rel_of:
            if a[r]:
                rel_of[r] *= 1.0 - weight
        return _resort(rel_of)

    return after


def session_cap(cap: int, depth: int = 10) -> After:
    """At most `cap` of one session among the first `depth`: the others step down below
    the `depth`th (multi-hop answers lie in several sessions)."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        seen: Counter[int] = Counter()
        keep: list[int] = []
        later: list[int] = []
        for i, r in enumerate(rows.tolist()):
            s = int(c.p.session[r])
            if len(keep) < depth and seen[s] >= cap:
                later.append(i)
                continue
            seen[s] += 1
            keep.append(i)
        idx = np.array(keep[:depth] + later + keep[depth:], dtype=np.int64)
        return rows[idx], rel[idx]

    return after


# -- a speaker called by another name ------------------------------------------------------------

_CALLED = re.compile(
    r"(?:\b(?i:hey|hi|hello|thanks|thank you|bye|morning|night|dear)\s+|,\s*|\w\s+)"
    r"([A-Z][a-z]{2,})\s*(?:[!?.,]|$)"
)
_INTRODUCED = re.compile(r"\b(?:I'm|I am|I’m|my name is|call me)\s+([A-Z][a-z]{2,})\b")
_ALIASES: dict[str, dict[str, str]] = {}


def aliases(c: Conv, votes: int = 3) -> dict[str, str]:
    """Names a speaker goes by: a name a speaker introduces themself with ("I'm Kate"), or
    one the others call out ("Hey Kate!", "..., Kate?", "... today Kate?") at least `votes`
    times in messages answered next by that speaker, and which that speaker hardly writes
    (at most a tenth of its uses: "New York" is said by both, "Kate" by the others only):
    the name (lower case) -> that speaker. A word also written in lower case is no name."""
    if c.name in _ALIASES:
        return _ALIASES[c.name]
    p = c.p
    turns = c.p.conv.turns
    called: dict[str, Counter[str]] = {}
    written: dict[str, Counter[str]] = {}
    out: dict[str, str] = {}
    speakers = {x.lower() for x in c.speakers}
    for i in range(p.n):
        text = turns[i].text
        for name in set(re.findall(r"\b[A-Z][a-z]{2,}\b", text)):
            written.setdefault(name.lower(), Counter())[c.speakers[i]] += 1
        for name in _INTRODUCED.findall(text):
            if name.lower() not in speakers:
                out.setdefault(name.lower(), c.speakers[i])
        j = i + 1
        while j < p.n and p.session[j] == p.session[i] and c.speakers[j] == c.speakers[i]:
            j += 1
        if j >= p.n or p.session[j] != p.session[i]:
            continue
        for name in _CALLED.findall(text):
            if name.lower() not in speakers:
                called.setdefault(name.lower(), Counter())[c.speakers[j]] += 1
    lower: Counter[str] = Counter()
    for t in turns:
        lower.update(w for w in re.findall(r"\b[a-z]{3,}\b", t.text) if w in written)
    for name in [n for n in out if lower[n] > 0.1 * sum(written.get(n, Counter()).values())]:
        del out[name]  # a word written in lower case too is no name ("I'm First in line")
    for name, who in called.items():
        if lower[name] > 0.1 * sum(written.get(name, Counter()).values()):
            continue
        speaker, n = who.most_common(1)[0]
        own = written.get(name, Counter())[speaker]
        total = sum(written.get(name, Counter()).values())
        if n >= votes and n >= 0.8 * sum(who.values()) and own <= 0.1 * total:
            out.setdefault(name, speaker)
    _ALIASES[c.name] = out
    return out


def named_speakers(c: Conv, question: str) -> set[str]:
    words = set(re.findall(r"\w+", question.lower()))
    named = {s for s in set(c.speakers) if s.lower() in words}
    named |= {s for name, s in aliases(c).items() if name in words}
    return named


def speaker_lift_aliased(weight: float) -> After:
    """speaker_lift, with the names a speaker is called by (aliases) counted as theirs."""

    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        named = named_speakers(c, c.p.questions[qi])
        if not named or len(named) == len(set(c.speakers)):
            return rows, rel
        lift = np.array([weight if c.speakers[r] in named else 0.0 for r in rows.tolist()])
        return _resort(dict(zip(rows.tolist(), (rel + lift).tolist(), strict=True)))

    return after


# -- the question's meaning without its names ----------------------------------------------------


def without_names(question: str) -> str | None:
    """The question with the names rule_entities finds in it taken out (with a possessive
    "'s"), or None when it names nobody: "What foods does Nebraas like?" -> "What foods
    does like?"."""
    names = rule_entities(question.replace("’", "'"))
    text = question.replace("’", "'")
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"\s+", " ", text).strip()
    return None if text == question.replace("’", "'").strip() or not text.strip(" ?.!") else text


_UNNAMED: dict[str, np.ndarray] = {}


def unnamed_queries(lab: Lab, c: Conv) -> np.ndarray:
    """Per question, the vector of the question without its names (its own vector when
    it names nobody)."""
    if c.name not in _UNNAMED:
        texts = [without_names(q) for q in c.p.questions]
        todo = [t for t in texts if t is not None]
        vectors = lab.encoder.vectors(todo) if todo else np.zeros((0, c.p.queries.shape[1]))
        out = c.p.queries.copy()
        k = 0
        for i, t in enumerate(texts):
            if t is not None:
                out[i] = vectors[k]
                k += 1
        _UNNAMED[c.name] = out
    return _UNNAMED[c.name]


def mixed_queries(lab: Lab, alpha: float) -> Callable[[Conv], np.ndarray]:
    """The query vector as unit(question + alpha x question without its names)."""
    mixed: dict[str, np.ndarray] = {}

    def queries(c: Conv) -> np.ndarray:
        if c.name not in mixed:
            v = c.p.queries + alpha * unnamed_queries(lab, c)
            mixed[c.name] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return mixed[c.name]

    return queries


def chain(*steps: After) -> After:
    def after(
        c: Conv, qi: int, rows: np.ndarray, rel: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        for step in steps:
            rows, rel = step(c, qi, rows, rel, v)
        return rows, rel

    return after


# -- the groups --------------------------------------------------------------------------------

Variant = tuple[str, Sequence[Any], Callable[[Any], After | None]]


def variants(names: Sequence[str]) -> list[Variant]:
    out: list[Variant] = [("today (v3: previous 3 + following 4 at 0.7)", [0], lambda _: None)]
    if "hop" in names:
        grid: list[Any] = list(itertools.product([3, 5], [0.05, 0.1, 0.2, 0.3], [3, 10, 30]))
        out.append(
            (
                "entity hop, add (seeds, w, cap)",
                grid,
                lambda g: entity_hop(g[0], g[1], g[2], "add"),
            )
        )
        grid = list(itertools.product([3, 5], [0.5, 0.7, 0.9], [3, 10, 30]))
        out.append(
            (
                "entity hop, floor (seeds, w, cap)",
                grid,
                lambda g: entity_hop(g[0], g[1], g[2], "max"),
            )
        )
    if "cleanhop" in names:
        grid = list(itertools.product([3, 5], [0.05, 0.1, 0.2, 0.3], [3, 10, 30]))
        out.append(
            (
                "entity hop, cleaner names, add (seeds, w, cap)",
                grid,
                lambda g: entity_hop(g[0], g[1], g[2], "add", clean=True),
            )
        )
        grid = list(itertools.product([0.05, 0.1, 0.2, 0.3], [10, 30, 100]))
        out.append(
            (
                "query's rare cleaner names, add (w, cap)",
                grid,
                lambda g: entity_hop(0, g[0], g[1], "add", "query", clean=True),
            )
        )
    if "shared" in names:
        grid = list(itertools.product([5, 10], [0.05, 0.1, 0.2, 0.3], [10, 30, 100]))
        out.append(
            (
                "entity hop through entities the query shares, add (seeds, w, cap)",
                grid,
                lambda g: entity_hop(g[0], g[1], g[2], "add", "shared"),
            )
        )
        grid = list(itertools.product([0.05, 0.1, 0.2, 0.3], [10, 30, 100]))
        out.append(
            (
                "query's rare names, add (w, cap)",
                grid,
                lambda g: entity_hop(0, g[0], g[1], "add", "query"),
            )
        )
    if "speaker" in names:
        out.append(
            ("speaker named in the question lifts theirs (w)", [0.02, 0.05, 0.1], speaker_lift)
        )
    if "asks" in names:
        out.append(("memories that only ask step down (w)", [0.1, 0.2, 0.3, 0.5], question_down))
        grid = list(itertools.product([0.1, 0.3, 0.5], [0.1, 0.3, 0.5], [5, 10]))
        out.append(
            (
                "... and lend to their reply (w, reply, seeds)",
                grid,
                lambda g: question_down(*g),
            )
        )
    if "alias" in names:
        out.append(
            (
                "speaker named (or an alias) lifts theirs (w)",
                [0.02, 0.05, 0.1, 0.2, 0.3, 0.5],
                speaker_lift_aliased,
            )
        )
        grid = list(itertools.product([0.05, 0.1, 0.2, 0.3], [0.1, 0.2, 0.3]))
        out.append(
            (
                "... and memories that only ask step down (w, down)",
                grid,
                lambda g: chain(speaker_lift_aliased(g[0]), question_down(g[1])),
            )
        )
    if "sessions" in names:
        out.append(("at most n of a session in the top ten (n)", [2, 3, 4], session_cap))
    if "prf" in names:
        grid = list(itertools.product([3, 5], [5, 10], [0.05, 0.1, 0.2, 0.3]))
        out.append(("feedback (seeds, words, w)", grid, lambda g: feedback(*g)))
    return out


def _ranker(lab: Lab, make: Callable[[Any], After | None]) -> Callable[[Any], Any]:
    return lambda g: lab.ranker(SHIPPED, after=make(g))


def final_check(lab: Lab, outcomes: list[SetOutcome], rankers: list[Callable[[Any], Any]]) -> str:
    lines = ["variant | setting | " + " | ".join(f"{s} R@5 / R@10" for s in lab.sets)]
    lines.append(" | ".join("---" for _ in range(2 + len(lab.sets))))
    tables: list[dict[str, Scores]] = []
    for o, ranker_for in zip(outcomes, rankers, strict=True):
        g = o.in_sample_params
        name = o.name
        rank = ranker_for(g)
        per_set: dict[str, list[Scores]] = {}
        for c in lab.convs.values():
            per_set.setdefault(c.dataset, []).append(lab.scores(c, rank))
        pooled_sets = {s: pooled(x) for s, x in per_set.items()}
        tables.append(pooled_sets)
        cells = [f"{x.r5.mean():.3f} / {x.r10.mean():.3f}" for x in pooled_sets.values()]
        lines.append(f"{name} | {g} | " + " | ".join(cells))
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    final = "--final" in argv
    names = [a for a in argv if not a.startswith("--")]
    sets = [a.removeprefix("--sets=") for a in argv if a.startswith("--sets=")]
    folders = tuple(Path(s) if "/" in s else DATA / s for s in sets[0].split(",")) if sets else ()
    lab = Lab(folders) if folders else Lab()
    iterate = {n: c for n, c in lab.convs.items() if n not in FINAL}
    held = {n: c for n, c in lab.convs.items() if n in FINAL}
    lab.convs = iterate
    chosen = variants(names)
    rankers = [_ranker(lab, make) for _, _, make in chosen]
    outcomes = [lab.run(name, grid, r) for (name, grid, _), r in zip(chosen, rankers, strict=True)]
    if "unnamed" in names:
        label = "query vector + alpha x the query without its names (alpha)"
        rankers.append(lambda a: lab.ranker(SHIPPED, queries=mixed_queries(lab, a)))
        outcomes.append(lab.run(label, [0.25, 0.5, 0.75, 1.0, 1.5], rankers[-1]))
    print(render(outcomes, outcomes[0]))
    for o in outcomes:
        print(f"{o.name}: chosen on all iterate-on conversations: {o.in_sample_params}")
    if final:
        lab.convs = held
        print("\nFINAL CHECK (setting chosen on the iterate-on conversations)")
        print(final_check(lab, outcomes, rankers))
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
