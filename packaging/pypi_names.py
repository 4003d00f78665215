"""Fail when a name we publish on PyPI is someone else's: `python packaging/pypi_names.py
[--names-list FILE]`, run first by `make dist` (packaging/README.md, "The names").

The names are the two distributions `make dist` builds: pyproject.toml's and
packaging/minilm/pyproject.toml's. PyPI compares a new project's name with the existing
ones folded twice over: PEP 503's normal form (lower case, runs of `-`, `_`, `.` as one
`-`), and, to refuse look-alikes, its "ultranormalized" form (no separators at all, `o` as
`0`, `l` and `i` as `1`). So `memory_mcp.kit` is taken when `memory-mcp-kit` is, and so is
`memorymcpkit`.

Two sources answer:
- the registry's JSON API, `https://pypi.org/pypi/NAME/json`, for each name itself: not
  found (404) is free; found is ours only when its summary and author are ours (the
  entry a first upload makes);
- a list of PyPI's names, where one is at hand (`--names-list`, or PYPI_NAMES_LIST: one
  name a line, a tab-separated file's first column, a header line allowed), for the
  look-alikes, which no per-name query can find. A listed name that folds onto ours but
  is spelled otherwise is another project's; our own name listed is left to the registry
  (the list carries no author).

PYPI_NAMES_OFFLINE=1 skips the registry where it cannot be reached, and says so; without
it, an unreachable registry fails the check (the names would be unproven)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECTS = (ROOT / "pyproject.toml", ROOT / "packaging" / "minilm" / "pyproject.toml")
REGISTRY = "https://pypi.org/pypi/{name}/json"
TIMEOUT_SECONDS = 15.0


def normalize(name: str) -> str:
    """PEP 503's form: what `pip install` and PyPI's URLs treat as one name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def ultranormalize(name: str) -> str:
    """PyPI's stricter form for refusing look-alike names (warehouse's
    `ultranormalize_name`): separators dropped, `o` read as `0`, `l` and `i` as `1`."""
    folded = re.sub(r"[-_.]+", "", name.lower())
    return folded.replace("o", "0").replace("l", "1").replace("i", "1")


@dataclass(frozen=True)
class Shipped:
    """One distribution we publish, with what its PyPI entry says once uploaded."""

    name: str
    summary: str
    author: str


def shipped(projects: Iterable[Path] = PROJECTS) -> list[Shipped]:
    found = []
    for path in projects:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        authors = ", ".join(a["name"] for a in project.get("authors", []) if "name" in a)
        found.append(Shipped(project["name"], project["description"], authors))
    return found


def registry_entry(name: str) -> dict[str, object] | None:
    """The registry's `info` for `name`, or None when no project has it."""
    url = REGISTRY.format(name=normalize(name))
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            info: dict[str, object] = json.load(response)["info"]
            return info
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def registry_problem(ours: Shipped, info: dict[str, object] | None) -> str | None:
    if info is None:
        return None
    if info.get("summary") == ours.summary and info.get("author") == ours.author:
        return None
    return (
        f"{ours.name}: taken on PyPI by another project ({info.get('name')} "
        f"{info.get('version')}: {info.get('summary')!r}, author {info.get('author')!r})"
    )


def listed_names(path: Path) -> Iterable[str]:
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            name = line.split("\t", 1)[0].strip()
            if name and name != "name":
                yield name


def list_problems(ours: list[Shipped], names: Iterable[str]) -> list[str]:
    """Listed names that fold onto one of ours and are not exactly ours."""
    wanted = {ultranormalize(s.name): s for s in ours}
    problems = []
    for name in names:
        mine = wanted.get(ultranormalize(name))
        # Our own name listed (after our first upload): the registry tells whose it is.
        if mine is not None and normalize(name) != normalize(mine.name):
            problems.append(f"{mine.name}: PyPI has {name!r}, the same name once folded")
    return problems


def check(names_list: Path | None, offline: bool) -> list[str]:
    ours = shipped()
    problems: list[str] = []
    if names_list is not None:
        problems += list_problems(ours, listed_names(names_list))
    if not offline:
        for one in ours:
            try:
                problem = registry_problem(one, registry_entry(one.name))
            except (urllib.error.URLError, TimeoutError, OSError) as error:
                problem = (
                    f"{one.name}: the registry could not be asked ({error}); "
                    "PYPI_NAMES_OFFLINE=1 skips it"
                )
            if problem is not None:
                problems.append(problem)
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python packaging/pypi_names.py", description=__doc__)
    parser.add_argument(
        "--names-list",
        type=Path,
        default=Path(os.environ["PYPI_NAMES_LIST"]) if os.environ.get("PYPI_NAMES_LIST") else None,
        help="a file of PyPI's names (first column), for the look-alike check",
    )
    args = parser.parse_args(argv)
    offline = os.environ.get("PYPI_NAMES_OFFLINE", "") not in ("", "0")
    problems = check(args.names_list, offline)
    for problem in problems:
        print(f"pypi_names: {problem}", file=sys.stderr)
    if problems:
        return 1
    asked = (("the registry", not offline), ("the list", args.names_list is not None))
    sources = [source for source, used in asked if used]
    names = ", ".join(s.name for s in shipped())
    print(
        f"pypi_names: {names} free or ours ({' and '.join(sources) or 'nothing checked'})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
