"""Where multi-hop questions lose their evidence: per question of a category, each evidence
turn's rank in today's search (bench/lab/v3.py's replica), its text and its speaker, so
that what joins the pieces (a person, a thing, a time) can be read, not guessed.

`python -m bench.lab.misses [--sets=realtalk-dev] [--category=multi-hop]`: the iterate-on
conversations only (the final check stays unread: bench/lab/v4.py's FINAL)."""

from __future__ import annotations

import sys

from bench.lab.v3 import DATA, Lab
from bench.lab.v4 import FINAL, SHIPPED


def main(argv: list[str]) -> None:
    sets = next(
        (a.removeprefix("--sets=") for a in argv if a.startswith("--sets=")), "realtalk-dev"
    )
    category = next(
        (a.removeprefix("--category=") for a in argv if a.startswith("--category=")), "multi-hop"
    )
    lab = Lab(tuple(DATA / s for s in sets.split(",")))
    rank = lab.ranker(SHIPPED)
    for name, c in lab.convs.items():
        if name in FINAL:
            continue
        for qi, evidence in enumerate(c.p.evidence):
            if str(c.p.categories[qi]) != category:
                continue
            order = rank(c, qi).tolist()
            where = {r: order.index(r) + 1 if r in order else 10**9 for r in evidence}
            got = sum(1 for r in evidence if where[r] <= 10)
            print(f"\n## {name} q{qi}: {c.p.questions[qi]}  [{got}/{len(evidence)} in top 10]")
            for r in evidence:
                if r < 0:
                    print("   (no turn)")
                    continue
                t = c.p.conv.turns[r]
                mark = "OK " if where[r] <= 10 else "-- "
                shown = where[r] if where[r] < 10**9 else "-"
                print(f"   {mark}{shown!s:>5} s{t.session} {t.key} {c.p.values[r][:160]!r}")
            top = [r for r in order[:5] if r not in evidence]
            for r in top[:3]:
                print(
                    f"   top {order.index(r) + 1}: {c.p.conv.turns[r].key} {c.p.values[r][:120]!r}"
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
