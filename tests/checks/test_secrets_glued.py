"""Secrets glued to the word before them are secrets: `relation: "depends_on_<key>"` and
`uses<key>` were stored raw (the rules want a word boundary before a key's prefix). Over a
real `memory-mcp serve` (stdio), in a value, a tag-like relation and a key; and the rule
itself on each kind, beside words that only look glued."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_mcp.checks.secret_scan import find_secrets
from tests.conftest import call, call_error
from tests.mcp.test_stdio_e2e import spawned

pytestmark = pytest.mark.anyio

STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
ANTHROPIC = "sk-ant-api03-" + "Xq7" * 31 + "AA"
AWS = "AKIA" + "Q3ZRT7WX2YV6NB4K"
POSTGRES_PASSWORD = "S3cr3t-Passw0rd-9xQ"
POSTGRES = f"postgres://app:{POSTGRES_PASSWORD}@db.internal:5432/app"
GLUED = {
    "stripe": f"depends_on_{STRIPE}",
    "anthropic": f"uses{ANTHROPIC}",
    "aws": f"uses{AWS}",
    "postgres": f"db_{POSTGRES}",
}


SECRET = {"stripe": STRIPE, "anthropic": ANTHROPIC, "aws": AWS, "postgres": POSTGRES_PASSWORD}


@pytest.mark.parametrize("kind", sorted(GLUED))
def test_a_secret_glued_to_a_word_is_found(kind: str) -> None:
    text = GLUED[kind]
    covered = "".join(text[f.start : f.end] for f in find_secrets(text))
    assert SECRET[kind] in covered, (text, covered)


def test_words_that_only_look_glued_are_not_secrets() -> None:
    for text in ("risk_live_updates flag", "Malakia beach", "the https://example.com/docs page",
                 "flask_session_postgres://localhost/db"):  # fmt: skip
        assert find_secrets(text) == [], text


async def test_glued_secrets_are_not_stored_raw_over_stdio(tmp_path: Path) -> None:
    async with spawned(tmp_path) as client:
        for kind in sorted(GLUED):
            got = await call(client, "memory-store", key=f"k-{kind}", value=f"it {GLUED[kind]}")
            assert got.get("redacted"), kind
            value = (await call(client, "memory-get", id=got["id"]))["value"]
            assert SECRET[kind] not in value and "[REDACTED:" in value, value
        stored = await call(client, "memory-store", key="billing", value="the job")
        other = await call(client, "memory-store", key="other", value="the billing service")
        error = await call_error(
            client, "memory-link", id=stored["id"], to=other["id"], relation=GLUED["stripe"]
        )
        assert "relation" in error and STRIPE not in error
