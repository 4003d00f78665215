"""The scanner under the secrets guard: gitleaks' rules, loaded and run faithfully.

The corpora (real-shaped secrets, harmless text, site-packages code) and the numbers per
field are in test_secrets_corpus.py; this file checks the machinery: the Go-to-Python
regex translation, that every rule loads, and that the shortcuts (keyword positions,
windows) find exactly what a plain search with every rule finds."""

from __future__ import annotations

import base64
import hashlib
import random
import re
from importlib import resources

import pytest

from bench.input_checks import value_shapes
from bench.secrets_corpus import HARMLESS, code_mentions, in_context, secret_samples
from memory_mcp.checks.secret_scan import find_secrets, find_secrets_plainly
from memory_mcp.checks.secret_scan.go_regex import to_python
from memory_mcp.checks.secret_scan.rules import rule_set

# gitleaks 8.30.1's default configuration (config/gitleaks.toml, embedded in its binary).
GITLEAKS_TOML_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"


def test_the_gitleaks_rules_are_its_own_file_unchanged() -> None:
    data = resources.files("memory_mcp.checks.secret_scan").joinpath("gitleaks.toml").read_bytes()
    assert hashlib.sha256(data).hexdigest() == GITLEAKS_TOML_SHA256


def test_every_rule_loads() -> None:
    rules = rule_set()
    ids = {rule.id for rule in rules.rules}
    # 222 in gitleaks.toml; 5 run only on some files (`path`) and are left out; 5 local.
    assert len(rules.rules) == 222 - 5 + 5
    assert {"generic-api-key", "github-pat", "aws-access-token", "stripe-webhook-secret"} <= ids
    assert "hashicorp-tf-password" not in ids  # gitleaks runs it on *.tf files only


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"ab(?i)cd", r"ab(?i:cd)"),
        (r"(x(?i)y)z", r"(x(?i:y))z"),
        (r"a|b(?i)c|d", r"a|b(?i:c|d)"),
        (r"[[:alnum:]]{4}", r"[a-zA-Z0-9]{4}"),
        (r"end\z", r"end\Z"),
        (r"[\w[]+", r"[\w\[]+"),
        (r"[^\\]]x", r"[^\\]]x"),
    ],
)
def test_go_regex_syntax_in_python(go: str, python: str) -> None:
    assert to_python(go) == python
    re.compile(python)


def test_a_flag_group_reaches_to_the_end_of_its_group_as_in_go() -> None:
    pattern = re.compile(to_python(r"(?:key(?i)ABC)x"))
    assert pattern.fullmatch("keyabcx")
    assert not pattern.fullmatch("KEYabcx")
    assert not pattern.fullmatch("keyabcX")


def _texts() -> list[str]:
    samples = secret_samples()
    texts = [in_context(s, c) for s in samples for c in s.contexts()]
    texts += HARMLESS
    texts += [text for _, text in code_mentions(max_per_package=150)]
    texts += list(value_shapes().values())
    texts.append("\n\n".join(texts[:400]))  # many secrets in one long text
    return texts


def test_the_shortcuts_find_what_a_plain_search_finds() -> None:
    """find_secrets looks only where a rule's keywords are (matching at them, or in
    windows around them); find_secrets_plainly runs every rule whose keyword occurs over
    the whole text, as gitleaks does. Same findings on every corpus text."""
    texts = _texts()
    differ = [t[:80] for t in texts if find_secrets(t) != find_secrets_plainly(t)]
    assert differ == []
    assert sum(bool(find_secrets(t)) for t in texts) > 400  # the comparison saw findings


def test_a_long_secret_is_found_whole_far_from_its_keyword() -> None:
    """A PGP private key block of ~6 KB and a 3 KB JWT inside 64 KB of prose: the
    shortcuts must not cut them at any window."""
    rng = random.Random(5)
    body = base64.b64encode(rng.randbytes(4500)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    block = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{lines}\n-----END PGP PRIVATE KEY BLOCK-----"
    claims = base64.urlsafe_b64encode(rng.randbytes(2200)).decode().rstrip("=")
    jwt = (
        "eyJhbGciOiJIUzI1NiJ9.eyJ"
        + claims.replace("-", "a").replace("_", "b")
        + ".c2lnbmF0dXJlc2ln"
    )
    prose = "They keep the key in the vault; the monkey is not a key. " * 500
    text = f"{prose}\n{block}\n{prose}\nsession={jwt}\n{prose}"
    found = find_secrets(text)
    assert found == find_secrets_plainly(text)
    assert [text[f.start : f.end] for f in found] == [block, jwt]


def test_a_finding_is_the_secret_only() -> None:
    text = 'client = Client(token="ghp_' + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5" + '")'
    (finding,) = find_secrets(text)
    assert finding.kind == "github-pat"
    assert text[finding.start : finding.end].startswith("ghp_")
    assert text[finding.end] == '"'


def test_overlapping_findings_are_one_named_after_the_provider() -> None:
    key = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dcQ1"
    (finding,) = find_secrets(f"STRIPE_SECRET_KEY={key}")  # also the generic rule's
    assert finding.kind == "stripe-access-token"


def test_text_whose_lower_case_moves_positions_is_still_scanned() -> None:
    key = "ghp_" + "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"
    text = "İstanbul " * 3 + key  # "İ".lower() is two characters
    (finding,) = find_secrets(text)
    assert text[finding.start : finding.end] == key
