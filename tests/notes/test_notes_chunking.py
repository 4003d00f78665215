"""Chunking notes: heading paths, paragraphs, size bounds, overlap and line ranges."""

from __future__ import annotations

from pathlib import Path

from memory_mcp.models import Scope
from memory_mcp.notes.chunking import MAX_CHUNK_CHARS, chunk_note
from memory_mcp.notes.indexer import chunk_keys
from memory_mcp.notes.paths import NoteFolder, locate

NOTE = """\
Preamble line.

# Deploy
Deploys go through staging.

```sh
# a comment, not a heading
make deploy
```

## Staging
Staging lives at staging.example.com.

## Rollback ##
Run `make rollback`.

# Deploy
A second top-level section with the same title.
"""


def test_headings_give_each_chunk_its_path_and_lines() -> None:
    chunks = chunk_note(NOTE)
    got = [(c.heading_path, c.start_line, c.end_line) for c in chunks]
    assert got == [
        ("", 1, 1),
        ("# Deploy", 3, 9),
        ("# Deploy > ## Staging", 11, 12),
        ("# Deploy > ## Rollback", 14, 15),
        ("# Deploy", 17, 18),
    ]
    assert chunks[1].text.startswith("# Deploy\n\nDeploys go through staging.")
    assert "# a comment, not a heading" in chunks[1].text, "code fences hide headings"
    assert chunks[2].text == "# Deploy > ## Staging\n\nStaging lives at staging.example.com."


def test_keys_are_unique_and_stable_per_section() -> None:
    path = "ops/deploy.md"  # the note's path inside its memory folder
    keys = chunk_keys(path, chunk_note(NOTE))
    assert keys == [
        "file:ops/deploy.md#top",
        "file:ops/deploy.md#deploy",
        "file:ops/deploy.md#deploy/staging",
        "file:ops/deploy.md#deploy/rollback",
        "file:ops/deploy.md#deploy~2",
    ]
    edited = NOTE.replace("Deploys go through staging.", "Deploys go through QA, then staging.")
    assert chunk_keys(path, chunk_note(edited)) == keys


def test_long_sections_split_on_paragraphs_within_bounds_with_overlap() -> None:
    paragraphs = [
        f"Paragraph {i} " + " ".join(f"word{i}x{j}" for j in range(40)) for i in range(30)
    ]
    text = "# Big\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_note(text)
    assert len(chunks) > 3
    assert all(len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert [c.part for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(c.heading_path == "# Big" for c in chunks)
    for previous, chunk in zip(chunks, chunks[1:], strict=False):
        assert chunk.overlap, "overlap repeats"
        assert chunk.overlap.lstrip("…") in previous.body, "overlap repeats"
        assert chunk.start_line > previous.end_line, "line ranges follow each other"
    body = "\n\n".join(c.body for c in chunks)
    assert all(p in body for p in paragraphs), "no paragraph is lost"


def test_a_single_huge_line_is_cut_at_spaces() -> None:
    text = "word " * 3_000
    chunks = chunk_note(text, markdown=False)
    assert len(chunks) >= 7
    assert all(len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert "".join(c.body for c in chunks).split() == text.split()
    assert {(c.start_line, c.end_line) for c in chunks} == {(1, 1)}


def test_plain_text_has_no_headings_and_headings_only_notes_still_count() -> None:
    chunks = chunk_note("# not a heading in a .txt\n\nsecond paragraph", markdown=False)
    assert [c.heading_path for c in chunks] == [""]
    assert chunks[0].text.startswith("# not a heading")
    only = chunk_note("# Ideas\n\n## Later\n")
    assert len(only) == 1
    assert "# Ideas" in only[0].text
    assert "## Later" in only[0].text
    assert chunk_note("   \n\n") == []


def test_crlf_and_lone_cr_count_as_editor_lines() -> None:
    chunks = chunk_note("# A\r\nline two\r\n\r\n# B\rline\u2028same line")
    assert [(c.heading_path, c.start_line, c.end_line) for c in chunks] == [
        ("# A", 1, 2),
        ("# B", 4, 5),
    ]


def test_locate_refuses_dotdot_hidden_temp_and_outside(tmp_path: Path) -> None:
    root = tmp_path / "mem"
    (root / "sub").mkdir(parents=True)
    folders = [NoteFolder(root.resolve(), Scope.AGENT, "personal")]
    assert locate(root / "sub" / "a.md", folders) is not None
    assert locate(root / "b.markdown", folders) is not None
    assert locate(root / "c.TXT", folders) is not None
    bad_paths: list[str | Path] = [
        root / "sub" / ".." / "a.md",
        root / ".hidden.md",
        root / ".git" / "x.md",
        root / "a.md~",
        root / ".a.md.swp",
        root / "#a.md#",
        root / "4913",
        root / "image.png",
        root / "a.md.tmp",
        tmp_path / "outside.md",
        root,
        "/etc/passwd",
        f"{root}/bad\nname.md",
    ]
    for bad in bad_paths:
        assert locate(bad, folders) is None, bad
