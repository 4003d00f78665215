"""Which paths are notes, and reading one safely.

A note is a regular `.md`/`.markdown`/`.txt` file inside a memory folder, reached without
`..` and without symbolic links leaving the folder; hidden files and editor droppings are
not notes. Paths are canonical (the real directory + the file name), so the same file
reached two ways is one note. A file with more than one hard link may be the same inode as
a file outside the folder, so it is refused unless allowed; binary content is refused."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memory_mcp.models import EVERY_PROJECT, Scope

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".txt"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
# Files editors write beside the real one while saving (vim, emacs, JetBrains, Kate, ...);
# most already fail the suffix test, these are the ones that would not.
_EDITOR_TEMP = re.compile(r"(~|\.sw[a-p]|\.tmp|\.bak|\.orig|\.part)$|^#.*#$|^4913$", re.I)
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO named notes.md must not hang the reader
    | getattr(os, "O_CLOEXEC", 0)
)
# Binary, not text: a NUL byte anywhere (what git and grep look for), or more than this share
# of characters that are not UTF-8: a Latin-1 note has a few per cent, random bytes ~50%.
MAX_UNDECODABLE_SHARE = 0.20


@dataclass(frozen=True)
class NoteFolder:
    """A watched folder: `root` is resolved; notes in it are stored with `scope`."""

    root: Path
    scope: Scope
    label: str  # "personal", "shared" or "project", for logs and metadata
    project: str = EVERY_PROJECT  # a work tree's `.memory/`: its project's notes


@dataclass(frozen=True)
class NotePath:
    folder: NoteFolder
    path: Path  # canonical, absolute
    relative: PurePosixPath

    @property
    def markdown(self) -> bool:
        return self.path.suffix.lower() in MARKDOWN_SUFFIXES


@dataclass(frozen=True)
class NoteText:
    text: str
    modified_at: float
    size: int


class NoteSkipped(Exception):
    """The file is not (or no longer) a readable note. `remove`: the memories of a note at
    that path should go (gone, a link, too big) rather than stay (a transient error);
    `warn`: a person should hear about it (a note too big to index)."""

    def __init__(self, reason: str, remove: bool = True, warn: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.remove = remove
        self.warn = warn


def is_editor_temp(name: str) -> bool:
    return bool(_EDITOR_TEMP.search(name))


def is_note_name(name: str) -> bool:
    if not name or name.startswith(".") or is_editor_temp(name):
        return False
    return Path(name).suffix.lower() in NOTE_SUFFIXES


def _printable(text: str) -> bool:
    return all(ord(ch) >= 32 and ch != "\x7f" for ch in text)


def canonical(raw: str | os.PathLike[str], cwd: Path | None = None) -> Path | None:
    """The real directory + the file name; None for `..` or control characters. The file
    itself is not resolved: a symlink stays a symlink, and reading it is refused later."""
    text = os.fspath(raw)
    if not text or not _printable(text):
        return None
    path = Path(text).expanduser()
    if ".." in path.parts:
        return None
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    return Path(os.path.realpath(path.parent)) / path.name


def folder_of(path: Path, folders: list[NoteFolder]) -> tuple[NoteFolder, PurePosixPath] | None:
    """The most specific folder holding `path` (a canonical path), and the path within it."""
    for folder in sorted(folders, key=lambda f: len(f.root.parts), reverse=True):
        try:
            relative = path.relative_to(folder.root)
        except ValueError:
            continue
        if relative.parts:
            return folder, PurePosixPath(*relative.parts)
    return None


def locate(
    raw: str | os.PathLike[str], folders: list[NoteFolder], cwd: Path | None = None
) -> NotePath | None:
    """The note at `raw`, or None when `raw` is not a note path inside a memory folder.
    Whether the file exists is not checked here (a deleted note is still located)."""
    path = canonical(raw, cwd)
    if path is None:
        return None
    found = folder_of(path, folders)
    if found is None:
        return None
    folder, relative = found
    if any(part.startswith(".") for part in relative.parts) or not is_note_name(relative.name):
        return None
    return NotePath(folder, path, relative)


def read_note(path: Path, max_bytes: int, allow_hardlinks: bool = False) -> NoteText:
    """The text of a regular file (not a link, not binary), at most `max_bytes`; a few
    undecodable bytes become U+FFFD. Raises NoteSkipped."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError as exc:
        raise NoteSkipped("the file is gone") from exc
    except NotADirectoryError as exc:
        raise NoteSkipped("a parent is not a directory") from exc
    except OSError as exc:
        if os.path.islink(path):
            raise NoteSkipped("a symbolic link (only regular files are indexed)") from exc
        raise NoteSkipped(
            f"cannot open it: {exc.strerror or exc}", remove=False, warn=True
        ) from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NoteSkipped("not a regular file")
        if info.st_nlink > 1 and not allow_hardlinks:
            raise NoteSkipped(
                f"it has {info.st_nlink} hard links, and another may be outside the memory "
                "folder (set MEMORY_MCP_NOTE_ALLOW_HARDLINKS=true to index such files)",
                warn=True,
            )
        if info.st_size > max_bytes:
            raise NoteSkipped(
                f"{info.st_size:,} bytes is over the {max_bytes:,}-byte limit", warn=True
            )
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise NoteSkipped(f"over the {max_bytes:,}-byte limit (it grew while read)", warn=True)
    return NoteText(decode_text(data), info.st_mtime, len(data))


def decode_text(data: bytes) -> str:
    """UTF-8 text with a few undecodable bytes replaced; NoteSkipped for binary content."""
    if b"\x00" in data:
        raise NoteSkipped("binary content (NUL bytes), not a text note", warn=True)
    text = data.decode("utf-8-sig", errors="replace")
    undecodable = text.count("\ufffd") - data.count("\ufffd".encode())
    if text and undecodable > MAX_UNDECODABLE_SHARE * len(text):
        raise NoteSkipped(
            f"binary content ({undecodable:,} of {len(text):,} characters are not UTF-8), "
            "not a text note",
            warn=True,
        )
    return text


def walk_notes(base: Path, folder: NoteFolder, skip: set[Path], limit: int) -> list[NotePath]:
    """Every note under `base` (inside `folder`), without following directory links,
    hidden directories, or the roots in `skip` (other folders nested in this one)."""
    found: list[NotePath] = []
    if not base.is_dir():
        return found
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(directory)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and (here / d) not in skip
        )
        for name in sorted(filenames):
            if is_note_name(name):
                note = locate(here / name, [folder])
                if note is not None:
                    found.append(note)
                    if len(found) >= limit:
                        return found
    return found
