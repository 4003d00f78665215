"""Memory content is untrusted text, and memories are shared and exported: secrets are
refused in every text field (key, value, tags, metadata keys and values).

A pattern list of our own rather than `detect-secrets`: that tool scans line by line with
entropy plugins that flag hex commit ids, UUIDs, sha256 sums and base64 images (all
ordinary in memories), and took 0.3-0.8 s on a 64 KB value; these patterns take about a
millisecond. Each pattern keys on a provider's fixed prefix or a structural marker, so
ordinary high-entropy text (hashes, ids, data URIs) passes. `tests/checks/test_secrets.py` holds
the corpus of real-shaped fakes that must be refused and ordinary text that must pass.

Text that reads like instructions to a model is flagged, not refused: see checks/injection.py."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from memory_mcp.checks.text_safety import strip_terminal_controls
from memory_mcp.errors import InvalidInputError

_GITLAB_KINDS = ("pat", "dt", "ptt", "rt", "soat", "ft", "imt", "oas", "cbt", "agent")

# (what it is, literal hints, pattern). A pattern runs only when one of its hints occurs in
# the text (a substring test costs microseconds on 64 KB; a regex pass ~0.1 ms), and each
# starts with a literal (a leading \b would make `re` try every position, 15x slower; the
# word boundary before a match is checked in Python instead). The first match names it.
_SECRETS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    (
        "a private key",
        ("PRIVATE KEY",),
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
    (
        "an AWS access key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ),
    (
        "a GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    ),
    ("a GitHub token", ("github_pat_",), re.compile(r"github_pat_[A-Za-z0-9_]{40,}")),
    (
        "a GitLab token",
        ("gl",),
        re.compile(rf"gl(?:{'|'.join(_GITLAB_KINDS)})-[A-Za-z0-9_\-]{{20,}}"),
    ),
    ("a Slack token", ("xox",), re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}")),
    (
        "a Slack webhook URL",
        ("hooks.slack.com",),
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}"),
    ),
    (
        "a Stripe secret key",
        ("k_live_", "k_test_"),
        re.compile(r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ),
    ("an Anthropic API key", ("sk-ant-",), re.compile(r"sk-ant-[A-Za-z0-9_\-]{32,}")),
    (
        "an OpenAI-style API key",
        ("sk-",),
        re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}"),
    ),
    ("a Google API key", ("AIza",), re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    ("a Hugging Face token", ("hf_",), re.compile(r"hf_[A-Za-z]{34,}")),
    ("an npm token", ("npm_",), re.compile(r"npm_[A-Za-z0-9]{36}\b")),
    ("a PyPI token", ("pypi-AgE",), re.compile(r"pypi-AgE[A-Za-z0-9_\-]{50,}")),
    (
        "a SendGrid key",
        ("SG.",),
        re.compile(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ),
    ("an Azure storage key", ("AccountKey=",), re.compile(r"AccountKey=[A-Za-z0-9+/]{86}==")),
    # header.payload.signature, where header and payload are base64url JSON ('{"' = eyJ).
    (
        "a JWT",
        ("eyJ",),
        re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"),
    ),
]

# scheme://user:password@host. The password group is checked against placeholders.
_URL_PASSWORD = re.compile(r"://[^\s/:@\"'<>]{0,256}:([^\s/@\"'<>]{1,256})@")

# password = value, secret: "value", api_key=value, aws_secret_access_key=... Matched on
# lower-cased text (no (?i): it is several times slower); the value is read from the
# original text at the same position.
_ASSIGNMENT = re.compile(
    r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|credentials?)[\"']?\s*[:=]{1,2}\s*[\"']?([^\s\"'`,;)}\]]{8,200})"
)
_BEARER = re.compile(r"bearer\s+([A-Za-z0-9_\-.=+/~]{20,})")
_ASSIGNMENT_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "bearer")
_ANY_CASE = {pattern: re.compile(pattern.pattern, re.I) for pattern in (_ASSIGNMENT, _BEARER)}
_PLACEHOLDER = re.compile(
    r"^(?:[*xX.•_\-]+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{?[^}]*\}\}?|%\(?\w*\)?s"
    r"|(?:your|my|the|some|example|dummy|fake|sample|test|changeme|placeholder)[\w\-]*)$",
    re.I,
)
# Values that are code or references, not literals: calls, attribute paths, lookups.
_CODE_LIKE = re.compile(r"[()\[\]{}]|^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _shannon_bits(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_like_a_literal_secret(candidate: str) -> bool:
    """A generic assignment's value is a secret when it is a literal with some entropy:
    not a placeholder, not code, not a plain lower-case word, at least two kinds of
    characters."""
    if _PLACEHOLDER.match(candidate) or _CODE_LIKE.search(candidate):
        return False
    classes = sum(
        bool(re.search(p, candidate)) for p in ("[a-z]", "[A-Z]", "[0-9]", r"[^A-Za-z0-9]")
    )
    return classes >= 2 and _shannon_bits(candidate) >= 2.5


def _starts_a_word(text: str, start: int) -> bool:
    return start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")


def secret_kind(text: str) -> str | None:
    """What kind of secret the text contains ("a JWT"), or None. Never the secret itself."""
    for label, hints, pattern in _SECRETS:
        if any(hint in text for hint in hints) and any(
            _starts_a_word(text, m.start()) for m in pattern.finditer(text)
        ):
            return label
    if "://" in text:
        for match in _URL_PASSWORD.finditer(text):
            if not _PLACEHOLDER.match(match.group(1)):
                return "a password in a URL"
    # Matched on lower-cased text when lower() keeps positions (it nearly always does),
    # else with the slower (?i) patterns on the text as it is.
    folded = text.lower()
    if not any(hint in folded for hint in _ASSIGNMENT_HINTS):
        return None
    same_positions = len(folded) == len(text)
    if not same_positions:
        folded = text
    for label, pattern in (
        ("a password, secret or token assignment", _ASSIGNMENT),
        ("a bearer token", _BEARER),
    ):
        for match in (pattern if same_positions else _ANY_CASE[pattern]).finditer(folded):
            if _looks_like_a_literal_secret(text[match.start(1) : match.end(1)]):
                return label
    return None


_ADVICE = (
    "secrets are never stored in memory (store where to find it instead, e.g. the name "
    "of the vault entry)"
)


def refuse_secrets(text: str, field: str = "value") -> None:
    refuse_secrets_in({field: text})


def _texts(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in a JSON value with where it is, keys included: "metadata.db.url",
    "tags[2]", "a key of metadata.db". A key is yielded (and checked) before anything
    under it, so a path never spells out a key that was refused."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield f"a key of {where}", str(key)
                stack.append((child, f"{where}.{strip_terminal_controls(key)[:40]}"[:200]))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


def refuse_secrets_in(fields: dict[str, Any]) -> None:
    """Check every text of already size-checked fields ({"key": ..., "tags": [...]}).
    The error names the field (and where inside it), and the kind of secret, never the
    secret."""
    for name, value in fields.items():
        for where, text in _texts(value, name):
            kind = secret_kind(text)
            if kind:
                place = "" if where == name else f"{where} "
                raise InvalidInputError(name, f"{place}looks like it contains {kind}; {_ADVICE}")
