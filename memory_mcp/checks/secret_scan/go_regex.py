"""Go (RE2) regular expressions, as gitleaks writes them, in Python's `re` dialect.

The two dialects agree on nearly everything gitleaks uses. The differences handled here:
- a flag group in the middle, `ab(?i)cd`: RE2 applies it to the rest of the enclosing
  group; Python accepts global flags only at the start, so it becomes `ab(?i:cd)`;
- `\\z` (end of text) is `\\Z` in Python 3.11;
- POSIX classes inside a class, `[[:alnum:]]`, are spelled out: `[a-zA-Z0-9]`;
- inside a character class, `[`, `&`, `~` and `|` are literal in RE2, but Python warns
  that a future version may read `[[`, `&&`, `~~`, `||` as set operations: they are
  escaped.
"""

from __future__ import annotations

import re

_FLAG_GROUP = re.compile(r"\(\?([imsU-]+)\)")
_POSIX_CLASSES = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:lower:]": "a-z",
    "[:upper:]": "A-Z",
    "[:xdigit:]": "0-9a-fA-F",
    "[:space:]": r"\t\n\v\f\r ",
    "[:word:]": r"\w",
}


def _close_positions(pattern: str) -> dict[int, int]:
    """For every '(' outside a character class, the index of its ')'."""
    closes: dict[int, int] = {}
    stack: list[int] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            # A ']' right after '[' or '[^' is a literal member, not the end.
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif ch == "(":
            stack.append(i)
        elif ch == ")" and stack:
            closes[stack.pop()] = i
        i += 1
    return closes


def _scope_inline_flags(pattern: str) -> str:
    """`x(?i)y` -> `x(?i:y)`, the flag group's reach made explicit (see the module doc)."""
    while True:
        match = next((m for m in _FLAG_GROUP.finditer(pattern) if m.start() > 0), None)
        if match is None:
            return pattern
        closes = _close_positions(pattern)
        enclosing = [o for o, c in closes.items() if o < match.start() and c > match.end()]
        end = closes[max(enclosing)] if enclosing else len(pattern)
        flags = match.group(1)
        pattern = (
            pattern[: match.start()]
            + f"(?{flags}:"
            + pattern[match.end() : end]
            + ")"
            + pattern[end:]
        )


def _escape_class_members(pattern: str) -> str:
    out: list[str] = []
    i, in_class, class_start = 0, False, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            class_start = False
            continue
        if in_class:
            if ch == "]" and not class_start:
                in_class = False
            elif ch in "[&~|":
                ch = "\\" + ch
            class_start = False
        elif ch == "[":
            in_class, class_start = True, True
            out.append(ch)
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def to_python(pattern: str) -> str:
    """The same expression in Python's `re` syntax."""
    pattern = pattern.replace(r"\z", r"\Z")
    for posix, members in _POSIX_CLASSES.items():
        pattern = pattern.replace(posix, members)
    return _escape_class_members(_scope_inline_flags(pattern))
