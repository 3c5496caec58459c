r"""How to train a small encoder on a synthetic task (`tformer.training.tasks`): the settings.

A `Recipe` holds every setting with its one-line help (`recipe_help`), the learning-rate schedule
is `noam_lr` (plotted by `schedule_curve`), and `model_config` sizes the model's config for a
task. `tformer.training.trainer.Trainer` runs a recipe, one optimizer step at a time.

Text a reader sees is English here and goes through `tformer.i18n.tr`: the help texts are
catalog templates (the page translates them) and validation errors are worded in the language
of the thread that raises them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ..i18n import tr
from ..model.config import EncoderConfig
from .tasks import TaskSpec, task_tokenizer

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "Recipe",
    "model_config",
    "noam_lr",
    "recipe_help",
    "schedule_curve",
]

OPTIMIZERS = ("adam", "adamw")
SCHEDULES = ("noam", "constant")


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class Recipe:
    """How to train: optimizer, schedule, regularisation, batch and run length.

    The defaults reach 99 % held-out token accuracy in a few seconds on copy, reverse and sort
    (16 tokens from 16 symbols) with the default model of `model_config`. Each field's help text
    is in its metadata (`recipe_help`).
    """

    optimizer: str = field(
        default="adamw", metadata=_help("adam or adamw (AdamW decays the weights apart from the gradient).")
    )
    lr: float = field(default=7e-3, metadata=_help("Peak learning rate, reached at the end of warm-up."))
    betas: tuple[float, float] = field(
        default=(0.9, 0.99), metadata=_help("Adam's decay rates for the gradient's mean and square (β1, β2).")
    )
    eps: float = field(
        default=1e-9, metadata=_help("Adam's ε: keeps the update finite when the square is ~0.")
    )
    weight_decay: float = field(
        default=0.01, metadata=_help("Pulls weight matrices toward 0 each step (biases and norms excluded).")
    )
    schedule: str = field(
        default="noam",
        metadata=_help("noam: warm up, then decay as 1/√step; constant: warm up, then hold the peak."),
    )
    warmup: int = field(default=50, metadata=_help("Steps of linear warm-up from 0 to the peak lr."))
    ramp: bool = field(
        default=True,
        metadata=_help("Ramp the lr up from 0 in warm-up; off: the peak from step 1, the same decay after."),
    )
    clip: float = field(
        default=1.0,
        metadata=_help("Largest global gradient norm; larger gradients are scaled down (0 = off)."),
    )
    label_smoothing: float = field(
        default=0.0, metadata=_help("Share ε of the target's probability spread over all classes (0 = off).")
    )
    dropout: float = field(
        default=0.0, metadata=_help("Probability of zeroing an activation while training (0 = off).")
    )
    batch: int = field(default=64, metadata=_help("Sequences per micro-batch."))
    accum: int = field(
        default=1, metadata=_help("Micro-batches summed per update: the update sees batch × accum sequences.")
    )
    steps: int = field(default=2000, metadata=_help("Most updates to run (training may stop earlier)."))
    eval_every: int = field(default=20, metadata=_help("Measure held-out accuracy every this many updates."))
    snapshot_every: int = field(
        default=5, metadata=_help("Record the probe's attention patterns every this many updates.")
    )
    seed: int = field(default=0, metadata=_help("Seeds the initial weights, the batches and dropout."))

    def __post_init__(self) -> None:
        for name, choices in (("optimizer", OPTIMIZERS), ("schedule", SCHEDULES)):
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(
                    tr("{name}={value!r} is not one of {choices}", name=name, value=value, choices=choices)
                )
        if not (isinstance(self.lr, int | float) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(tr("lr={value!r} must be a positive number", value=self.lr))
        b1, b2 = self.betas
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(tr("betas={value!r} must both be in [0, 1)", value=self.betas))
        if not self.eps > 0:
            raise ValueError(tr("eps={value!r} must be > 0", value=self.eps))
        for name in ("weight_decay", "clip"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(tr("{name}={value!r} must be a finite number >= 0", name=name, value=value))
        for name in ("label_smoothing", "dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(tr("{name}={value!r} must be in [0, 1)", name=name, value=value))
        for name in ("batch", "accum", "steps", "eval_every", "snapshot_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(tr("{name}={value!r} must be a positive integer", name=name, value=value))
        for name in ("warmup", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    tr("{name}={value!r} must be a non-negative integer", name=name, value=value)
                )
        if not isinstance(self.ramp, bool):
            raise ValueError(tr("ramp={value!r} must be true or false", value=self.ramp))
        if self.schedule == "noam" and self.warmup < 1:
            raise ValueError(tr("warmup=0 with schedule='noam': the 1/√step decay needs warmup >= 1"))

    def lr_at(self, step: int) -> float:
        """The learning rate of update ``step`` (1 is the first); without the ramp, the updates
        of the warm-up take the rate of its last one (the peak)."""
        if not self.ramp and step >= 1:
            step = max(step, self.warmup)
        if self.schedule == "noam":
            return noam_lr(step, peak=self.lr, warmup=self.warmup)
        return self.lr * min(1.0, step / self.warmup) if self.warmup else self.lr


def recipe_help() -> dict[str, str]:
    """Field name -> its one-line help, in field order (what the page shows beside each setting).

    English: each text is a catalog template, the page shows ``tr(text)``."""
    return {f.name: f.metadata["help"] for f in fields(Recipe)}


def noam_lr(step: int, *, peak: float, warmup: int) -> float:
    r"""The Transformer's schedule: linear warm-up, then decay as 1/√step, peaking at ``peak``.

    .. math::
        \mathrm{lr}(s) = \mathrm{peak}\cdot\min\!\left(\frac{s}{w},\ \sqrt{\frac{w}{s}}\right)

    This is the paper's :math:`d_{model}^{-0.5}\cdot\min(s^{-0.5},\ s\cdot w^{-1.5})` times
    :math:`\mathrm{peak}\cdot\sqrt{d_{model}\,w}`: the same shape, scaled so that the value at
    :math:`s = w` is ``peak`` (the paper's d_model = 512, w = 4000 peak at ≈ 7.0e-4).
    """
    if warmup < 1:
        raise ValueError(tr("warmup={value!r} must be >= 1", value=warmup))
    if step <= 0:
        return 0.0
    return peak * min(step / warmup, math.sqrt(warmup / step))


def schedule_curve(recipe: Recipe) -> tuple[np.ndarray, np.ndarray]:
    """(steps, lrs) for updates 1..recipe.steps, to plot the schedule beside its settings."""
    steps = np.arange(1, recipe.steps + 1)
    return steps, np.array([recipe.lr_at(int(s)) for s in steps], dtype=np.float64)


def model_config(
    task_spec: TaskSpec,
    n_layers: int = 2,
    n_heads: int = 4,
    d_model: int = 64,
    d_ff: int | None = None,
    pos_encoding: str = "sinusoidal",
    norm: str = "pre",
    dropout: float = 0.0,
) -> EncoderConfig:
    """An encoder sized for ``task_spec``: its vocabulary and output head are the task's ids, its
    max_len the task's length. The defaults are the page's default model."""
    n_ids = task_tokenizer(task_spec).vocab_size
    return EncoderConfig(
        vocab_size=n_ids,
        max_len=task_spec.length,
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        d_ff=d_ff,
        pos_encoding=pos_encoding,
        norm=norm,
        dropout=dropout,
        n_outputs=n_ids,
    )
