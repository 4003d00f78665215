"""bench/lab: the replica of the search path agrees with the product's fusion, and
leave-one-out chooses on the other conversations only."""

from __future__ import annotations

import numpy as np

from bench.lab.loo import Scores, leave_one_out
from bench.lab.replica import KeywordIndex, fuse
from memory_mcp.search.ranking import fuse as product_fuse
from memory_mcp.search.ranking_config import RankingConfig


def test_the_replica_fuses_as_the_product_does() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        cosines = rng.uniform(-0.2, 0.8, 120)
        keyword = [(int(i), float(rng.uniform(0.5, 12))) for i in rng.choice(120, 30, False)]
        replica = fuse(keyword, cosines)
        top = np.argsort(-cosines)[:50]
        also = [i for i, _ in keyword if i not in set(top.tolist())]
        vector_hits = [(int(i), float(cosines[i])) for i in [*top, *also]]
        product = product_fuse(keyword, vector_hits, RankingConfig())
        for row, relevance in zip(replica.rows, replica.relevance, strict=True):
            assert abs(product[int(row)].relevance - relevance) < 1e-9


def test_the_context_column_is_matched_with_its_own_idf() -> None:
    values = ["pottery class today", "blue mugs for my sister", "other", "more", "things"]
    contexts = ["", "pottery class today", "", "", ""]
    index = KeywordIndex([f"k{i}" for i in range(5)], values, contexts)
    assert [row for row, _ in index.hits("pottery")] == [0]  # weight 0: own words only
    found = dict(index.hits("pottery", 0.7, split=True))
    assert set(found) == {0, 1}
    assert found[0] > found[1] > 0


def test_leave_one_out_chooses_on_the_other_conversations() -> None:
    # Conversation "c" alone prefers parameter 2; the others prefer 1.
    def score(conversation: str, param: int) -> Scores:
        good = (param == 2) == (conversation == "c")
        value = np.array([1.0 if good else 0.0])
        return Scores(np.array([1]), value, value)

    outcome = leave_one_out("x", ["a", "b", "c"], [1, 2], score)
    assert outcome.chosen == [1, 1, 1]
    assert outcome.loo == (2 / 3, 2 / 3)
    assert outcome.by_conversation["c"] == (0.0, 0.0)
