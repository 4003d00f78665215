"""Secrets as the rules would miss them, written: cut short, hidden, or encoded.

The rules (gitleaks' and ours) know a secret by its prefix and a length, and match text
as written. Four ways a secret's characters still got through:
- past the length: a rule takes `ghp_` and 36 characters, so a token 8 characters longer
  left those 8 behind the marker (`[REDACTED:github-pat]7890`). A finding runs on to the
  end of its word: letters, digits, `_` and `-` (the alphabet of the tokens rules know
  by length), never a space, prose punctuation or a path's `/`;
- glued: written onto the word before it (`depends_on_sk_live_…`, `usesAKIA…`), where the
  rules want a word boundary before the prefix;
- hidden: a zero-width space or soft hyphen inside it, fullwidth letters, or Latin
  look-alikes from other scripts (`ghр_` with a Cyrillic р) show the same token to a
  reader and none to the rules. The text is also scanned folded (checks/text_safety.py,
  `fold_to_ascii`), and what is found there is mapped back onto the characters written;
- encoded: a base64 run whose decoded text holds a secret (a token, a `.env` file) is a
  secret as a whole.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import ahocorasick

from memory_mcp.checks.text_safety import fold_to_ascii

if TYPE_CHECKING:
    from memory_mcp.checks.secret_scan import SecretFinding

Scan = Callable[[str], "list[SecretFinding]"]

# The characters a token is written in: where a finding's word ends.
_WORD_REST = re.compile(r"[A-Za-z0-9_-]*")
# Runs of either base64 alphabet long enough to hold the shortest secret a rule knows
# (about 16 characters: 24 encoded); inside one, the runs of each alphabet, each from its
# own start (`token-` before a standard run is no part of it).
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_=-]{24,}")
_BASE64_RUNS = (
    re.compile(r"[A-Za-z0-9+/]{24,}={0,2}"),
    re.compile(r"[A-Za-z0-9_-]{24,}={0,2}"),
)
_URLSAFE = str.maketrans("-_", "+/")
# Base64 of ASCII text: the first of each 4 characters encodes a byte under 128, so it is
# one of the first 32 of the alphabet (A-Z, a-f). A hex digest or random bytes fail at
# once, before any decoding (1,100 of them in 64 KB cost 3 ms to decode).
_ASCII_QUADS = re.compile(r"(?:[A-Za-f][A-Za-z0-9+/_-]{3})*(?:[A-Za-f][A-Za-z0-9+/_-]{0,2})?")


def _to_word_end(text: str, findings: list[SecretFinding]) -> list[SecretFinding]:
    widened = []
    for f in findings:
        end = _WORD_REST.match(text, f.end)
        widened.append(f if end is None or end.end() == f.end else replace(f, end=end.end()))
    return widened


def _whole_words(text: str, scan: Scan) -> list[SecretFinding]:
    return _to_word_end(text, scan(text))


def _folded(text: str, scan: Scan) -> list[SecretFinding]:
    """Secrets in the text with invisible characters dropped and look-alikes mapped to
    ASCII, as spans of the text written (from the first character to the last one)."""
    folding = fold_to_ascii(text)
    if folding is None:
        return []
    folded, origin = folding
    return [
        replace(f, start=origin[f.start], end=origin[f.end - 1] + 1)
        for f in _whole_words(folded, scan)
    ]


def _decoded(run: str) -> str | None:
    """The text a base64 run encodes, when it is printable text (not an image, a hash)."""
    if not _ASCII_QUADS.fullmatch(run, 0, len(run.rstrip("="))):
        return None
    body = run.rstrip("=").translate(_URLSAFE)
    if len(body) % 4 == 1:  # one character past the last whole byte: not base64's own
        body = body[:-1]
    try:
        text = base64.b64decode(body + "=" * (-len(body) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return text if all(ch.isprintable() or ch in "\t\r\n" for ch in text) else None


def _encoded(text: str, scan: Scan) -> list[SecretFinding]:
    """Base64 runs that decode to text holding a secret, each as one finding of the first
    secret's kind."""
    found = []
    for candidate in _CANDIDATE.finditer(text):
        runs = {
            run.span(): run.group()
            for alphabet in _BASE64_RUNS
            for run in alphabet.finditer(text, candidate.start(), candidate.end())
        }
        for (start, end), run in runs.items():
            decoded = _decoded(run)
            if decoded is None:
                continue
            inside = _whole_words(decoded, scan) + _folded(decoded, scan)
            if inside:
                # Named after a provider's rule where one found it, as _merged names them.
                first = min(inside, key=lambda f: (f.start, f.kind.startswith("generic")))
                found.append(replace(first, start=start, end=end))
    return found


@functools.cache
def _prefixes() -> ahocorasick.Automaton:
    """The keywords of the rules that know a secret by its own prefix (not the generic
    `name = value` ones, whose keywords are common words: "key" in "monkey"), as one
    automaton."""
    from memory_mcp.checks.secret_scan.rules import rule_set

    found = {
        keyword
        for rule in rule_set().rules
        if not rule.id.startswith("generic") and len(rule.keywords) > 0
        for keyword in rule.keywords
        if len(keyword) >= 3
    }
    automaton = ahocorasick.Automaton()
    for keyword in found:
        automaton.add_word(keyword, keyword)
    automaton.make_automaton()
    return automaton


def _unglued(text: str, scan: Scan) -> list[SecretFinding]:
    """Secrets glued to the word before them (`depends_on_sk_live_…`, `usesAKIA…`,
    `db_postgres://user:pass@host`): the rules want a word boundary before the prefix.
    The character before each prefix (a URL's: before its scheme) is read as a space, in
    a copy of the same length, so the findings are spans of the text written."""
    folded = text.lower()
    if len(folded) != len(text):  # lower() moved positions (rare: "İ")
        return []
    chars = list(text)
    starts: list[int] = []
    inside: set[int] = set()  # a prefix's own characters (`live_` is in `sk_live_`)
    for end, keyword in _prefixes().iter(folded):
        start = end - len(keyword) + 1
        inside.update(range(start, end + 1))
        if keyword == "://":  # the scheme before it: `postgres` of `x_postgres://`
            while start > 0 and (text[start - 1].isascii() and text[start - 1].isalnum()):
                start -= 1
        starts.append(start)
    for start in starts:
        before = start - 1
        if before >= 0 and before not in inside and (text[before].isalnum() or text[before] == "_"):
            chars[before] = " "
    glued = "".join(chars)
    if glued == text:
        return []
    return _whole_words(glued, scan)


def unmasked(text: str, scan: Scan) -> list[SecretFinding]:
    """Every finding of `scan` in the text as written, glued to the word before it,
    folded and base64-decoded, each reaching the end of its word; overlapping ones not yet
    merged."""
    return (
        _whole_words(text, scan) + _unglued(text, scan) + _folded(text, scan) + _encoded(text, scan)
    )
