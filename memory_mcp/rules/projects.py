"""Projects: what a project is called, and which one a process works in.

A project is a name (`acme/payments`, `scratch-3fa2c1`) or `*`, the memories that hold in
every project. The current project of a stdio server, a CLI command or a hook is, in this
order: `--project` / MEMORY_MCP_PROJECT / the settings file's `project` (read by the
composition root), else the git work tree around the working directory (a hook: its
payload's `cwd`), else none. This module is the standard library only: the hooks' fast path
imports it before anything heavy.

The name of a work tree, read from its files without running `git`:
- its `origin` remote's repository path, `.git` dropped (`git@github.com:acme/
  payments.git` and `https://github.com/acme/payments` are both `acme/payments`): two
  clones of one repository share a project, and two repositories with the same folder
  name but different remotes stay apart. The host stays in the name where it tells two
  repositories apart: a remote on any host but GitHub is `host/owner/repo`
  (`gitlab.com/acme/payments`), so GitHub's and GitLab's `acme/payments` are two projects.
  GitHub keeps `owner/repo`, the name every store has held its memories under since
  projects began (most remotes are GitHub's): prefixing it too would have moved every
  existing user's memories out of sight. A host with no dot (`git@work:acme/x`, an ssh
  config alias, often GitHub's under another key) names no host anyone else shares and
  is left out too. Memories stored under another host's remote before the host was kept
  are still under `owner/repo`: `earlier_names` says so, and `doctor` and `projects`
  print the command that moves them (not moved unasked: `owner/repo` may as well hold
  GitHub's repository of that name, whose memories shared that project);
- no origin: the folder's name, `-`, and the first 6 hex digits of the SHA-256 of its real
  path (`scratch-3fa2c1`): two local repositories with the same folder name stay apart. It
  is stable while the folder stays where it is; `--project` names it otherwise."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from memory_mcp.models import EVERY_PROJECT  # the standard library only, as this module

MAX_PROJECT_CHARS = 100
PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
NOTES_FOLDER = ".memory"  # a work tree's own notes folder, at its root: the project's notes
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9._/-]+")
_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')


class ProjectNameError(ValueError):
    """A project name that is not one (the service's edges turn it into InvalidInputError)."""


def check_project(name: object) -> str:
    """`name` if it is a project name or `*`; else ProjectNameError saying what is allowed."""
    if name == EVERY_PROJECT:
        return EVERY_PROJECT
    if isinstance(name, str) and PROJECT_NAME.fullmatch(name):
        return name
    shown = repr(name)[:60]
    raise ProjectNameError(
        f"{shown} is not a project: 1-{MAX_PROJECT_CHARS} characters of letters, digits and "
        "._/- starting with a letter or digit (e.g. acme/payments), or * for every project"
    )


def current_project(named: str | None, cwd: Path | None) -> str | None:
    """The current project: `named` (a setting; `*` means none), else the work tree's
    around `cwd` (None: look nowhere), else None."""
    if named is not None:
        name = check_project(named.strip())
        return None if name == EVERY_PROJECT else name
    if cwd is None:
        return None
    tree = work_tree_of(cwd)
    return None if tree is None else project_of_work_tree(tree)


def work_tree_of(path: Path) -> Path | None:
    """The root of the git work tree holding `path` (a folder, or a file in one), if any:
    the nearest folder upwards with a `.git` folder or file."""
    try:
        here = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_of_work_tree(tree: Path) -> str:
    """The project name of the work tree rooted at `tree` (see the module docstring)."""
    url = origin_url(tree)
    if url is not None:
        name = project_of_remote(url, tree)
        if name is not None:
            return name
    return _local_name(tree)


def origin_url(tree: Path) -> str | None:
    """The `origin` remote's URL in the work tree's git config, if it has one."""
    config = _config_file(tree)
    if config is None:
        return None
    try:
        text = config.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    in_origin = False
    for raw in text.splitlines():
        line = raw.strip()
        section = _SECTION.match(line)
        if section:
            name, sub = section.group(1).lower(), section.group(2)
            in_origin = name == "remote" and sub == "origin"
            continue
        if in_origin and "=" in line:
            key, _, value = line.partition("=")
            if key.strip().lower() == "url":
                return _config_value(value)
    return None


def _config_file(tree: Path) -> Path | None:
    """The config of the repository of `tree`: `.git/config`, or for a linked work tree or
    a submodule (`.git` is a file `gitdir: ...`) the config of its git folder's common
    folder (`commondir`), else of the git folder itself."""
    dot_git = tree / ".git"
    if dot_git.is_dir():
        return dot_git / "config"
    try:
        first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    git_dir = Path(first.removeprefix("gitdir:").strip())
    if not git_dir.is_absolute():
        git_dir = tree / git_dir
    common = git_dir
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        named = ""
    if named:
        common = Path(named) if Path(named).is_absolute() else git_dir / named
    return common / "config"


def _config_value(value: str) -> str:
    """A git config value: an inline comment dropped, quotes and escapes undone."""
    out: list[str] = []
    quoted = False
    chars = iter(value.strip())
    for ch in chars:
        if ch == "\\":
            out.append(next(chars, ""))
        elif ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


def project_of_remote(url: str, tree: Path) -> str | None:
    """The project of a remote URL (https, ssh, git, scp-like `git@host:owner/repo.git`):
    `owner/repo`, prefixed by its host unless that is GitHub's or an alias (module
    docstring); a local path (no host) is named like a work tree without a remote, by the
    real path of the repository it names. None when nothing usable is left."""
    split = _host_and_path(url.strip())
    if split is None:
        local = Path(url.strip()).expanduser()
        return _local_name(local if local.is_absolute() else tree / local)
    host, path = split
    if host == "file":
        return _local_name(Path(path))
    name = _path_name(path)
    if name is None:
        return None
    shown_host = _distinct_host(host)
    if shown_host is not None:
        name = _path_name(f"{shown_host}/{name}") or name
    return name


def _host_and_path(url: str) -> tuple[str, str] | None:
    """(host, path) of a URL or scp-like address, the host lowercased without user or
    port ("file" for a file:// URL, its path whole); None for a local path."""
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme.lower() == "file":
            return "file", rest
        authority, _, path = rest.partition("/")
    elif re.match(r"^[^/\\]+:", url) and not re.match(r"^[A-Za-z]:[\\/]", url):
        authority, _, path = url.partition(":")  # scp-like: [user@]host:path
    else:
        return None
    host = authority.rpartition("@")[2]
    if not host.startswith("["):  # an IPv6 literal keeps its colons
        host = host.partition(":")[0]
    return host.lower(), path


def _path_name(path: str) -> str | None:
    """A repository path as a project name: `.git`, query and fragment dropped, each part
    made of name characters, lowercased; None when nothing usable is left."""
    path = path.split("?", 1)[0].split("#", 1)[0].strip("/")
    path = path.removesuffix(".git").removesuffix("/")
    parts = [_NOT_IN_NAME.sub("-", part).strip("-.") for part in path.split("/")]
    name = "/".join(part for part in parts if part).lower()
    name = re.sub(r"^[^a-z0-9]+", "", name)[:MAX_PROJECT_CHARS].rstrip("/")
    return name if name and PROJECT_NAME.fullmatch(name) else None


# GitHub's hosts (https, ssh, ssh over port 443): their remotes are `owner/repo`.
GITHUB_HOSTS = frozenset({"github.com", "ssh.github.com"})


def _distinct_host(host: str) -> str | None:
    """The host as a project name shows it, or None where it stays out of the name:
    GitHub's, or an alias (no dot)."""
    host = host.strip("[]").removeprefix("www.")
    if host in GITHUB_HOSTS or "." not in host:
        return None
    return host


def shared_note(hostless: str) -> str:
    """Why moving `hostless`'s memories wants a look first: GitHub's repository of that
    name shared the project."""
    return f"GitHub's {hostless} had that name too: --dry-run lists what would move"


def hostless_name(url: str, tree: Path) -> str | None:
    """The name a remote gave before hosts other than GitHub's were kept (`owner/repo`),
    where it differs from today's; else None."""
    split = _host_and_path(url.strip())
    if split is None or split[0] == "file":
        return None
    before = _path_name(split[1])
    return before if before is not None and before != project_of_remote(url, tree) else None


def _local_name(folder: Path) -> str:
    """`<folder name>-<6 hex of the SHA-256 of its real path>`."""
    try:
        real = os.path.realpath(folder)
    except (OSError, ValueError):
        real = str(folder)
    base = Path(real).name.removesuffix(".git") or "root"
    base = re.sub(r"^[^A-Za-z0-9]+", "", _NOT_IN_NAME.sub("-", base)) or "repo"
    digest = hashlib.sha256(real.encode("utf-8", errors="surrogateescape")).hexdigest()[:6]
    return f"{base[: MAX_PROJECT_CHARS - 7]}-{digest}"


def how_chosen(named: str | None, source: str, cwd: Path) -> tuple[str | None, list[str]]:
    """The current project a process in `cwd` would work in (`named`: the `project`
    setting, from `source`), and lines telling a person why, and what would move it:
    `memory-mcp doctor` prints them."""
    if named is not None:
        project = current_project(named, cwd)
        shown = project or "none (every project; stores go to *)"
        return project, [
            f"project: {shown}  [{source}]",
            "  named by the setting: it holds wherever the process runs; drop it to take the "
            "git work tree's",
        ]
    tree = work_tree_of(cwd)
    if tree is None:
        return None, [
            f"project: none  [{cwd} is in no git work tree]",
            "  reads cover every project, stores go to * (every project); run in a "
            "repository, or name one with --project / MEMORY_MCP_PROJECT",
        ]
    project = project_of_work_tree(tree)
    url = origin_url(tree)
    if url is not None and project_of_remote(url, tree) == project:
        why = f"the origin remote of {tree} ({url})"
        moves = (
            "  changing the origin remote renames it; clones with the same origin share it; "
            "--project / MEMORY_MCP_PROJECT names another"
        )
    else:
        why = f"the folder {tree} (no origin remote: its name and a hash of its path)"
        moves = (
            "  moving or renaming the folder renames it, and so does adding an origin remote "
            "(then owner/repo); --project / MEMORY_MCP_PROJECT names another"
        )
    return project, [f"project: {project}  [{why}]", moves]


def earlier_names(tree: Path) -> list[tuple[str, str]]:
    """Names this work tree's project had before, that its memories may still be under,
    each with why, in words: with an origin remote, the name it had without one (folder
    name and path hash), and for a host other than GitHub's the name without the host
    (`owner/repo`, as every remote was named before hosts were kept)."""
    url = origin_url(tree)
    if url is None:
        return []
    current = project_of_work_tree(tree)
    local = _local_name(tree)
    names = [(local, "before it had an origin remote")] if local != current else []
    hostless = hostless_name(url, tree)
    if hostless is not None and hostless != current:
        names.append((hostless, f"before project names kept the host ({shared_note(hostless)})"))
    return names


def notes_folder_of(cwd: Path | None) -> Path | None:
    """The work tree's notes folder (`.memory/` at its root) when it exists and its real
    path is in the work tree: a `.memory` link to another repository's folder is not this
    project's (those notes are the repository's whose real path holds them, and its own
    server indexes them), so it is None here (`foreign_notes_folder` says where it leads)."""
    if cwd is None:
        return None
    tree = work_tree_of(cwd)
    if tree is None:
        return None
    folder = tree / NOTES_FOLDER
    if not folder.is_dir() or foreign_notes_folder(tree) is not None:
        return None
    return folder


def foreign_notes_folder(tree: Path) -> Path | None:
    """Where the work tree's `.memory` leads when that is outside the work tree (a link
    to another folder), else None."""
    try:
        real = Path(os.path.realpath(tree / NOTES_FOLDER))
        inside = real.is_relative_to(Path(os.path.realpath(tree)))
    except (OSError, ValueError):
        return None
    return None if inside else real


__all__ = [
    "EVERY_PROJECT",
    "NOTES_FOLDER",
    "ProjectNameError",
    "check_project",
    "current_project",
    "earlier_names",
    "foreign_notes_folder",
    "hostless_name",
    "how_chosen",
    "notes_folder_of",
    "origin_url",
    "project_of_remote",
    "project_of_work_tree",
    "work_tree_of",
]
