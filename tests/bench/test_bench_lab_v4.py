"""bench/lab/v4.py (issue 52's experiments): the entity hop lifts the holders of a seed's
rare name and only those, feedback words are the results' distinctive words and not the
query's, a speaker's other name is learnt from being called by it, a memory that only asks
steps down, a question loses its names and nothing else, and the multilingual check scores
a perfect and a blind encoder apart."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from bench.lab import multilingual
from bench.lab.replica import KeywordIndex
from bench.lab.v4 import (
    aliases,
    entity_hop,
    feedback_words,
    only_asks,
    question_down,
    without_names,
)

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
        session=np.ones(len(values), dtype=np.int64),  # one session
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


def test_a_speaker_is_known_by_the_name_the_other_calls_them_and_not_by_a_place() -> None:
    values = []
    for day in ("today", "again", "now"):
        values += [
            f"elise: How are you doing {day} Kate?",
            "Emi: Great, back from New York!",
            "elise: I love New York!",
            "Emi: New York is the best",
        ]
    conv = _fake_conv("alias-a", "What are Kate's hobbies?", values)
    assert aliases(conv) == {"kate": "Emi"}  # "York" is written by both: no one's name


def test_a_memory_that_only_asks_steps_down_and_one_that_tells_does_not() -> None:
    assert only_asks("Nebraas: What do you do for fun?", "Nebraas")
    assert only_asks("elise: Hey Kate! How was it?", "elise")  # a greeting states nothing
    assert not only_asks("Paola: I study law in Orlando. What about you?", "Paola")
    values = ["Emi: What do you cook?", "elise: I cook pasta every Sunday"]
    conv = _fake_conv("asks-a", "What does elise cook?", values)
    rows, rel = question_down(0.5)(conv, 0, np.array([0, 1]), np.array([0.9, 0.6]), None)
    assert rows.tolist() == [1, 0] and rel.tolist() == [0.6, 0.45]


def test_a_question_loses_its_names_and_keeps_its_topic() -> None:
    assert without_names("What foods does Nebraas like?") == "What foods does like?"
    assert without_names("What are Kate’s hobbies?") == "What are hobbies?"
    assert without_names("How do I deploy the site?") is None  # names nobody: unchanged
