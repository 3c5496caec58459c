"""Tiny saved runs for the tests of the runs table and the overlay: trained here for a few
updates by the real `Trainer` and saved by the real `save_run`, with the history the Train
page saves (`tformer.training.compare.saved_history`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tformer.training.checkpoints import save_run
from tformer.training.compare import saved_history
from tformer.training.recipe import Recipe, model_config
from tformer.training.tasks import TaskSpec, example_texts, task_tokenizer
from tformer.training.trainer import Trainer

TASK = TaskSpec("reverse", length=6, vocab=5)
RECIPE = Recipe(warmup=4, eval_every=4, batch=16, steps=2000)


@dataclass
class Trained:
    """What `train_and_save` trained: the trainer (its model, config and recipe) and what it
    reported, as the Train page records it."""

    trainer: Trainer
    steps: list[dict[str, Any]]
    evals: list[dict[str, Any]]


def train_and_save(
    folder: Path, updates: int = 8, recipe: Recipe = RECIPE, task: TaskSpec = TASK, **model: object
) -> Trained:
    """Train ``updates`` updates of a 1-layer, 2-head, d_model 16 encoder (``model`` overrides
    its config) and save it in ``folder`` as the Train page does."""
    cfg = dataclasses.replace(model_config(task, n_layers=1, n_heads=2, d_model=16), **model)
    trainer = Trainer(cfg, task, recipe, n_held_out=32)
    steps, evals = [], [{"step": 0, "accuracy": trainer.evaluate()}]
    for _ in range(updates):
        s = trainer.step()
        steps.append(
            {"step": s.step, "loss": s.loss, "lr": s.lr, "grad_norm": s.grad_norm, "seconds": s.seconds}
        )
        if s.step % recipe.eval_every == 0:
            evals.append({"step": s.step, "accuracy": trainer.evaluate()})
    acc = trainer.evaluate()
    if evals[-1]["step"] != trainer.step_count:
        evals.append({"step": trainer.step_count, "accuracy": acc})
    save_run(
        folder,
        trainer.model.eval(),
        task_tokenizer(task),
        task=dataclasses.asdict(task),
        recipe=dataclasses.asdict(recipe),
        history=saved_history(steps, evals, accuracy=acc, step=trainer.step_count),
        examples=example_texts(task, 2),
    )
    return Trained(trainer, steps, evals)
