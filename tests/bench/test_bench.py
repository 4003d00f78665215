"""The benchmark harnesses on tiny inputs: the numbers get computed and reported. No
quality or speed thresholds here (benchmarks are not timed tests); `python -m bench`
(`make bench-NAME`) measures those. tests/data/locomo_tiny.json is a made-up conversation
in LoCoMo's format, tests/data/turns_tiny.json one in the format REALTALK and BEAM were
converted to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.command import main as bench_main
from bench.latency import SyntheticText, measure_size
from bench.latency import render as render_latency
from bench.locomo import load_conversation, recall_at, run_locomo
from bench.settings import server_env, store_settings
from bench.stats import percentile_ms, table
from memory_mcp.cli.main import build_parser, main
from memory_mcp.semantic.embeddings import Embedder

TINY = Path(__file__).parents[1] / "data" / "locomo_tiny.json"
TURNS_TINY = Path(__file__).parents[1] / "data" / "turns_tiny.json"
ROOT = Path(__file__).resolve().parents[2]


def lab(argv: list[str]) -> int:
    """`python -m bench ARGV` from the clone's root, as `make bench-NAME ARGS=...` runs it;
    its output is the test's (capfd)."""
    return subprocess.run([sys.executable, "-m", "bench", *argv], cwd=ROOT, timeout=600).returncode


def test_loading_follows_the_protocol() -> None:
    conversation = load_conversation(TINY)
    assert conversation.name == "locomo_tiny"
    assert len(conversation.turns) == 17  # every turn of every session, in order
    assert conversation.turns[0].key == "D1:1"
    assert conversation.turns[0].value == "Ines: Morning Tomas! How was the weekend?"
    assert conversation.turns[-1].key == "D3:5"
    # Category 5 and questions without evidence are not queries.
    assert [q.category for q in conversation.questions] == [4, 4, 1, 2, 4, 3]
    assert conversation.questions[2].evidence == ["D1:3", "D1:5"]


def test_the_turns_format_is_read_by_its_keys() -> None:
    conversation = load_conversation(TURNS_TINY)
    assert conversation.name == "turns_tiny"
    assert [t.key for t in conversation.turns][:3] == ["D1:1", "D1:2", "D1:3"]
    assert conversation.turns[3].value == "Mira: two trout, grilled them that night"
    assert [t.session for t in conversation.turns] == ["session_1"] * 4 + ["session_2"] * 3 + [
        "session_3"
    ] * 2
    # A question without evidence is no query; categories are the set's names.
    assert [q.category for q in conversation.questions] == ["multi-hop", "temporal", "commonsense"]
    assert conversation.questions[1].evidence == ["D2:1", "D2:3"]


def test_recall_is_the_share_of_evidence_in_the_top_k() -> None:
    retrieved = ["a", "b", "c", "d", "e", "f"]
    assert recall_at(["b", "z"], retrieved, 5) == 0.5
    assert recall_at(["f"], retrieved, 5) == 0.0
    assert recall_at(["f"], retrieved, 10) == 1.0
    assert recall_at(["a", "a"], retrieved, 1) == 1.0  # a repeated id counts once


def test_stats_helpers() -> None:
    assert percentile_ms([0.001, 0.002, 0.003], 50) == pytest.approx(2.0)
    assert percentile_ms([], 95) == 0.0
    rendered = table(["name", "value"], [["x", 0.5], ["longer", 12]])
    assert rendered.splitlines()[2].split() == ["x", "0.500"]


@pytest.mark.anyio
async def test_locomo_harness_on_one_small_conversation(
    real_embedder: Embedder,
) -> None:
    report = await run_locomo([load_conversation(TINY)], real_embedder)
    summary = report.summary()
    assert summary["turns"] == 17
    assert summary["refused_turns"] == 0
    assert summary["overall"]["questions"] == 6
    assert set(summary["by_category"]) == {"1", "2", "3", "4"}
    for part in [summary["overall"], *summary["by_category"].values()]:
        assert 0.0 <= part["recall@5"] <= part["recall@10"] <= 1.0
    assert summary["ingest_turns_per_second"] > 0
    assert 0 < summary["search_ms_p50"] <= summary["search_ms_p95"]
    for result in report.results:
        assert 0 < len(result.retrieved) <= 10  # limit 10, through the real search
        assert set(result.retrieved) <= {t.key for t in load_conversation(TINY).turns}
    rendered = report.render()
    assert "R@5" in rendered
    assert "category 4" in rendered
    assert "turns/s" in rendered
    data = json.loads(json.dumps(report.to_json()))
    assert len(data["questions"]) == 6


@pytest.mark.anyio
async def test_projects_harness_ranks_each_project_as_if_alone(
    real_embedder: Embedder,
) -> None:
    """Two conversations (the tiny one twice, under two names: the same keys and words in
    both projects, the worst case for a leak) in a store each and in one store, a project
    each: every question's top 10 is the same list."""
    from dataclasses import replace

    from bench.locomo import load_conversation
    from bench.projects import run_projects

    tiny = load_conversation(TINY)
    report = await run_projects([tiny, replace(tiny, name="twin")], real_embedder, print)
    summary = report.summary()
    assert (summary["conversations"], summary["turns"], summary["questions"]) == (2, 34, 12)
    assert summary["questions_with_another_top10"] == 0
    assert summary["alone"] == summary["together"]
    assert 0.0 < summary["alone"]["recall@5"] <= summary["alone"]["recall@10"] <= 1.0
    assert report.together.retrieved["twin"] == report.together.retrieved[tiny.name]
    assert "one store, a project each" in report.render()


def test_bench_locomo_prints_a_table_and_writes_json(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`python -m bench` from the clone, a process of its own, as `make bench` runs it."""
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "tiny.json").write_text(TINY.read_text())
    out = tmp_path / "result.json"
    assert lab(["locomo", str(folder), "--json", str(out)]) == 0
    assert "locomo (turn level)" in capfd.readouterr().out
    data = json.loads(out.read_text())
    assert data["summary"]["overall"]["questions"] == 6


def test_bench_retrieval_reads_both_formats_each_set_apart(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`bench retrieval DIR DIR`: each folder is a set with its own table; --cache-vectors
    keeps the model's vectors for the next run; --no-sessions runs without context."""
    sets = {"locomo-like": TINY, "chats": TURNS_TINY}
    folders = []
    for name, source in sets.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / source.name).write_text(source.read_text())
        folders.append(str(folder))
    out, cache = tmp_path / "result.json", tmp_path / "cache"
    argv = ["retrieval", *folders, "--json", str(out), "--cache-vectors", str(cache)]
    assert lab(argv) == 0
    printed = capfd.readouterr().out
    assert "locomo-like (turn level)" in printed and "chats (turn level)" in printed
    assert "category temporal" in printed and "category 4" in printed
    data = json.loads(out.read_text())
    assert data["chats"]["summary"]["overall"]["questions"] == 3
    assert data["locomo-like"]["summary"]["overall"]["questions"] == 6
    assert (cache / "minilm.npz").stat().st_size > 0
    assert lab([*argv, "--no-sessions"]) == 0
    again = json.loads(out.read_text())
    assert again["chats"]["summary"]["overall"]["questions"] == 3


def test_the_installed_command_has_no_bench(capsys: pytest.CaptureFixture[str]) -> None:
    """The lab is not the product: `memory-mcp` offers no `bench` (the wheel holds no bench
    module either: tests/test_packaging.py)."""
    assert "bench" not in build_parser().format_help()
    with pytest.raises(SystemExit) as exited:
        main(["bench", "startup", "--runs", "1"])
    assert exited.value.code == 2
    assert "invalid choice: 'bench'" in capsys.readouterr().err


def test_synthetic_text_is_deterministic_and_zipfian() -> None:
    first, second = SyntheticText(seed=3), SyntheticText(seed=3)
    memories = [first.memory() for _ in range(200)]
    assert memories == [second.memory() for _ in range(200)]
    words = " ".join(memories).lower().replace(".", "").split()
    common = first.words[0]
    assert words.count(common) > len(words) / 30  # the top word is everywhere
    assert len(set(words)) > 500  # and most words are rare


@pytest.mark.anyio
async def test_latency_harness_on_a_small_store(tmp_path: Path, real_embedder: Embedder) -> None:
    result = await measure_size(tmp_path / "store", 300, real_embedder, queries=6)
    assert result.build_seconds is not None
    assert result.build_seconds > 0
    summary = result.summary()
    assert summary["memories"] == 300
    assert set(summary["search_ms"]) == {"all", "selective", "common", "question"}
    assert all(ms["p50"] > 0 for ms in summary["search_ms"].values())
    assert set(summary["part_ms_p50"]) == {"selective", "common", "question"}
    assert set(summary["part_ms_p50"]["common"]) == {
        "embed query",
        "keyword (FTS5)",
        "vector scan",
        "read facts + results",
    }
    again = await measure_size(tmp_path / "store", 300, real_embedder, queries=3)
    assert again.build_seconds is None  # the built store is reused
    assert "300" in render_latency([result, again])


def test_bench_settings_ignore_the_users_environment_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("max_value_chars = 70\n", encoding="utf-8")
    monkeypatch.setenv("MEMORY_MCP_CONFIG", str(config))
    monkeypatch.setenv("MEMORY_MCP_AGENT_ID", "someone")
    monkeypatch.setenv("MEMORY_MCP_SEARCH_VALUE_CHARS", "60")
    settings = store_settings(tmp_path)
    assert settings.agent_id == "bench"
    assert settings.search_value_chars == 1_000
    assert settings.max_value_chars == 65_536
    assert settings.database_file == (tmp_path / "memory.db").resolve()


def test_bench_servers_get_none_of_the_users_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_MCP_DB", "/somewhere/else.db")
    monkeypatch.setenv("MEMORY_MCP_CONFIG", "/somewhere/config.toml")
    env = server_env(tmp_path / "scratch", embedder="sentence-transformers")
    assert "MEMORY_MCP_DB" not in env
    assert Path(env["MEMORY_MCP_CONFIG"]).read_text(encoding="utf-8") == ""
    assert env["MEMORY_MCP_EMBEDDER"] == "sentence-transformers"


def test_python_dash_m_bench_runs_the_same_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        bench_main(["latency", "--help"])
    assert exited.value.code == 0
    assert "--sizes" in capsys.readouterr().out


def test_rule_entities_read_names_and_identifiers_without_a_model() -> None:
    from bench.entities import rule_entities

    found = rule_entities(
        "Thanks! Melanie went to the Grand Canyon with @sam_k; see PaymentService.refund "
        "and gen-0042 in /srv/app/config.yaml"
    )
    assert {"melanie", "grand canyon", "@sam_k", "paymentservice.refund", "gen-0042"} <= found
    assert "/srv/app/config.yaml" in found
    assert "thanks" not in found and "the" not in found


@pytest.mark.anyio
async def test_links_harness_measures_expand_with_and_without_links(
    real_embedder: Embedder,
) -> None:
    from dataclasses import replace

    from bench.entities import rule_entities
    from bench.links import BASELINE, run_links

    tiny = load_conversation(TINY)
    pair = [tiny, replace(tiny, name="locomo_tiny_2")]
    report = await run_links(pair, real_embedder, rule_entities, "rules", lambda _line: None)
    assert len(report.answers[BASELINE]) == 12  # 6 questions, twice
    assert len(report.answers) == 1 + 27  # the baseline and the grid
    assert all(len(answers) == 12 for answers in report.answers.values())
    assert report.links["locomo_tiny"][30] >= report.links["locomo_tiny"][3] > 0
    rendered = report.render()
    assert "cat1 R@5" in rendered and "leave one conversation out" in rendered
    data = json.loads(json.dumps(report.to_json()))
    assert set(data["leave_one_out"]["chosen"]) == {"locomo_tiny", "locomo_tiny_2"}
    for numbers in data["settings"].values():
        assert 0.0 <= numbers["recall@5"] <= numbers["recall@10"] <= 1.0


def test_bench_store_times_stores_over_stdio_and_their_parts(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`bench store`: every turn stored through a real server, then searches; the parts of
    a store measured in process; the near-duplicate hint seen in the answers."""
    out = tmp_path / "store.json"
    assert (
        bench_main(
            ["store", str(TINY.parent), "--conversation", TINY.stem, "--searches", "4"]
            + ["--json", str(out)]
        )
        == 0
    )
    printed = capfd.readouterr().out
    assert "memory-store" in printed and "memory-search" in printed
    data = json.loads(out.read_text())
    assert data["turns"] == 17
    assert data["similar_checked"] == 17  # the model was loaded: every store compared
    assert 0 < data["store_ms"]["p50"] <= data["store_ms"]["p95"]
    assert 0 < data["search_ms"]["p50"] <= data["search_ms"]["p95"]
    assert data["server_cpu_ms_per_store"] > 0  # the server's own CPU, read from /proc
    parts = data["parts_ms_p50"]
    assert {"checks", "model", "model per store", "memory write", "vector write"} <= set(parts)
    assert "similar check" in parts
    assert all(value > 0 for value in parts.values())
    assert data["fsync_ms"]["p50"] > 0
    assert len(data["load_average"]) == 3
