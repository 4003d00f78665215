"""`bench store --peer`: our server and the peer driven side by side in one run. The peer
here is a FAKE (the real one, mcp-memory-service, is built outside the repository by
../shared/tools/peer/setup_peer.sh): a few lines answering its two tools over stdio, laid
out where the bench looks for the peer's Python. What is tested is the bench's plumbing:
both servers get every turn and every question, the ratios and the load are reported."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bench.command import main as bench_main

TINY = Path(__file__).parents[1] / "data" / "locomo_tiny.json"

# The peer's two tools, answered at once; each call counted in CALLS (a file).
FAKE_PEER = """
import json, os, sys
calls = os.environ["FAKE_PEER_CALLS"]
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake-peer", "version": "0"}}
    else:
        tool = message["params"]["name"]
        with open(calls, "a") as out:
            out.write(json.dumps([tool, message["params"]["arguments"]]) + "\\n")
        result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def fake_peer_root(root: Path) -> Path:
    python = root / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    script = root / "fake_peer.py"
    script.write_text(FAKE_PEER, encoding="utf-8")
    # The bench runs `PYTHON -m mcp_memory_service.server`: the fake ignores its arguments.
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n", encoding="utf-8")
    python.chmod(0o755)
    return root


def test_bench_store_beside_the_peer_gives_both_every_call(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "peer-calls.jsonl"
    monkeypatch.setenv("FAKE_PEER_CALLS", str(calls))
    root = fake_peer_root(tmp_path / "peer")
    out = tmp_path / "beside.json"
    arguments = ["store", str(TINY.parent), "--conversation", TINY.stem, "--searches", "3"]
    assert bench_main([*arguments, "--peer", str(root), "--json", str(out)]) == 0
    printed = capfd.readouterr().out
    assert "store: ours" in printed and "store: peer" in printed
    assert "p50 ours / peer: store" in printed
    data = json.loads(out.read_text())
    assert len(data["load_average"]) == 3
    for side in ("ours", "peer"):
        assert 0 < data[side]["store_ms"]["p50"] <= data[side]["store_ms"]["p95"]
        assert 0 < data[side]["search_ms"]["p50"]
    ratios = data["p50_ratio_ours_over_peer"]
    assert ratios["store"] == pytest.approx(
        data["ours"]["store_ms"]["p50"] / data["peer"]["store_ms"]["p50"], rel=0.01
    )
    # The peer got each of the 17 turns as its tools take them, then the 3 questions.
    sent = [json.loads(line) for line in calls.read_text().splitlines()]
    stores = [arguments for tool, arguments in sent if tool == "memory_store"]
    searches = [arguments for tool, arguments in sent if tool == "memory_search"]
    assert len(stores) == 17
    assert all(s["content"] and s["metadata"]["tags"][0] == "locomo" for s in stores)
    assert len(searches) == 1 + 3  # the warm-up, then the questions
    assert all(s["limit"] == 10 and s["mode"] == "hybrid" for s in searches[1:])


def test_bench_store_says_where_the_peer_is_missing(tmp_path: Path) -> None:
    arguments = ["store", str(TINY.parent), "--conversation", TINY.stem, "--searches", "1"]
    with pytest.raises(SystemExit, match="setup_peer.sh"):
        bench_main([*arguments, "--peer", str(tmp_path / "nowhere")])
