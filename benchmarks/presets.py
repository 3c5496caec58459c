"""How long each preset of the Train page takes here, and whether its claim held on each run:
every preset trained ``--runs`` times (its seed, no early stop) on ``--threads`` threads.

    .venv/bin/python benchmarks/presets.py [--runs 3] [--threads 1] [--only reverse]

Time: the wall time of one whole run (training, its evaluations and snapshots, the role scores
of each snapshot), by `tformer.timing.measure` with its repeats fixed at ``--runs``: the median,
the quartiles, and "busy" with the share of the CPU other programs took meanwhile. "CPU s" is
the training thread's own CPU time (`time.thread_time`, one thread: torch computes on the
caller's thread), the median over the runs: about what a run takes on a core of its own,
whatever else the machine does (cache and memory contention aside). "first head" is the update
at which the first head of the claim's layer took the claim's role in each run (the rule of
`tformer.training.role_timeline`), and "CPU s to it" the training thread's CPU time from the
run's start until that snapshot's role scores were recorded (the evaluations and snapshots
before it included: what a class waits for), the median over the runs. The ``cpu_seconds`` of
each preset in `tformer/training/presets.py` are these two CPU columns.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.timing import measure
from tformer.training.presets import PRESETS, Preset, PresetRun, check_claim, run_preset

HEADER = [
    "preset",
    "updates",
    "s/run",
    "IQR s",
    "CPU s",
    "first head (update)",
    "CPU s to it",
    "acc > 50 % at",
    "acc >= 99 % at",
    "claim",
    "note",
]


@dataclass
class _Runs:
    """What each run of one preset gave: the run, its thread CPU seconds in all, the update of
    its first head and the CPU seconds until it (None when no head of the claim's layer took
    the role)."""

    runs: list[PresetRun] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    first: list[int | None] = field(default_factory=list)
    to_first: list[float | None] = field(default_factory=list)


def _timed_run(preset: Preset, into: _Runs) -> None:
    start = time.thread_time()
    at: dict[int, float] = {}
    run = run_preset(preset, on_snapshot=lambda step: at.setdefault(step, time.thread_time() - start))
    into.cpu.append(time.thread_time() - start)
    into.runs.append(run)
    c = preset.claim
    first = next(
        (x.step for x in run.timeline.formed(final=True) if (x.role, x.layer) == (c.role, c.layer)), None
    )
    into.first.append(first)
    into.to_first.append(None if first is None else at[first])


def _first_eval(runs: list[PresetRun], reached: Callable[[float], bool]) -> str:
    """Each run's first evaluated update whose held-out accuracy ``reached`` says yes to; "-"
    when none did."""
    firsts = (next((e["step"] for e in r.evals if reached(e["accuracy"])), "-") for r in runs)
    return ", ".join(map(str, firsts))


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
        got = _Runs()
        t = measure(
            functools.partial(_timed_run, preset, got),
            min_repeats=args.runs,
            max_repeats=args.runs,
            max_seconds=float("inf"),
            warmup=0,
        )
        c = preset.claim
        to_first = [x for x in got.to_first if x is not None]
        held = sum(not check_claim(c, r.timeline, r.evals) for r in got.runs)
        busy = (
            f"busy: others took {t.load.other_cpu:.0%} of the CPU" if t.load.busy and t.load.other_cpu else ""
        )
        rows.append(
            [key, preset.recipe.steps, t.median, f"{t.q1:.1f}-{t.q3:.1f} (n={t.n})", statistics.median(got.cpu),
             ", ".join("-" if f is None else str(f) for f in got.first), statistics.median(to_first) if to_first else "-",
             _first_eval(got.runs, lambda a: a > 0.5), _first_eval(got.runs, lambda a: a >= 0.99),
             f"{held}/{len(got.runs)} held", busy]
        )  # fmt: skip
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    print_table(HEADER, rows)


if __name__ == "__main__":
    main()
