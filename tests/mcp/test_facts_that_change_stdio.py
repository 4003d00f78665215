"""Facts that change, over a real `memory-mcp serve` on stdio with the real embedding model
(rules/validity.py, search/time_cues.py): a fact corrected with `supersedes`, and one
updated under its key, leave default search and the <memories> block, come back with
`include_superseded` (marked), and `as_of` a time before the correction answers with the
old value; memory-history shows the windows. Then time in the question: "what did we
decide last week" over memories dated by an import ranks last week's decision first, and
`explain` shows the range it read."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextResourceContents

from tests.conftest import call
from tests.mcp.test_stdio_e2e import EXE, server_env, spawned
from tests.mcp.test_stdio_search_write import wait_for_the_model

pytestmark = pytest.mark.anyio


def _ids(results: dict[str, Any]) -> list[int]:
    return [hit["id"] for hit in results["results"]]


async def _block(client: Client) -> str:
    resource = (await client.read_resource("memory://context")).contents[0]
    assert isinstance(resource, TextResourceContents)
    return resource.text


async def test_a_corrected_fact_leaves_default_reads_and_stays_in_the_past(
    tmp_path: Path,
) -> None:
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        await wait_for_the_model(client)
        old = await call(
            client,
            "memory-store",
            key="deploy-region",
            value="We deploy the API to the zurich-west cluster.",
        )
        editor = await call(
            client, "memory-store", key="editor", value="The user edits code in Sublime Text."
        )
        # Between the two writes: the server stamps the correction after this answer.
        before = datetime.now(UTC).isoformat()
        new = await call(
            client,
            "memory-store",
            key="deploy-target",
            value="Correction: the API now deploys to the oslo-north cluster.",
            supersedes=old["id"],
        )
        updated = await call(
            client, "memory-store", key="editor", value="The user edits code in Neovim."
        )

        default = await call(client, "memory-search", query="which cluster does the API deploy to")
        zurich = await call(client, "memory-search", query="zurich-west")
        sublime = await call(client, "memory-search", query="Sublime Text editor")
        block = await _block(client)
        shown = await call(
            client,
            "memory-search",
            query="which cluster does the API deploy to",
            include_superseded=True,
        )
        shown_editor = await call(
            client, "memory-search", query="Sublime Text editor", include_superseded=True
        )
        then = await call(
            client, "memory-search", query="which cluster does the API deploy to", as_of=before
        )
        then_editor = await call(client, "memory-search", query="editor", as_of=before)
        got_then = await call(client, "memory-get", id=editor["id"], as_of=before)
        got_old = await call(client, "memory-get", id=old["id"])
        listed = await call(client, "memory-list")
        listed_all = await call(client, "memory-list", include_superseded=True)
        history = await call(client, "memory-history", id=editor["id"])

    # Default reads: the correction only.
    assert new["id"] in _ids(default) and old["id"] not in _ids(default)
    assert old["id"] not in _ids(zurich)
    assert all("Sublime" not in hit["value"] for hit in sublime["results"])
    assert "zurich-west" not in block and "Sublime" not in block
    assert "oslo-north" in block and "Neovim" in block
    assert old["id"] not in [m["id"] for m in listed["memories"]]
    # include_superseded: the closed memory and the replaced version, marked.
    closed = next(hit for hit in shown["results"] if hit["id"] == old["id"])
    assert closed["superseded_by"] == new["id"] and closed["valid_to"]
    past = next(hit for hit in shown_editor["results"] if "Sublime" in hit["value"])
    assert past["id"] == editor["id"] and past["version"] == 1 and past["valid_to"]
    assert past["matched_by"] == "history"
    assert old["id"] in [m["id"] for m in listed_all["memories"]]
    # as_of before the corrections: the old values.
    assert old["id"] in _ids(then) and new["id"] not in _ids(then)
    as_then = next(hit for hit in then_editor["results"] if hit["id"] == editor["id"])
    assert "Sublime" in as_then["value"]
    assert "Sublime" in got_then["value"] and got_then["version"] == 1
    # memory-get reads the corrected memory by id, with its window and the link.
    assert got_old["superseded_by"] == new["id"] and got_old["valid_to"]
    assert updated["version"] == 2
    versions = history["versions"]
    assert versions[0]["valid_to"] == versions[1]["written_at"]
    assert versions[1]["current"] and versions[1].get("valid_to") is None


def _import(tmp_path: Path, lines: list[dict[str, Any]]) -> None:
    """Dated memories, as an export carries them, through the real `memory-mcp import`."""
    path = tmp_path / "dated.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    subprocess.run(
        [EXE, "import", str(path), "--db", str(tmp_path / "shared.db"), "--agent-id", "w1"],
        env=server_env(tmp_path),
        check=True,
        capture_output=True,
        timeout=300,
    )


async def test_time_in_the_question_ranks_by_when_it_was_stated(tmp_path: Path) -> None:
    now = datetime.now().astimezone()
    monday = (now - timedelta(days=now.weekday())).replace(hour=12, minute=0, second=0)
    last_week = monday - timedelta(days=4)  # Thursday of last week
    earlier = monday - timedelta(days=40)
    _import(
        tmp_path,
        [
            {
                "key": "decision-queue",
                "value": "We decided to use RabbitMQ for the job queue.",
                "updated_at": earlier.isoformat(),
            },
            {
                "key": "decision-cache",
                "value": "We decided to put Redis in front of the search API.",
                "updated_at": last_week.isoformat(),
            },
            {
                "key": "decision-logging",
                "value": "We decided that every service logs JSON lines to stderr.",
                "updated_at": earlier.isoformat(),
            },
        ],
    )
    async with spawned(tmp_path, "--agent-id", "w1") as client:
        await wait_for_the_model(client)
        asked = await call(
            client, "memory-search", query="what did we decide last week", explain=True
        )
        plain = await call(client, "memory-search", query="what did we decide", explain=True)
        explicit = await call(
            client,
            "memory-search",
            query="what did we decide last week",
            since=earlier.isoformat(),
            explain=True,
        )

    top = asked["results"][0]
    assert top["key"] == "decision-cache"
    cue = asked["time_cue"]
    assert cue["expression"] == "last week" and cue["applied"] is True
    start = datetime.fromisoformat(cue["since"])
    end = datetime.fromisoformat(cue["until"])
    assert end - start == timedelta(days=7) and start <= last_week < end
    assert top["explain"]["time"] == 1.0
    assert all(hit["explain"]["time"] == 0.5 for hit in asked["results"][1:])
    assert "time_cue" not in plain  # no time in the question
    assert "time_cue" not in explicit  # since/until win over the words
