"""`bench links DIR`: what entity links and memory-search's `expand` do to recall on
LoCoMo, above all to multi-hop questions (category 1).

Per conversation, as `bench locomo` does: one store, every turn a memory (key its dia_id,
value "speaker: text") through `MemoryService.store_memory`. Then:

1. Entities are read from each turn (bench/entities.py: `rules` or `spacy`) and two turns
   naming the same entity are tied by a `mentions` link (`service.links.change_links`,
   the path memory-link takes), for entities named by at most `max_df` turns (a name in
   half the conversation ties nothing down). This is the two-link neighbourhood of an
   entity node (turn -> entity <- turn) without the entity nodes themselves in the
   results: an upper bound for that shape.
2. Every question is searched without expansion and with it, for each setting of the
   grid (seeds, decay; fan-out 10), for each `max_df` (links added in increasing order).
3. Leave one conversation out: the setting (or none) with the best overall R@5 on four
   conversations is measured on the fifth; pooled over the five folds.

Links are made by the service, searches go through `MemoryService.search` with
`expand=True` and the grid's `ExpandConfig`: the product's code path."""

from __future__ import annotations

import itertools
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.entities import Extractor
from bench.locomo import CUTOFFS, SEARCH_LIMIT, Conversation, recall_at
from bench.settings import BenchSettings
from bench.stats import mean, table
from memory_mcp.app.root import open_app
from memory_mcp.models import SearchRequest, StoreRequest
from memory_mcp.search.ranking_config import ExpandConfig
from memory_mcp.semantic.embeddings import Embedder

SEEDS = (1, 3, 5)
DECAYS = (0.3, 0.5, 0.8)
MAX_DFS = (3, 10, 30)
FAN_OUT = 10
BASELINE = "none"


@dataclass(frozen=True)
class Setting:
    max_df: int
    seeds: int
    decay: float

    @property
    def name(self) -> str:
        return f"df<={self.max_df} seeds={self.seeds} decay={self.decay}"


@dataclass
class Answer:
    conversation: str
    category: int | str
    recall: dict[int, float]


@dataclass
class LinksReport:
    extractor: str
    answers: dict[str, list[Answer]] = field(default_factory=lambda: defaultdict(list))
    links: dict[str, dict[int, int]] = field(default_factory=dict)  # conv -> max_df -> links
    entities: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def conversations(self) -> list[str]:
        return sorted({a.conversation for a in self.answers[BASELINE]})

    def recall(self, setting: str, k: int, keep: Callable[[Answer], bool]) -> float:
        return mean([a.recall[k] for a in self.answers[setting] if keep(a)])

    def leave_one_out(self) -> dict[str, Any]:
        """Per held-out conversation: the setting with the best R@5 on the others."""
        chosen: dict[str, str] = {}
        held: list[Answer] = []
        for conversation in self.conversations():
            others = lambda a, c=conversation: a.conversation != c  # noqa: E731
            best = max(self.answers, key=lambda s: (self.recall(s, 5, others), s == BASELINE))
            chosen[conversation] = best
            held += [a for a in self.answers[best] if a.conversation == conversation]
        return {"chosen": chosen, "answers": held}

    def render(self) -> str:
        def row(name: str, answers: list[Answer]) -> list[object]:
            cat1 = [a for a in answers if a.category == 1]
            return [
                name,
                round(mean([a.recall[5] for a in answers]), 3),
                round(mean([a.recall[10] for a in answers]), 3),
                round(mean([a.recall[5] for a in cat1]), 3),
                round(mean([a.recall[10] for a in cat1]), 3),
            ]

        best = sorted(self.answers, key=lambda s: -self.recall(s, 5, lambda a: True))
        shown = [BASELINE, *[s for s in best if s != BASELINE][:8]]
        rows = [row(name, self.answers[name]) for name in shown]
        loo = self.leave_one_out()
        rows.append(row("leave one conversation out", loo["answers"]))
        lines = [
            table(["setting (in sample)", "R@5", "R@10", "cat1 R@5", "cat1 R@10"], rows),
            "",
            f"entities ({self.extractor}) per conversation: {self.entities}",
            f"links per conversation and max_df: {self.links}",
            "chosen per held-out conversation: "
            + ", ".join(f"{c}: {s}" for c, s in loo["chosen"].items()),
            f"{len(self.answers[BASELINE])} questions, {len(self.answers) - 1} settings, "
            f"{self.seconds:.0f} s",
        ]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        loo = self.leave_one_out()
        return {
            "benchmark": "links",
            "extractor": self.extractor,
            "settings": {
                name: {
                    f"recall@{k}": round(self.recall(name, k, lambda a: True), 4) for k in CUTOFFS
                }
                | {
                    f"cat1_recall@{k}": round(self.recall(name, k, lambda a: a.category == 1), 4)
                    for k in CUTOFFS
                }
                for name in self.answers
            },
            "leave_one_out": {
                "chosen": loo["chosen"],
                "recall@5": round(mean([a.recall[5] for a in loo["answers"]]), 4),
                "recall@10": round(mean([a.recall[10] for a in loo["answers"]]), 4),
            },
            "links": self.links,
            "entities": self.entities,
        }


def mention_pairs(entities: list[set[str]], max_df: int) -> tuple[set[tuple[int, int]], int]:
    """(a, b) index pairs, a > b (the later turn links to the earlier one), of turns that
    name an entity named by 2..max_df turns; and how many such entities there are."""
    holders: dict[str, list[int]] = defaultdict(list)
    for index, names in enumerate(entities):
        for name in names:
            holders[name].append(index)
    pairs: set[tuple[int, int]] = set()
    used = 0
    for turns in holders.values():
        if 2 <= len(turns) <= max_df:
            used += 1
            pairs.update((b, a) for a, b in itertools.combinations(sorted(turns), 2))
    return pairs, used


async def run_links(
    conversations: list[Conversation],
    embedder: Embedder,
    extract: Extractor,
    extractor_name: str,
    say: Callable[[str], None],
) -> LinksReport:
    await embedder.wait_ready()
    report = LinksReport(extractor_name)
    started = time.perf_counter()
    for conversation in conversations:
        with tempfile.TemporaryDirectory(prefix="memory-mcp-links-") as tmp:
            await _one_conversation(conversation, embedder, extract, Path(tmp), report, say)
    report.seconds = time.perf_counter() - started
    return report


async def _one_conversation(
    conversation: Conversation,
    embedder: Embedder,
    extract: Extractor,
    workdir: Path,
    report: LinksReport,
    say: Callable[[str], None],
) -> None:
    settings = BenchSettings(db=str(workdir / "memory.db"), data_dir=workdir)
    async with open_app(settings, embedder, background=False) as app:
        service, caller = app.service, app.caller
        ids: list[int] = []
        for turn in conversation.turns:
            stored = await service.store_memory(caller, StoreRequest(turn.key, turn.value))
            ids.append(stored.record.id)
        await service.vectors.embed_pending()
        names = [extract(turn.value) for turn in conversation.turns]
        report.entities[conversation.name] = len(set().union(*names))

        async def ask(setting: str, expand: ExpandConfig | None) -> None:
            if expand is not None:
                service.policy = replace(
                    service.policy, ranking=replace(service.policy.ranking, expand=expand)
                )
            for question in conversation.questions:
                result = await service.search(
                    caller,
                    SearchRequest(question.text, limit=SEARCH_LIMIT, expand=expand is not None),
                )
                keys = [hit.record.key for hit in result.hits]
                recall = {k: recall_at(question.evidence, keys, k) for k in CUTOFFS}
                report.answers[setting].append(Answer(conversation.name, question.category, recall))

        await ask(BASELINE, None)
        linked: set[tuple[int, int]] = set()
        report.links[conversation.name] = {}
        for max_df in MAX_DFS:
            pairs, _ = mention_pairs(names, max_df)
            by_source: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
            for later, earlier in sorted(pairs - linked):
                by_source[ids[later]].append((ids[earlier], "mentions"))
            for source, adds in by_source.items():
                await service.links.change_links(caller, source, adds)
            linked |= pairs
            report.links[conversation.name][max_df] = len(linked)
            for seeds, decay in itertools.product(SEEDS, DECAYS):
                expand = ExpandConfig(seeds=seeds, decay=decay, fan_out=FAN_OUT)
                await ask(Setting(max_df, seeds, decay).name, expand)
        say(
            f"conversation {conversation.name}: {len(ids)} turns, "
            f"{report.links[conversation.name]} links"
        )
