"""How one candidate's two arms are mixed into its relevance (search/ranking.py, `fuse`),
where an arm says nothing, or too little, about it.

- **No vector yet.** A memory the note indexer, a hook or the CLI wrote before any model
  embedded it is a keyword candidate with no cosine (the search embeds a few of them first:
  search/missing_vectors.py). Counted as a cosine of zero it would rank below memories
  that only look a little alike: a note about rolling a release back, the one keyword hit
  of "how do I undo a bad release", scored 0.133 under a memory about pull requests at a
  cosine of 0.15. Its meaning is unknown, not absent, so it is ranked on the arm it has:
  its keyword score is its relevance, as if its meaning matched as well as its words.
- **A weak cosine.** Min-max scaling makes a search's best cosine 1 even at 0.07, which
  MiniLM gives unrelated text; weighed 0.7 it then outranks a real keyword hit. Where some
  candidate holds a query word, a candidate's scaled cosine is capped by what its cosine
  says on its own: nothing at 0.05 or below, rising linearly to no cap at 0.35 (a clear
  paraphrase; the constants of ranking.py's meaning-only searches). The cap rises with the
  cosine, so the vector arm's own order is kept; it binds only where every cosine is low.
  A search with no keyword candidate is scaled by its best cosine instead
  (ranking.search_confidence), and left as it is here."""

from __future__ import annotations

from dataclasses import dataclass

# MiniLM's cosine for unrelated text (about 0-0.1) and for a clear paraphrase (0.35 up).
WEAK_COSINE = 0.05
CLEAR_COSINE = 0.35


@dataclass(frozen=True)
class ArmWeights:
    """A search's weights of the two arms; an arm that did not run weighs 0."""

    vector: float
    keyword: float

    def relevance(self, keyword: float | None, vector: float | None) -> float:
        """The weighted mean of the arms that have a score for this candidate: a keyword
        candidate with no vector (None while the vector arm ran) on its words alone."""
        if vector is None and keyword is not None and self.vector > 0.0:
            return keyword if self.keyword > 0.0 else 0.0
        total = self.vector + self.keyword or 1.0
        return (self.vector * (vector or 0.0) + self.keyword * (keyword or 0.0)) / total


def cosine_ceiling(cosine: float) -> float:
    """The most a scaled cosine may count for beside keyword hits, in [0, 1]."""
    share = (cosine - WEAK_COSINE) / (CLEAR_COSINE - WEAK_COSINE)
    return min(max(share, 0.0), 1.0)


def capped_vector(scaled: float, cosine: float, keyword_arm_found: bool) -> float:
    """A candidate's min-max scaled cosine, capped by its cosine where some candidate of
    the search holds a query word."""
    return min(scaled, cosine_ceiling(cosine)) if keyword_arm_found else scaled


__all__ = ["CLEAR_COSINE", "WEAK_COSINE", "ArmWeights", "capped_vector", "cosine_ceiling"]
