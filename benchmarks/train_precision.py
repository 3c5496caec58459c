"""Mixed-precision training against float32, and heads against overfitting: the two tables of
the Train page's experiments, measured here.

    .venv/bin/python benchmarks/train_precision.py [--threads 1] [--steps 150] [--seeds 3]
        [--skip precision|overfit] [--device cpu]

Precision: the Train page's default model (reverse, 16 tokens, 2 layers × 4 heads, d_model 64,
batch 64) trained from one seed on the same batches in each precision (`compare_precisions`):
time per update by `tformer.timing.measure` (median, IQR, settled or not, "busy" when other
programs took a share of the CPU or other work ran), peak memory of an update (CPU: the torch
profiler's memory events; CUDA: the allocator), held-out accuracy at the end.

Overfitting: the page's grid (`GridSettings`: reverse, 12 tokens from 16 symbols, one layer,
d_model 64, 1/2/4/8/16 heads, 64..1024 training sequences, 300 updates of batch 32) over
``--seeds`` seeds: training and held-out token accuracy, the gap with its range over seeds,
then the sentence the page shows.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.training.overfit import GridSettings, run_grid, summarize, verdict
from tformer.training.precision_train import (
    PrecisionSettings,
    compare_precisions,
    cpu_bf16_flags,
    describe,
    precisions_for,
)


def _plain(template: str, values: dict[str, object]) -> str:
    return template.format(
        **{k: _plain(v.template, dict(v.values)) if hasattr(v, "template") else v for k, v in values.items()}
    )


def precision(args: argparse.Namespace) -> None:
    settings = PrecisionSettings(
        device=args.device, precisions=precisions_for(args.device), steps=args.steps, budget_s=args.budget_s
    )
    print(f"\nMixed precision (reverse, 2 layers x 4 heads, d_model 64, batch 64, {settings.steps} updates):")
    if args.device == "cpu":
        print(f"CPU bfloat16 instructions in /proc/cpuinfo: {cpu_bf16_flags() or 'none'}")
    start = time.perf_counter()
    result = compare_precisions(settings)
    assert result is not None
    rows = []
    for r in result.runs:
        t = r.timing
        note = ("settled" if t.settled else "unsettled") + (", busy" if t.load.busy else "")
        peak = "-" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.1f}"
        rows.append(
            [
                r.precision,
                "yes" if r.scale is not None else "no",
                f"{t.median * 1e3:.1f}",
                f"{t.q1 * 1e3:.1f}-{t.q3 * 1e3:.1f} (n={t.n})",
                peak,
                f"{r.losses[-1]:.4f}",
                f"{r.accuracy:.1%}",
                r.updates,
                note,
            ]
        )
    header = [
        "precision",
        "scaler",
        "ms/update",
        "IQR ms",
        "peak MiB",
        "final loss",
        "held-out acc",
        "updates",
        "note",
    ]
    print_table(header, rows)
    print(f"memory by: {result.runs[0].memory_method}; whole comparison {time.perf_counter() - start:.0f} s")
    for note in (*result.notes, *describe(result)):
        print("-", _plain(note.template, dict(note.values)))


def overfit(args: argparse.Namespace) -> None:
    settings = GridSettings(seeds=args.seeds, device=args.device)
    print(
        f"\nHeads and overfitting ({settings.task}, {settings.length} tokens from {settings.vocab} symbols, "
        f"{settings.n_layers} layer, d_model {settings.d_model}, {settings.updates} updates of batch "
        f"{settings.batch}, {settings.seeds} seed(s), held-out {settings.n_held_out} sequences):"
    )
    cells = []
    start = time.perf_counter()
    refusal = run_grid(
        settings,
        budget_bytes=2**30,
        budget_s=args.grid_budget_s,
        on_plan=lambda s: print(f"predicted {s / 60:.1f} min"),
        on_done=cells.append,
    )
    if refusal is not None:
        print("refused:", _plain(refusal.template, dict(refusal.values)))
        return
    rows = [
        [
            s.size,
            s.n_heads,
            f"{s.train_accuracy:.1%}",
            f"{s.held_out_accuracy:.1%}",
            f"{s.gap:.1%}",
            f"{s.gap_min:.1%}..{s.gap_max:.1%}",
            f"{s.gap_loss:.3f}",
        ]
        for s in summarize(cells).values()
    ]
    print_table(["sequences", "heads", "train acc", "held-out acc", "gap", "seeds' range", "loss gap"], rows)
    print(f"grid trained in {time.perf_counter() - start:.0f} s")
    for note in verdict(settings, cells):
        print("-", _plain(note.template, dict(note.values)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--budget-s", type=float, default=600.0, help="the precision comparison's training")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--grid-budget-s", type=float, default=3600.0)
    parser.add_argument("--skip", choices=["precision", "overfit"], default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"device {args.device}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f}")
    if args.skip != "precision":
        precision(args)
    if args.skip != "overfit":
        overfit(args)


if __name__ == "__main__":
    main()
