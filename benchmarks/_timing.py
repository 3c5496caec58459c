"""Timing helpers shared by the benchmark scripts: the app's own rule (`tformer.timing`)."""

from __future__ import annotations

from collections.abc import Callable

from tformer.timing import measure


def median_ms(fn: Callable[[], object], runs: int = 9, warmup: int = 2) -> float:
    """Median wall time of fn() in milliseconds over exactly ``runs`` calls, after warm-up
    calls (`tformer.timing.measure` with its bounds fixed at ``runs``)."""
    t = measure(fn, min_repeats=runs, max_repeats=runs, max_seconds=float("inf"), warmup=warmup)
    return 1e3 * t.median


def print_table(header: list[str], rows: list[list[object]]) -> None:
    cells = [header] + [[f"{c:.2f}" if isinstance(c, float) else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for i, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
