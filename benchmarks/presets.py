"""How long each preset of the Train page takes here, and whether its claim held on each run:
every preset trained ``--runs`` times (its seed, no early stop) on ``--threads`` threads.

    .venv/bin/python benchmarks/presets.py [--runs 3] [--threads 1] [--only reverse]

Time: the wall time of one whole run (training, its evaluations and snapshots, the role scores
of each snapshot), by `tformer.timing.measure` with its repeats fixed at ``--runs``: the median,
the quartiles, and "busy" with the share of the CPU other programs took meanwhile. "CPU s" is
the training thread's own CPU time (`time.thread_time`, one thread: torch computes on the
caller's thread), the median over the runs: about what a run takes on a core of its own,
whatever else the machine does (cache and memory contention aside).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.timing import measure
from tformer.training.presets import PRESETS, Preset, PresetRun, check_claim, run_preset

HEADER = ["preset", "updates", "s/run", "IQR s", "CPU s", "first head (update)", "claim", "note"]


def _timed_run(preset: Preset, runs: list[PresetRun], cpu: list[float]) -> None:
    start = time.thread_time()
    runs.append(run_preset(preset))
    cpu.append(time.thread_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=list(PRESETS), default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for key, preset in PRESETS.items():
        if args.only not in (None, key):
            continue
        runs: list[PresetRun] = []
        cpu: list[float] = []
        t = measure(
            functools.partial(_timed_run, preset, runs, cpu),
            min_repeats=args.runs,
            max_repeats=args.runs,
            max_seconds=float("inf"),
            warmup=0,
        )
        firsts = sorted(
            {c.step for r in runs for c in r.timeline.formed(final=True) if c.role == preset.claim.role}
        )
        held = sum(not check_claim(preset.claim, r.timeline, r.evals) for r in runs)
        busy = (
            f"busy: others took {t.load.other_cpu:.0%} of the CPU" if t.load.busy and t.load.other_cpu else ""
        )
        rows.append(
            [key, preset.recipe.steps, t.median, f"{t.q1:.1f}-{t.q3:.1f} (n={t.n})", statistics.median(cpu),
             ", ".join(map(str, firsts)), f"{held}/{len(runs)} held", busy]
        )  # fmt: skip
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    print_table(HEADER, rows)


if __name__ == "__main__":
    main()
