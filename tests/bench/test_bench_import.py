"""The import benchmark runs and reports what it measured (numbers come from running it,
never from a timed test)."""

from __future__ import annotations

from pathlib import Path

from bench.importing import format_report, measure_import


def test_import_benchmark_measures_rows_and_embedding(tmp_path: Path) -> None:
    result = measure_import(tmp_path, size=40, runs=1, end_to_end=False)
    assert result["size"] == 40
    assert result["rows_per_s_median"] > 0
    assert result["embed_texts_per_s"] > 0
    report = format_report(result)
    assert "rows (check + write, no model)" in report
    assert "texts/s" in report
