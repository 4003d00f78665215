"""The GitHub account that publishes memory-mcp, where a release needs it: the MCP
registry's name `io.github.OWNER/memory-mcp` (server.json, and the README's `mcp-name:`
line by which PyPI ownership is proven), the repository's address (server.json,
pyproject.toml's project.urls) and the README's `claude plugin marketplace add
OWNER/memory-mcp`. The repository has no remote yet, so they all say OWNER, the
placeholder; the first release fills in the account with

    python packaging/owner.py ACCOUNT

which rewrites every carrier at once (it also changes one account for another).
tests/test_owner.py keeps the carriers agreeing and finds any new place that names an
owner outside CARRIERS."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "OWNER"
# GitHub's rule for an account name: letters, digits and single inner hyphens, 1-39.
ACCOUNT = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9])*")
_OWNER = r"(?P<owner>[^/\s\"]+)"
# file -> the places in it that carry the owner (each found exactly once).
CARRIERS: dict[str, tuple[str, ...]] = {
    "server.json": (
        rf'"name": "io\.github\.{_OWNER}/memory-mcp"',
        rf'"url": "https://github\.com/{_OWNER}/memory-mcp"',
    ),
    "README.md": (
        rf"mcp-name: io\.github\.{_OWNER}/memory-mcp",
        rf"claude plugin marketplace add {_OWNER}/memory-mcp",
    ),
    "pyproject.toml": (
        rf'Repository = "https://github\.com/{_OWNER}/memory-mcp"',
        rf'Issues = "https://github\.com/{_OWNER}/memory-mcp/issues"',
    ),
}
# Anything that looks like the owner's place, wherever it is (tests/test_owner.py).
ANY_CARRIER = re.compile(r"(?:io\.github\.|github\.com/|marketplace add )[^/\s\"]+/memory-mcp")


def owners(root: Path = ROOT) -> dict[str, list[str]]:
    """Each carrier file's owners, in CARRIERS' order. A place missing or written twice
    is an error: the release would publish a half-filled file."""
    found: dict[str, list[str]] = {}
    for name, patterns in CARRIERS.items():
        text = (root / name).read_text(encoding="utf-8")
        found[name] = []
        for pattern in patterns:
            matches = list(re.finditer(pattern, text))
            if len(matches) != 1:
                raise ValueError(f"{name}: {len(matches)} places match {pattern!r}, not 1")
            found[name].append(matches[0]["owner"])
    return found


def fill(account: str, root: Path = ROOT) -> list[Path]:
    """Write `account` into every carrier; nothing is written unless all are found."""
    if len(account) > 39 or not ACCOUNT.fullmatch(account):
        raise ValueError(f"{account!r} is not a GitHub account name")
    owners(root)  # every place is there, once
    texts = {}
    for name, patterns in CARRIERS.items():
        text = (root / name).read_text(encoding="utf-8")
        for pattern in patterns:
            match = re.search(pattern, text)
            assert match is not None
            start, end = match.span("owner")
            text = text[:start] + account + text[end:]
        texts[root / name] = text
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return list(texts)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python packaging/owner.py ACCOUNT", file=sys.stderr)
        return 2
    try:
        written = fill(argv[0])
    except ValueError as exc:
        print(f"packaging/owner.py: {exc}", file=sys.stderr)
        return 1
    print(f"owner {argv[0]}: " + ", ".join(str(path.relative_to(ROOT)) for path in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
