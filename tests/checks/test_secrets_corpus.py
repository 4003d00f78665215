"""The secrets guard measured like a scanner, through the service's own rules.

(a) Real-shaped secrets (bench/secrets_corpus.py: every kind the README lists, Stripe
    webhook secrets included, fakes from a seeded generator) placed in every field a memory
    has: the key, the value, a tag, a metadata key, a metadata value, a learning. Each must
    be refused (names) or redacted (data): caught = total in every field.
(b) Text that merely mentions secrets (placeholders, environment look-ups, comparisons,
    docs examples, form fields; and real code around each mention of a token, password,
    secret or key in the installed packages) must be stored as it is: 0 false positives.

Both print their numbers (run with `-s`, or see the assertion message)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bench.secrets_corpus import HARMLESS, Sample, code_mentions, in_context, secret_samples
from memory_mcp.checks.validation import MAX_KEY_CHARS, MAX_TAG_CHARS
from memory_mcp.errors import InvalidInputError
from memory_mcp.models import Caller, LearningCategory, NewMemory, Role, StoreRequest
from memory_mcp.rules.service import MemoryService
from memory_mcp.settings import Settings
from tests.conftest import opened

pytestmark = pytest.mark.anyio

LEAD = Caller("lead", Role.LEAD, "s1")
FIELDS = ("key", "value", "tags", "metadata key", "metadata value", "learning")


def _name_text(sample: Sample) -> str:
    """A secret as it would be written into a name: the written form (a URL, "Bearer x"),
    or `name=secret` for one known only by its name."""
    return f"{sample.name}={sample.secret}" if sample.generic else sample.text


def _attempts(sample: Sample) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(field, text holding the secret, StoreRequest arguments) for every field the text
    fits in: names are one line, a key at most 256 characters, a tag 64."""
    name = _name_text(sample)
    one_line = "\n" not in name
    if one_line and len(name) <= MAX_KEY_CHARS:
        yield "key", name, {"key": name, "value": "v"}
    if one_line and len(name) <= MAX_TAG_CHARS:
        yield "tags", name, {"key": "k", "value": "v", "tags": ["deploy", name]}
    if one_line:
        yield "metadata key", name, {"key": "k", "value": "v", "metadata": {name: "x"}}
    for context in sample.contexts():
        text = in_context(sample, context)
        yield "value", text, {"key": "k", "value": text}
        metadata = {"service": {"config": text, "retries": 3}}
        yield "metadata value", text, {"key": "k", "value": "v", "metadata": metadata}
        yield "learning", text, {}


def _stored_text(new: NewMemory) -> str:
    # Lower-cased: a tag is stored lower-cased, and `akia...` is the AWS key all the same.
    return json.dumps([new.key, new.value, new.tags, new.metadata]).lower()


async def _verdict(
    service: MemoryService, field: str, sample: Sample, text: str, arguments: dict[str, Any]
) -> str:
    """ "refused" (the error names the field and never the secret), "redacted" (stored
    without the secret's characters, the redaction reported in that field) or "stored"."""
    where = field.split()[0]  # "metadata key" -> the argument "metadata"
    try:
        if field == "learning":
            outcome = await service.inject_learning(LEAD, text, LearningCategory.BEST_PRACTICE)
            stored = json.dumps([outcome.record.value, outcome.record.metadata]).lower()
            if sample.secret.lower() in stored:
                return "stored"
            return "redacted" if [r.field for r in outcome.redactions] == ["learning"] else "?"
        new = service.prepare_memory(LEAD, StoreRequest(**arguments))
    except InvalidInputError as exc:
        named = exc.field == where and "secret" in str(exc)
        return "refused" if named and sample.secret not in str(exc) else f"error: {exc}"
    if sample.secret.lower() in _stored_text(new):
        return "stored"
    reported = [r for r in new.redactions if r.field.startswith(where)]
    return "redacted" if reported else "?"


def _table(title: str, counts: dict[str, tuple[int, int]]) -> str:
    rows = [f"{title}"] + [f"  {f:<15} {a:>4}/{b:<4}" for f, (a, b) in counts.items()]
    return "\n".join(rows)


async def test_real_shaped_secrets_are_refused_or_redacted_in_every_field(
    make_settings: Callable[..., Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts: dict[str, Counter[str]] = {f: Counter() for f in FIELDS}
    missed: list[str] = []
    async with opened(make_settings(agent_id="lead", role="lead")) as app:
        for sample in secret_samples():
            for field, text, arguments in _attempts(sample):
                verdict = await _verdict(app.service, field, sample, text, arguments)
                verdicts[field][verdict] += 1
                if verdict not in ("refused", "redacted"):
                    missed.append(f"{field}: {sample.kind}: {verdict}: {text[:70]!r}")
    caught = {f: v["refused"] + v["redacted"] for f, v in verdicts.items()}
    total = {f: v.total() for f, v in verdicts.items()}
    table = _table(
        "secrets caught (refused or redacted)/total", {f: (caught[f], total[f]) for f in FIELDS}
    )
    with capsys.disabled():
        print("\n" + table)
    assert caught == total, table + "\nmissed:\n" + "\n".join(missed)
    # Names are refused; data keeps the memory, without the secret.
    assert {f: set(verdicts[f]) for f in FIELDS} == {
        f: {"refused" if f in ("key", "tags", "metadata key") else "redacted"} for f in FIELDS
    }
    kinds = {s.kind for s in secret_samples()}
    assert "stripe webhook secret" in kinds and len(kinds) >= 30
    assert all(total[f] >= 40 for f in FIELDS), table  # every field had its share


def _false_positives(service: MemoryService, text: str) -> list[str]:
    """The fields in which harmless `text` was refused or not stored as it was sent."""
    wrong = []
    fits_a_name = "\n" not in text and text.strip() == text
    places: list[tuple[str, dict[str, Any]]] = [
        ("value", {"key": "k", "value": text}),
        ("metadata value", {"key": "k", "value": "v", "metadata": {"note": text}}),
    ]
    if fits_a_name and len(text) <= MAX_KEY_CHARS:
        places.append(("key", {"key": text, "value": "v"}))
        places.append(("metadata key", {"key": "k", "value": "v", "metadata": {text: 1}}))
    if fits_a_name and len(text) <= MAX_TAG_CHARS:
        places.append(("tags", {"key": "k", "value": "v", "tags": [text]}))
    for field, arguments in places:
        try:
            new = service.prepare_memory(LEAD, StoreRequest(**arguments))
        except InvalidInputError as exc:  # a long line of code is too long for a tag...
            if "secret" in str(exc):  # ...which is not this guard's business
                wrong.append(f"{field}: {exc}")
            continue
        sent = StoreRequest(**arguments)
        stored = (new.key, new.value, new.tags, new.metadata)
        given = ([t.lower() for t in sent.tags or []], sent.metadata or {})
        if stored != (sent.key.strip(), sent.value, *given):
            wrong.append(f"{field}: stored as {stored}")
    return wrong


async def test_text_that_mentions_secrets_is_stored_as_it_is(
    make_settings: Callable[..., Settings], capsys: pytest.CaptureFixture[str]
) -> None:
    chunks = list(code_mentions())
    async with opened(make_settings(agent_id="lead", role="lead")) as app:
        harmless = {text[:70]: _false_positives(app.service, text) for text in HARMLESS}
        code = {where: _false_positives(app.service, text) for where, text in chunks}
        learning = await app.service.inject_learning(
            LEAD, "\n".join(HARMLESS), LearningCategory.BEST_PRACTICE
        )
    flagged = {k: v for k, v in (harmless | code).items() if v}
    packages = sorted({where.split("/")[0] for where, _ in chunks})
    report = (
        f"false positives: {sum(map(bool, harmless.values()))}/{len(harmless)} hand-written "
        f"texts, {sum(map(bool, code.values()))}/{len(code)} code chunks from "
        f"{len(packages)} installed packages, {len(learning.redactions)} in a learning"
    )
    with capsys.disabled():
        print("\n" + report)
    assert flagged == {}, report + "\n" + "\n".join(f"{k}: {v}" for k, v in flagged.items())
    assert learning.redactions == []
    assert len(code) > 3000 and len(packages) >= 10  # a large slice, from many packages
