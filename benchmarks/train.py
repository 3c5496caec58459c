"""Time to 99 % held-out token accuracy for the training page's default model and recipe.

Copy, reverse and sort of 16 tokens drawn from 16 symbols; the default model (2 layers, 4
heads, d_model 64, pre-norm, sinusoidal positions) and the default `Recipe`, with the live
updates the page makes included: held-out accuracy every ``eval_every`` updates and the probe's
attention patterns every ``snapshot_every``. The clock covers `Trainer.run` (the model is built
before it starts; the build time has its own column). Reference: the times FIELD_NOTES
measured without live updates (`REFERENCE_S`); goal: at most 1.5x.

Two recipes: "default" (`Recipe()`, with `Trainer`'s default held-out set) and "notes", the
recipe FIELD_NOTES measured (batch 128, AdamW 3e-3, 100 warm-up steps), evaluated on 512
held-out sequences every 25 updates.

    .venv/bin/python benchmarks/train.py [--threads 2] [--seeds 0,1,2] [--recipes default,notes]

Each row runs the recipe once per seed (the seed moves the initial weights and the batches, so
the steps needed vary) and shows the median time; the steps column lists every seed's count.

Other processes on the two cores slow two-thread training far more than they slow one
thread: the load average is printed with the table; compare runs made on a quiet machine.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import print_table

from tformer.training.recipe import Recipe, model_config
from tformer.training.tasks import TaskSpec
from tformer.training.trainer import Trainer

REFERENCE_S = {"copy": 0.9, "reverse": 1.7, "sort": 5.1}
GOAL = 1.5
TARGET = 0.99


RECIPES: dict[str, tuple[Recipe, dict[str, int]]] = {
    "default": (Recipe(), {}),
    "notes": (Recipe(batch=128, lr=3e-3, warmup=100, eval_every=25, snapshot_every=25), {"n_held_out": 512}),
}


def one_run(
    name: str, recipe: Recipe, threads: int, trainer_kw: dict[str, int]
) -> tuple[float, float, int, int, int, float]:
    """(build s, run s, steps, evals, snapshots, accuracy) of one run to the target."""
    spec = TaskSpec(name)
    start = time.perf_counter()
    trainer = Trainer(model_config(spec), spec, recipe, threads=threads, **trainer_kw)
    built = time.perf_counter() - start
    snapshots: list[np.ndarray] = []
    evals: list[float] = []
    summary = trainer.run(
        until_acc=TARGET,
        on_eval=lambda step, acc: evals.append(acc),
        on_snapshot=lambda step, pattern: snapshots.append(pattern),
    )
    if summary.reason != "target":
        print(f"  {name}: stopped without reaching {TARGET:.0%}: {summary}", file=sys.stderr)
    return built, summary.seconds, summary.steps, len(evals), len(snapshots), summary.accuracy or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seeds", default="0,1,2", help="one run per seed; the median time is shown")
    parser.add_argument("--tasks", default="copy,reverse,sort")
    parser.add_argument("--recipes", default="default,notes")
    args = parser.parse_args()

    print(
        f"torch {torch.__version__}, {args.threads} threads, load average {os.getloadavg()[0]:.2f} "
        f"on {os.cpu_count()} cores"
    )
    default_held_out = inspect.signature(Trainer).parameters["n_held_out"].default
    for label in args.recipes.split(","):
        recipe, kw = RECIPES[label]
        print(
            f"  {label}: {recipe.optimizer} lr {recipe.lr:g}, {recipe.schedule} warm-up {recipe.warmup}, "
            f"clip {recipe.clip:g}, batch {recipe.batch}, eval every {recipe.eval_every} on "
            f"{kw.get('n_held_out', default_held_out)} held-out sequences, snapshot every "
            f"{recipe.snapshot_every}"
        )
    print()
    seeds = [int(x) for x in args.seeds.split(",")]
    rows: list[list[object]] = [
        task_row(label, name, args.threads, seeds)
        for label in args.recipes.split(",")
        for name in args.tasks.split(",")
    ]
    print_table(
        [
            "recipe",
            "task",
            "steps",
            "evals",
            "snapshots",
            "min held-out acc",
            "build ms",
            "run s (median)",
            "range s",
            "steps/s",
            "reference s",
            "ratio",
            f"<= {GOAL}x",
        ],
        rows,
    )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


def task_row(label: str, name: str, threads: int, seeds: list[int]) -> list[object]:
    """One table row: one run of a recipe on a task per seed, the median time."""
    recipe, kw = RECIPES[label]
    runs = [one_run(name, replace(recipe, seed=seed), threads, kw) for seed in seeds]
    times = [r[1] for r in runs]
    median = statistics.median(times)
    ref = REFERENCE_S[name]
    return [
        label,
        name,
        "/".join(str(r[2]) for r in runs),
        "/".join(str(r[3]) for r in runs),
        "/".join(str(r[4]) for r in runs),
        f"{100 * min(r[5] for r in runs):.1f}%",
        1e3 * statistics.median(r[0] for r in runs),
        median,
        f"{min(times):.2f}-{max(times):.2f}",
        sum(r[2] for r in runs) / sum(times),
        ref,
        f"{median / ref:.2f}x",
        "yes" if median / ref <= GOAL else "no",
    ]


if __name__ == "__main__":
    main()
