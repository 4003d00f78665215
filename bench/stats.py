"""Small numeric helpers shared by the benchmarks: percentiles and a plain-text table."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    """The q-th percentile of durations given in seconds, in milliseconds (0 when empty)."""
    if not seconds:
        return 0.0
    return float(np.percentile(np.asarray(seconds, dtype=np.float64), q) * 1000.0)


def p50_p95_ms(seconds: Sequence[float]) -> dict[str, float]:
    """A run's median and 95th percentile, in milliseconds to 2 decimals."""
    return {
        "p50": round(percentile_ms(seconds, 50), 2),
        "p95": round(percentile_ms(seconds, 95), 2),
    }


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A left-aligned first column, right-aligned numbers; floats printed with 3 decimals."""

    def cell(value: object) -> str:
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [
        max(len(str(h)), *(len(r[i]) for r in cells)) if cells else len(str(h))
        for i, h in enumerate(header)
    ]
    lines = []
    for values in [list(map(str, header)), *cells]:
        parts = [values[0].ljust(widths[0])] + [
            v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(parts))
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
