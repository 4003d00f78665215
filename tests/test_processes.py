"""Several real `memory-mcp serve` processes on one SQLite file, each with concurrent writers
and readers, as a lead and its workers load a store: no call fails, no acknowledged write is
lost, the file stays sound. (The harness is `memory-mcp bench stress`, which also prints the
latencies; a test asserts outcomes, not times.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.stress import StressConfig, run_stress

pytestmark = pytest.mark.anyio


async def test_four_processes_of_eight_writers_lose_nothing_and_fail_nothing(
    tmp_path: Path,
) -> None:
    config = StressConfig(
        workdir=tmp_path,
        processes=4,
        writers=8,
        readers=2,
        # Ten stores per writer: all 32 writers still overlap one another and the four
        # models' loads (what loses writes or locks the file); 25 paid 2.5x the CPU for
        # more of the same overlap.
        stores=10,
        burst=0,
        warm_up=False,  # the models load while the writes run, as after a real start
    )
    report = await run_stress(config, progress=print)
    print(report.render())
    assert report.stores.errors == {}
    assert report.reads.errors == {}
    assert len(report.acknowledged) == 4 * 8 * 10
    assert report.missing == 0
    assert (report.integrity, report.fts_integrity) == ("ok", "ok")
    assert report.tracebacks == 0, "nothing unexpected in the servers' logs"
