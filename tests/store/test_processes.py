"""Several real `memory-mcp serve` processes on one SQLite file, each with concurrent writers
and readers, as a lead and its workers load a store: no call fails, no acknowledged write is
lost, the file stays sound. (The harness is `python -m bench stress`, which also prints the
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
        # Four stores per writer: the 32 writers' first stores are all in flight at once,
        # queued on the one file (asserted below: every process's writes overlap every
        # other's). 10 paid about twice the stores' CPU for more of the same overlap, 25
        # six times.
        stores=4,
        # A read per reader at the start (while the models load), then one per 4 stores
        # its process has acknowledged: about 16 reads per process among its writes,
        # however loaded the machine. Reading flat out until the writers finished
        # (~125 reads per process) was a third of the servers' CPU.
        read_every=4,
        burst=0,
        # The writes start as the models start loading, as after a real start. How many
        # land before a model is ready depends on the machine (0-6 seen; the report prints
        # it): a timing, not asserted.
        warm_up=False,
    )
    report = await run_stress(config, progress=print)
    print(report.render())
    assert report.stores.errors == {}
    assert report.reads.errors == {}
    assert len(report.acknowledged) == 4 * 8 * 4
    assert report.missing == 0
    assert (report.integrity, report.fts_integrity) == ("ok", "ok")
    assert report.tracebacks == 0, "nothing unexpected in the servers' logs"
    # What makes it a concurrency test, checked rather than hoped for.
    starts, ends = zip(*report.write_windows, strict=True)
    assert len(starts) == 4 and max(starts) < min(ends), "the four processes wrote at once"
    assert len(report.reads.seconds) >= 4 * 2, "every reader read while its process wrote"
