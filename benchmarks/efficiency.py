"""The costs page's default sweeps, all three, as the page runs them: the n² wall, attention
against a GRU, sparse against dense attention.

    python benchmarks/efficiency.py [--device cpu] [--threads N]

Prints one row per measured point (method, n, time ms, peak MiB, the method's fitted time
exponent), why each method stopped, and the total wall time (the acceptance bar: at most 30 s
on 2 CPU cores). Threads default to what the app uses (`tformer.ui.process.app_threads`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import print_table

from tformer.efficiency.costs import wall_sweep
from tformer.efficiency.measure import MIB, Note
from tformer.efficiency.rnn import rnn_sweep
from tformer.efficiency.sparse_costs import sparse_sweep
from tformer.model.device import pick_device
from tformer.ui.process import app_threads


def english(template: str, /, **values: object) -> str:
    return template.format(**values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="default: tformer.model.device.pick_device()")
    parser.add_argument("--threads", type=int, default=None, help="default: the app's (half the cores)")
    args = parser.parse_args()
    device = str(args.device or pick_device())
    torch.set_num_threads(args.threads or app_threads())

    last = [0.0]

    def progress(fraction: float, note: Note) -> None:
        if fraction - last[0] >= 0.25 or fraction >= 1.0:
            last[0] = fraction
            print(f"  {fraction:4.0%} {note.render(english)}", file=sys.stderr)

    start = time.perf_counter()
    rows: list[list[object]] = []
    stops: list[str] = []
    for sweep_fn in (wall_sweep, rnn_sweep, sparse_sweep):
        last[0] = -1.0
        sweep = sweep_fn(None, device, progress)
        print(
            f"{sweep.kind}: {sweep.seconds:.1f} s on {sweep.device} ({sweep.device_name}), "
            f"{sweep.threads} threads, memory by {sweep.memory_method}",
            file=sys.stderr,
        )
        for c in sweep.curves:
            fit = c.time_fit
            # an exponent only from a good fit; else its R² (or "-" with fewer than 2 points)
            exp = "-" if fit is None else f"{fit.exponent:.2f}" if fit.good else f"noisy (R² {fit.r2:.2f})"
            for p in c.points:
                peak = "-" if p.peak_bytes is None else f"{p.peak_bytes / MIB:.2f}"
                spread = f"{p.q1_s * 1e3:.3g}-{p.q3_s * 1e3:.3g}"
                rows.append([sweep.kind, c.method, p.n, p.time_s * 1e3, spread, p.repeats, peak, exp])
            stops.append(
                f"{sweep.kind}/{c.method}: {c.stop.render(english) if c.stop else 'reached the longest length'}"
            )
    total = time.perf_counter() - start
    print_table(["sweep", "method", "n", "time ms", "quartiles ms", "calls", "peak MiB", "exponent"], rows)
    print()
    print("\n".join(stops))
    print(f"\ntotal wall time: {total:.1f} s (device {device}, {torch.get_num_threads()} torch threads)")


if __name__ == "__main__":
    main()
