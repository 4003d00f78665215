"""Where the secrets are in a text: gitleaks' rules, run the way gitleaks runs them.

Why gitleaks' rules (bench/secret_scanners.py measures the three; numbers in
docs/SECRETS.md): ~220 maintained rules for provider keys (AWS, GitHub, GitLab, Slack,
Stripe, OpenAI, Anthropic, Google, Hugging Face, npm, PyPI, SendGrid...) and a generic
`name = value` rule, each with keywords, an entropy floor, allowlists and stopwords tuned
on real repositories. detect-secrets 1.5.0 has no rule for half the README's kinds
(Anthropic, Google, Hugging Face, Stripe test keys, OpenAI project keys), flags code that
only mentions secrets (113 of 4,000 site-packages chunks) and takes ~1 s per 64 KB value.
The gitleaks binary is not used: one process per memory costs ~0.5 s of CPU.

gitleaks.toml is gitleaks 8.30.1's default configuration, unchanged (LICENSE-gitleaks);
to update it, replace the file with a newer release's config/gitleaks.toml and run
tests/checks/test_secret_scan.py and tests/checks/test_secrets_corpus.py. local_rules.toml
adds, in the same format, the kinds gitleaks has no rule for and the placeholders memory
text is full of (see there).

gitleaks' semantics: a rule runs only when one of its keywords is in the lower-cased text
(all keywords found in one Aho-Corasick pass); the secret is the rule's `secretGroup`, else
its first non-empty group, else the whole match; a finding whose secret's Shannon entropy
is at or below the rule's `entropy` is dropped, and so is one that an allowlist of the
rule or a global one allows. Where a match is looked for is narrowed to the keywords'
places (`_matches`); `find_secrets_plainly` does without, and the tests hold the two equal.

Two changes: rules that gitleaks runs only on some files (`path`) are left out, and
rules that know a secret by its own shape (a prefix, a length) also end it at prose
punctuation. gitleaks ends most patterns with a delimiter class made for code (a quote,
whitespace, `;`); memory text is prose too, where a key ends a sentence or stands in
brackets, so `,` `.` `)` `]` `}` `>` `|` end such a secret as well (rules.py)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from memory_mcp.checks.secret_scan.disguises import unmasked
from memory_mcp.checks.secret_scan.rules import NAME_PREFIX_CHARS, Rule, RuleSet, rule_set

__all__ = ["SecretFinding", "find_secrets", "find_secrets_plainly", "shannon_entropy"]


@dataclass(frozen=True)
class SecretFinding:
    """The characters [start, end) of the scanned text are a secret of this kind (a rule
    id, e.g. "github-pat")."""

    kind: str
    start: int
    end: int


def shannon_entropy(text: str) -> float:
    """Bits per character, as gitleaks computes it (over characters, not bytes)."""
    counts = Counter(text)
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _secret_group(rule: Rule, groups: tuple[str | None, ...]) -> int:
    if rule.secret_group:
        return rule.secret_group
    return next((i for i, g in enumerate(groups, start=1) if g), 0)


def _line_around(text: str, start: int, end: int) -> str:
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return text[line_start : line_end if line_end >= 0 else len(text)]


def _match_start(rule: Rule, text: str, start: int) -> int:
    """Where gitleaks' match would start: for a rule whose name prefix was cut off
    (rules.NAME_PREFIX), up to 50 word, '.' or '-' characters earlier."""
    if not rule.name_prefix:
        return start
    limit = max(0, start - NAME_PREFIX_CHARS)
    while start > limit and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    return start


def _finding(rule: Rule, text: str, match: re.Match[str]) -> SecretFinding | None:
    """gitleaks' checks of one match: secret group, entropy floor, allowlists."""
    group = _secret_group(rule, match.groups())
    secret = match.group(group)
    if not secret:
        return None
    if rule.entropy and shannon_entropy(secret) <= rule.entropy:
        return None
    start, end = match.span(group)
    whole = text[_match_start(rule, text, match.start()) : match.end()]
    line = _line_around(text, start, end)
    if any(a.allows(secret, whole, line) for a in rule.allowlists):
        return None
    return SecretFinding(rule.id, start, end)


def _windows(positions: list[int], reach: int, size: int) -> Iterator[tuple[int, int]]:
    """[start, end) spans reaching `reach` characters either side of each position,
    overlapping ones merged."""
    start = end = -1
    for position in sorted(positions):
        low, high = max(0, position - reach), min(size, position + reach)
        if low > end:
            if end > start:
                yield start, end
            start = low
        end = max(end, high)
    if end > start:
        yield start, end


def _matches(rule: Rule, text: str, positions: list[int]) -> Iterator[re.Match[str]]:
    """The matches gitleaks would find, looked for only where they can be.

    A rule whose matches start with a keyword is matched at each keyword (rules.py checks
    its pattern). A rule whose matches are at most `reach` long is searched in windows
    that reach that far around its keywords; a match touching a window's edge could be
    cut short by it, so the whole text is searched instead. Any other rule searches the
    whole text, as gitleaks does."""
    if rule.at_keywords:
        end = 0
        for position in sorted(positions):
            if position < end:
                continue
            match = rule.pattern.match(text, position)
            if match:
                end = match.end()
                yield match
        return
    if rule.reach is None:
        yield from rule.pattern.finditer(text)
        return
    found: list[re.Match[str]] = []
    for start, end in _windows(positions, rule.reach, len(text)):
        for match in rule.pattern.finditer(text, start, end):
            if (match.start() == start and start > 0) or (match.end() == end < len(text)):
                yield from rule.pattern.finditer(text)
                return
            found.append(match)
    yield from found


def _merged(findings: list[SecretFinding]) -> list[SecretFinding]:
    """Overlapping findings as one span. It is named after a provider's rule when one
    found any of it ("stripe-access-token" rather than "generic-api-key")."""
    merged: list[SecretFinding] = []
    for f in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            kind = f.kind if last.kind.startswith("generic") else last.kind
            merged[-1] = SecretFinding(kind, last.start, max(last.end, f.end))
        else:
            merged.append(f)
    return merged


def find_secrets(text: str) -> list[SecretFinding]:
    """The secrets in `text`, in order, overlapping findings merged, each to the end of
    its word, including those hidden or base64-encoded (disguises.py). Empty when clean."""
    return _merged(unmasked(text, _rule_findings))


def _rule_findings(text: str) -> list[SecretFinding]:
    """What the rules find in the text as it is, looked for only where they can be."""
    rules = rule_set()
    folded = text.lower()
    if len(folded) != len(text):  # lower() moved positions (rare: "İ"): keywords only gate
        return _full_scan(rules, text, folded)
    positions: dict[str, list[int]] = {}
    for end, keyword in rules.keywords.iter(folded):
        positions.setdefault(keyword, []).append(end - len(keyword) + 1)
    gated = sorted({i for keyword in positions for i in rules.by_keyword[keyword]})
    findings: list[SecretFinding] = []
    for index in [*rules.always, *gated]:
        rule = rules.rules[index]
        if rule.keywords:
            at = [p for k in rule.keywords for p in positions.get(k, ())]
            candidates: Iterator[re.Match[str]] = _matches(rule, text, at)
        else:
            candidates = rule.pattern.finditer(text)
        findings.extend(f for f in (_finding(rule, text, m) for m in candidates) if f)
    return findings


def _full_scan(rules: RuleSet, text: str, folded: str) -> list[SecretFinding]:
    """gitleaks' way, plainly: each rule whose keyword occurs searches the whole text."""
    findings: list[SecretFinding] = []
    for rule in rules.rules:
        if rule.keywords and not any(k in folded for k in rule.keywords):
            continue
        found = (_finding(rule, text, m) for m in rule.pattern.finditer(text))
        findings.extend(f for f in found if f)
    return findings


def find_secrets_plainly(text: str) -> list[SecretFinding]:
    """find_secrets without its shortcuts (keyword positions, windows): what the tests
    compare it with."""
    return _merged(unmasked(text, lambda part: _full_scan(rule_set(), part, part.lower())))
