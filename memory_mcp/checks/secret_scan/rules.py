"""Secret-detection rules in gitleaks' configuration format, loaded for Python.

A rule is a regex (the secret is its first non-empty group, or `secretGroup`), keywords
(the rule runs only when one occurs in the lower-cased text), an entropy floor, and
allowlists (regexes on the secret, the whole match or the line; stopwords the secret must
not contain). gitleaks.toml is gitleaks' own default configuration, unchanged;
local_rules.toml adds, in the same format, the few kinds it has no rule for."""

from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
import tomllib
from dataclasses import dataclass, replace
from functools import cache, cached_property
from importlib import resources
from typing import Any, Literal

import ahocorasick

from memory_mcp.checks.secret_scan.go_regex import to_python

RULE_FILES = ("gitleaks.toml", "local_rules.toml")

Target = Literal["secret", "match", "line"]

# How gitleaks' patterns end a secret (a quote, whitespace, `;`), and the same for prose
# too (see secret_scan/__init__.py). Only for rules keyed on a secret's own shape: those
# that find a secret by the name it is assigned to (`name = value`, the generic rule and
# most provider-name rules) keep gitleaks' delimiters, which keep code such as
# `TypeVar("SecretType", covariant=True)` out.
ASSIGNMENT = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
# gitleaks' rules that find a secret by its name start by taking up to 50 characters of
# the name before the keyword ("DB_" of "DB_PASSWORD"). A lazy prefix that Go's RE2 runs
# in linear time costs Python's backtracking engine up to 50 tries at every position
# (35 ms on 64 KB of prose, 300 ms on base64): it is cut from the pattern, and the scanner
# takes those characters back by hand (secret_scan/__init__.py, `_match_start`).
NAME_PREFIX = r"(?i)[\w.-]{0,50}?"
NAME_PREFIX_CHARS = 50
# What follows the prefix: the names, then up to 20 more characters of the name.
_NAMES = re.compile(r"\(\?i\)\(\?:(?P<names>.*?)\)\(\?:\[ \\t\\w\.-\]\{0,20\}\)")
_LITERAL_START = re.compile(r"[a-z0-9_-]+")
CODE_DELIMITERS = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
TEXT_DELIMITERS = r"""(?:[\x60'"\s;,.)\]}>|]|\\[nr]|$)"""


@dataclass(frozen=True)
class Allowlist:
    """Text that looks like a rule's secret but is not one (gitleaks' [[rules.allowlists]]).
    Any of its criteria allows a finding; with condition AND, all of them must."""

    sources: tuple[str, ...]  # its regexes in gitleaks' syntax, compiled when first used
    target: Target
    stopwords: tuple[str, ...]
    all_criteria: bool

    @cached_property
    def regexes(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(to_python(source)) for source in self.sources)

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        checks: list[bool] = []
        if self.regexes:
            checks.append(any(r.search(text) for r in self.regexes))
        if self.stopwords:
            folded = secret.lower()
            checks.append(any(word in folded for word in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.all_criteria else any(checks)


@dataclass(frozen=True)
class Rule:
    """A rule's pattern is compiled the first time a text holds one of its keywords: a
    process compiles the few rules its texts call for, not all ~220 (~0.1 s of CPU at
    every start of a hook or a command, which validate the agent id: more than a hook
    with nothing to do may take)."""

    id: str
    regex: str  # gitleaks' syntax, NAME_PREFIX cut off
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]  # its own, then the global ones that apply to it
    name_prefix: bool = False  # the pattern had NAME_PREFIX, cut off
    # A name-prefixed pattern whose names each start with a keyword (_starts_at_keywords).
    names_at_keywords: bool = False

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(to_python(self.regex))

    @cached_property
    def at_keywords(self) -> bool:
        """Every match starts where one of the keywords does: matched at those places only."""
        return self.names_at_keywords or _starts_with_a_keyword(self.pattern, self.keywords)

    @cached_property
    def reach(self) -> int | None:
        """The longest match the pattern allows (None: unbounded): how far around a keyword
        one can reach."""
        return _longest_match(self.pattern)


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    source: str  # which files, and their titles
    keywords: ahocorasick.Automaton  # every rule's keywords, found in one pass
    by_keyword: dict[str, tuple[int, ...]]  # keyword -> the rules (indexes) it gates
    always: tuple[int, ...]  # the rules without keywords: run on every text


def _allowlist(table: dict[str, Any]) -> Allowlist | None:
    """None when the allowlist can never apply to memory text: one that names only paths
    or commits (a memory has neither), or one whose AND condition includes them."""
    all_criteria = table.get("condition", "OR").upper() == "AND"
    about_files = bool(table.get("paths") or table.get("commits"))
    if about_files and all_criteria:
        return None
    regexes = tuple(table.get("regexes", []))
    stopwords = tuple(word.lower() for word in table.get("stopwords", []))
    if not regexes and not stopwords:
        return None
    target = table.get("regexTarget", "secret")
    if target not in ("secret", "match", "line"):
        raise ValueError(f"unknown regexTarget {target!r}")
    return Allowlist(regexes, target, stopwords, all_criteria)


def _allowlists(tables: list[dict[str, Any]]) -> tuple[Allowlist, ...]:
    return tuple(a for a in map(_allowlist, tables) if a is not None)


def _starts_at_keywords(regex: str, keywords: tuple[str, ...]) -> bool:
    """Whether a name-prefixed pattern (prefix cut) starts with its names, each beginning
    with one of the keywords: `(?i)(?:access|auth|(?-i:[Aa]pi|API)|...)`. Then a match
    can only start where a keyword does (tests/checks/test_secret_scan.py checks the shortcut
    finds what a plain search does)."""
    names = _NAMES.match(regex)
    if not names or not keywords:
        return False
    flat = re.sub(r"\(\?-?i:|\(\?:|\)", "", names.group("names"))
    flat = re.sub(r"\[([A-Za-z])([A-Za-z])\]", lambda m: m.group(1), flat).lower()
    for name in flat.split("|"):
        literal = _LITERAL_START.match(name)
        start = literal.group() if literal else ""
        if not start or not any(k.startswith(start) or start.startswith(k) for k in keywords):
            return False
    return True


def _literal_starts(items: Any) -> tuple[list[str], bool]:
    """The lower-cased literal text every match of a parsed pattern (re's own parser) can
    start with, one per alternative, and whether the whole pattern was literal."""
    starts = [""]
    for op, av in items:
        if op is sre.AT and starts == [""]:
            continue  # \b or ^ before the first character: zero width
        if op is sre.LITERAL:
            starts = [s + chr(av).lower() for s in starts]
        elif op is sre.IN and all(o is sre.LITERAL for o, _ in av):
            members = {chr(c).lower() for _, c in av}  # [Aa] is one letter to us
            if len(members) != 1:
                return starts, False
            starts = [s + members.pop() for s in starts]
        elif op is sre.SUBPATTERN or op is sre.BRANCH:
            alternatives = [av[-1]] if op is sre.SUBPATTERN else av[1]
            found = [_literal_starts(alternative) for alternative in alternatives]
            inners = [inner for inner_starts, _ in found for inner in inner_starts]
            starts = [s + inner for s in starts for inner in inners]
            if not all(whole for _, whole in found):
                return starts, False
        else:
            return starts, False
    return starts, True


def _starts_with_a_keyword(pattern: re.Pattern[str], keywords: tuple[str, ...]) -> bool:
    """Whether every match begins with one of the keywords (`\\b(ey[a-z...` with "ey";
    `(?:AKIA|ASIA)...` with "akia" and "asia"): then it is matched where they occur."""
    try:
        starts, _ = _literal_starts(sre_parse.parse(pattern.pattern, pattern.flags))
    except Exception:  # noqa: BLE001 - re's private parser: when in doubt, search
        return False
    return bool(keywords) and all(any(s.startswith(k) for k in keywords) for s in starts)


def _longest_match(pattern: re.Pattern[str]) -> int | None:
    try:
        longest = sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[1]
    except Exception:  # noqa: BLE001 - re's private parser: when in doubt, unbounded
        return None
    return int(longest) if longest < sre.MAXREPEAT else None


def _rule(table: dict[str, Any]) -> Rule | None:
    """None for a rule that memory text never meets: one about file names only
    (pkcs12-file), or one that gitleaks runs only on some files (`path`: *.tf, *.yaml,
    nuget.config), whose secrets the generic rule looks for everywhere."""
    if "regex" not in table or "path" in table:
        return None
    regex = table["regex"]
    if ASSIGNMENT not in regex:
        regex = regex.replace(CODE_DELIMITERS, TEXT_DELIMITERS)
    name_prefix = regex.startswith(NAME_PREFIX)
    if name_prefix:
        regex = "(?i)" + regex.removeprefix(NAME_PREFIX)
    keywords = tuple(k.lower() for k in table.get("keywords", []))
    return Rule(
        id=table["id"],
        regex=regex,
        keywords=keywords,
        entropy=float(table.get("entropy", 0.0)),
        secret_group=int(table.get("secretGroup", 0)),
        allowlists=_allowlists(table.get("allowlists", [])),
        name_prefix=name_prefix,
        names_at_keywords=name_prefix and _starts_at_keywords(regex, keywords),
    )


def _global_allowlists(config: dict[str, Any]) -> list[tuple[Allowlist, frozenset[str]]]:
    """The allowlists for every rule ([allowlist], [[allowlists]]), each with the rule ids
    it is limited to (`targetRules`; empty: all)."""
    tables = [config["allowlist"]] if "allowlist" in config else []
    tables += config.get("allowlists", [])
    found = []
    for table in tables:
        allowlist = _allowlist(table)
        if allowlist is not None:
            found.append((allowlist, frozenset(table.get("targetRules", []))))
    return found


@cache
def rule_set() -> RuleSet:
    """Every rule of RULE_FILES, read once per process; each compiles when first used."""
    rules: list[Rule] = []
    shared: list[tuple[Allowlist, frozenset[str]]] = []
    titles: list[str] = []
    for name in RULE_FILES:
        text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
        config = tomllib.loads(text)
        titles.append(f"{name} ({config.get('title', '')})")
        rules.extend(r for r in map(_rule, config.get("rules", [])) if r is not None)
        shared.extend(_global_allowlists(config))
    rules = [
        replace(
            rule,
            allowlists=rule.allowlists
            + tuple(a for a, only in shared if not only or rule.id in only),
        )
        for rule in rules
    ]
    by_keyword: dict[str, list[int]] = {}
    for index, rule in enumerate(rules):
        for keyword in rule.keywords:
            by_keyword.setdefault(keyword, []).append(index)
    automaton = ahocorasick.Automaton()
    for keyword in by_keyword:
        automaton.add_word(keyword, keyword)
    automaton.make_automaton()
    gated = {k: tuple(v) for k, v in by_keyword.items()}
    always = tuple(i for i, rule in enumerate(rules) if not rule.keywords)
    return RuleSet(tuple(rules), ", ".join(titles), automaton, gated, always)
