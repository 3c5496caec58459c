"""What "the same run without ..." shows on this machine: the Train page's comparisons, measured.

For each task, the page's default model (2 layers, 4 heads, d_model 64, pre-norm) is trained
with a base recipe, then again with one setting switched off exactly as the page's buttons do
(`tformer.training.compare.variant`: same seed, task and held-out set). The base is the default
`Recipe` with label smoothing 0.1 and dropout 0.1 added (``--base default`` leaves them off), so
all five switches have something to switch off. Each row: held-out token accuracy after a few
update counts and the updates to 99 % (every 20 updates, as the page evaluates), one value per
seed.

    .venv/bin/python benchmarks/train_variants.py [--tasks reverse,sort] [--seeds 0,1,2]
        [--updates 60,120,240,480] [--threads 1] [--base smoothed|default]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.training.compare import VARIANTS, SavedRun, curves_of, variant
from tformer.training.recipe import Recipe, model_config
from tformer.training.tasks import TaskSpec
from tformer.training.trainer import Trainer

TARGET = 0.99
BASES = {"smoothed": Recipe(label_smoothing=0.1, dropout=0.1), "default": Recipe()}


def accuracies(cfg, spec: TaskSpec, recipe: Recipe, marks: list[int]) -> tuple[list[float], int | None]:
    """Held-out accuracy at each of ``marks`` updates, and the first evaluation at >= TARGET."""
    trainer = Trainer(cfg, spec, recipe)
    seen: dict[int, float] = {}

    def stop() -> bool:
        return trainer.step_count >= max(marks)

    trainer.run(stop=stop, on_eval=lambda step, acc: seen.__setitem__(step, acc))
    reached = next((s for s, a in sorted(seen.items()) if a >= TARGET), None)
    at = []
    for m in marks:
        if m not in seen:  # a mark between evaluations: measure it by training to it
            raise ValueError(f"update {m} is not a multiple of eval_every={recipe.eval_every}")
        at.append(seen[m])
    return at, reached


def rows_for(task: str, base: Recipe, seeds: list[int], marks: list[int]) -> list[list[object]]:
    spec = TaskSpec(task)
    rows = []
    for key in (None, *VARIANTS):
        per_seed = []
        for seed in seeds:
            recipe = dataclasses.replace(base, seed=seed, steps=max(marks))
            run = SavedRun.unsaved("base", spec, model_config(spec), recipe, curves_of(None, None))
            cfg, r = (run.cfg, run.recipe) if key is None else (variant(run, key) or (run.cfg, run.recipe))
            per_seed.append(accuracies(cfg, spec, r, marks))
        name = "base" if key is None else VARIANTS[key]
        cells = ["/".join(f"{100 * acc[i]:.0f}" for acc, _ in per_seed) for i in range(len(marks))]
        reached = "/".join(str(r) if r is not None else f">{max(marks)}" for _, r in per_seed)
        rows.append([task, name, *cells, reached])
        print(f"  {task}: {name} done", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="reverse,sort")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--updates", default="60,120,240,480")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--base", default="smoothed", choices=sorted(BASES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    marks = [int(m) for m in args.updates.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    base = BASES[args.base]
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f}; base: "
        f"{'default recipe' if args.base == 'default' else 'default recipe + label smoothing 0.1 + dropout 0.1'}; "
        f"held-out token accuracy (%) per seed {args.seeds}"
    )
    rows = [row for task in args.tasks.split(",") for row in rows_for(task, base, seeds, marks)]
    print_table(["task", "run", *(f"after {m}" for m in marks), "updates to 99 %"], rows)


if __name__ == "__main__":
    main()
