"""A search over memories no model has embedded yet, with the real model: a note indexed
by `memory-mcp index` has no vector (notes are left to a server's background worker,
which the CLI does not run), and `memory-mcp search` ranked it as if its meaning were zero.
"how do I undo a bad release" put the rollback note, its one real answer, last at 0.133,
under a memory about pull requests (cosine 0.15) and one about a bad coffee machine
(cosine ~0.07). Now the search embeds its keyword candidates that have no vector
(search/missing_vectors.py; before that the CLI embeds a few of the store's waiting texts),
ranks any it could not on their words (search/arm_mix.py),
caps weak cosines beside keyword hits, and a note weighs as a manual memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp.cli.main import main
from memory_mcp.search import missing_vectors
from tests.conftest import in_process

EXE = str(Path(sys.executable).with_name("memory-mcp"))
QUESTION = "how do I undo a bad release"
NOTE = """# Rolling back a release

If a release goes bad, roll it back: run `deploy rollback --to previous` from the ops box,
then confirm the health check is green before telling the channel.
"""
MEMORIES = {
    "style": "Prefer small pull requests with one concern each",
    "coffee": "The coffee machine on floor 3 is bad, use the one on floor 2",
    "lunch": "Team lunch is on Fridays at the Thai place",
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A user's environment with a notes folder holding the rollback note, for this
    process and the processes `run` starts."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "releases.md").write_text(NOTE)
    user = {
        "HF_HUB_OFFLINE": "1",
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
        "MEMORY_MCP_MEMORY_DIR": str(notes),
        "MEMORY_MCP_DB": str(tmp_path / "m.db"),
    }
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    return {**os.environ, **user}


def run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return done


def cli(*argv: str) -> tuple[str, str]:
    """`memory-mcp ARGV` in this process (the same `main`); its stdout and stderr."""
    code, out, err = in_process(lambda: main(list(argv)))
    assert code == 0, err
    return out, err


def test_the_cli_search_embeds_the_note_and_ranks_it_first(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Every step a process of its own, as a user types them."""
    run(env, "index", str(tmp_path / "notes"))
    for key in ("style", "coffee"):
        run(env, "store", key, MEMORIES[key])
    assert json.loads(run(env, "stats", "--json").stdout)["embedded_share"] < 1.0

    found = json.loads(run(env, "search", QUESTION, "--json", "--explain").stdout)

    first = found["results"][0]
    assert first["key"].startswith("file:") and first["key"].endswith("#rolling-back-a-release")
    assert first["matched_by"] == "both"  # embedded by the search itself
    others = {hit["key"]: hit["score"] for hit in found["results"][1:]}
    assert set(others) == {"style", "coffee"}
    assert first["score"] > 2 * max(others.values())
    assert not found.get("notices")
    # Saved for good: the next search (and a server) finds its vector.
    assert json.loads(run(env, "stats", "--json").stdout)["embedded_share"] == 1.0


def test_a_note_the_search_did_not_embed_ranks_on_its_words_and_is_named(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound of what one command embeds (here none: neither the store's catch-up
    before the search nor the search's own), the note is ranked on its words alone, still
    first, and the command says it had no vector."""
    monkeypatch.setattr(missing_vectors, "CATCH_UP_TEXTS", 0)
    monkeypatch.setattr(missing_vectors, "FILL_TEXTS", 0)
    cli("index", str(tmp_path / "notes"))
    for key, value in MEMORIES.items():
        cli("store", key, value)

    found = json.loads(cli("search", QUESTION, "--json")[0])

    first = found["results"][0]
    assert first["key"].endswith("#rolling-back-a-release")
    assert first["matched_by"] == "keyword"
    assert found["notices"] == [
        missing_vectors.unembedded_notice(1),
        missing_vectors.PENDING_NOTICE,
    ]
    assert "1 memory matching the query's words has no vector yet" in found["notices"][0]
    block, said = cli("context", "--query", QUESTION)
    assert block.index("rollback") < block.index("pull requests")
    assert missing_vectors.PENDING_NOTICE in said
