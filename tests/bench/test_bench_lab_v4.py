"""bench/lab/v4.py (issue 52's experiments): the entity hop lifts the holders of a seed's
rare name and only those, feedback words are the results' distinctive words and not the
query's, and the multilingual check scores a perfect and a blind encoder apart."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from bench.lab import multilingual
from bench.lab.replica import KeywordIndex
from bench.lab.v4 import entity_hop, feedback_words

VALUES = [
    "Kate: We flew to Miami for the weekend",
    "Emily: How was the beach in Miami?",
    "Kate: Lovely, and I met Harvey at the hotel",
    "Emily: Who is Harvey?",
    "Kate: an old friend from school",
    "Emily: nice",
]


def _fake_conv(name: str, question: str, values: list[str] = VALUES) -> Any:
    """A stand-in for bench.lab.v3.Conv holding only what the hooks read (a fake: the
    hooks, not the replica, are under test)."""
    turns = [SimpleNamespace(text=v.split(": ", 1)[1], key=f"k{i}") for i, v in enumerate(values)]
    prepared = SimpleNamespace(
        conv=SimpleNamespace(turns=turns),
        values=values,
        questions=[question],
        n=len(values),
        keyword=KeywordIndex([t.key for t in turns], values),
    )
    return SimpleNamespace(name=name, p=prepared, speakers=[v.split(":")[0] for v in values])


def test_the_hop_lifts_only_holders_of_a_seed_rare_name_below_the_seed() -> None:
    conv = _fake_conv("hop-a", "Who did Kate meet at the hotel?")
    rows = np.array([2, 0, 5])
    rel = np.array([0.9, 0.5, 0.4])
    out_rows, out_rel = entity_hop(seeds=1, weight=0.3, cap=5, mode="add")(conv, 0, rows, rel, None)
    lifted = dict(zip(out_rows.tolist(), out_rel.tolist(), strict=True))
    assert out_rows[0] == 2  # the seed stays first
    assert lifted[3] == 0.3 * 0.9  # "Who is Harvey?" came in through Harvey, below the seed
    assert lifted[0] == 0.5 and lifted[5] == 0.4  # no shared name: unchanged
    assert 1 not in lifted and 4 not in lifted  # speakers ("Kate") are no entity


def test_feedback_words_are_the_results_distinctive_words_not_the_query_s() -> None:
    filler = [f"Kate: talk about the weekend number {i}" for i in range(30)]
    conv = _fake_conv("prf-a", "Where did Kate go for the weekend?", VALUES + filler)
    words = feedback_words(conv, 0, [0, 1], 3)
    assert words[0] == "miami"  # in both results, in no other memory
    assert "weekend" not in words  # the query's own word
    assert "kate" not in words  # in every memory: not distinctive


def test_the_multilingual_check_tells_a_perfect_encoder_from_a_blind_one() -> None:
    facts = {f: i for lang in multilingual.FACTS for i, f in enumerate(multilingual.FACTS[lang])}
    questions = {
        q: i for lang in multilingual.QUESTIONS for i, q in enumerate(multilingual.QUESTIONS[lang])
    }

    def perfect(texts: list[str]) -> np.ndarray:  # knows which fact each text is about
        return np.eye(10)[[facts.get(t, questions.get(t, 0)) for t in texts]] + 1e-3

    def blind(texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 10))

    assert set(multilingual.check(perfect).values()) == {1.0}
    assert multilingual.check(blind)["de->en R@1"] == 0.1
