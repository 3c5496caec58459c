"""Peak memory and time of one training step: with and without activation checkpointing
(against length and layers), and a whole batch against the same batch as accumulated
micro-batches (against batch size). Reverse task, d_model 64, 4 heads, float32.

    .venv/bin/python benchmarks/train_memory.py [--threads 1] [--budget-mib 1024]

Memory: what the CPU profiler's memory events (CUDA: the allocator) saw above what was held
when the step began. Time: `tformer.timing.measure` (median of calls repeated until the
spread settles; IQR shown; "busy" when other programs took a share of the CPU). A shape whose
estimate (`training_memory_bytes`) exceeds the budget is refused before anything is built.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.training.memory import MemoryRow, SweepSetup, accumulation_sweep, checkpoint_sweep


def _cells(row: MemoryRow) -> list[object]:
    shape: list[object] = [row.layers, row.length, row.batch, row.micro, "yes" if row.checkpoint else "no"]
    if row.cost is None:
        note = row.skipped.render(lambda template, **values: template.format(**values)) if row.skipped else ""
        return [*shape, "-", "-", "-", note]
    t = row.cost.timing
    peak = "-" if row.cost.peak_bytes is None else f"{row.cost.peak_bytes / 2**20:.1f}"
    note = ("settled" if t.settled else "unsettled") + (", busy" if t.load.busy else "")
    return [*shape, peak, f"{t.median * 1e3:.1f}", f"{t.q1 * 1e3:.1f}-{t.q3 * 1e3:.1f} (n={t.n})", note]


HEADER = ["layers", "length", "batch", "micro", "ckpt", "peak MiB", "ms/step", "IQR ms", "note"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--budget-mib", type=int, default=1024)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    setup = SweepSetup(args.budget_mib * 2**20, device=args.device)
    print(f"device {args.device}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f}")
    print("\nActivation checkpointing (batch 32):")
    rows = checkpoint_sweep([32, 64, 128], [2, 4, 8], setup)
    print_table(HEADER, [_cells(r) for r in rows])
    print("\nGradient accumulation (length 64, 4 layers; micro = 4 accumulated micro-batches):")
    rows = accumulation_sweep([16, 32, 64, 128], setup, micro=4)
    print_table(HEADER, [_cells(r) for r in rows])


if __name__ == "__main__":
    main()
