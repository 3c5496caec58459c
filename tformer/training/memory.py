r"""What one training step holds in memory, and two ways to hold less (seed 004's lessons).

**Activation checkpointing.** Autograd keeps every block's intermediate results (the q, k, v,
the [query_pos, key_pos] scores and weights, the FFN's hidden layer ...) from the forward pass
until the backward pass needs them. `checkpointed` wraps each block in
``torch.utils.checkpoint``: the forward pass keeps only each block's input, and the backward
pass runs the block again to get the rest. Memory falls from all the layers' activations to one
layer's (plus every layer's input); time rises by about one more forward pass.

**Gradient accumulation.** A batch too large for memory is split into micro-batches: each runs
forward and backward on its own, and its gradients add up in ``.grad``. Weighting micro-batch
i's mean loss by :math:`n_i / N` (its share of the batch's tokens) makes the sum exactly the
gradient of the whole batch's mean loss,

.. math::
    \nabla \frac{1}{N}\sum_{t=1}^{N} \ell_t
    = \sum_i \frac{n_i}{N}\,\nabla \frac{1}{n_i} \sum_{t \in i} \ell_t ,

while the activations held at once are those of one micro-batch.

Peak memory is what the allocator (CUDA) or the profiler's memory events (CPU) saw above what
was held when the step began (`tformer.efficiency.measure.peak_memory`); times follow the
project's rule (`tformer.timing.measure`: repeated until the spread is small).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from ..efficiency.measure import Note, memory_method, peak_memory
from ..model.encoder import Encoder
from ..timing import Timing, measure
from .recipe import Recipe, model_config
from .tasks import TaskSpec, make_batch
from .trainer import label_smoothed_loss, training_memory_bytes

__all__ = [
    "MemoryRow",
    "StepCost",
    "SweepSetup",
    "accumulated_gradients",
    "accumulation_sweep",
    "checkpoint_sweep",
    "checkpointed",
    "step_cost",
    "step_work",
]

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs [batch, pos], targets [batch, pos]


@contextmanager
def checkpointed(model: Encoder) -> Iterator[Encoder]:
    """Inside the block, each of ``model``'s blocks runs under ``torch.utils.checkpoint``: its
    activations are recomputed in the backward pass instead of kept. The model's parameters,
    outputs and gradients are the same; on leaving, the blocks run as before."""
    originals = [block.forward for block in model.blocks]

    def wrap(forward: Any) -> Any:
        def run(*args: Any) -> Any:
            if not torch.is_grad_enabled():  # nothing to save: checkpointing would only cost
                return forward(*args)
            return checkpoint(forward, *args, use_reentrant=False)

        return run

    for block, forward in zip(model.blocks, originals, strict=True):
        block.forward = wrap(forward)
    try:
        yield model
    finally:
        for block in model.blocks:
            del block.forward  # the instance attribute goes; the class's forward is back


def accumulated_gradients(
    model: Encoder, batches: Sequence[Batch], *, smoothing: float = 0.0
) -> dict[str, torch.Tensor]:
    """The gradient of the mean token loss over all ``batches`` together, accumulated one
    micro-batch at a time (each loss weighted by its share of the tokens): a copy of every
    parameter's gradient, by name. The model's ``.grad`` are left zeroed (set to None)."""
    if not batches:
        raise ValueError("accumulated_gradients needs at least one micro-batch")
    total = sum(int(targets.numel()) for _, targets in batches)
    model.zero_grad(set_to_none=True)
    for inputs, targets in batches:
        loss = label_smoothed_loss(model.logits(inputs), targets, smoothing)
        (loss * (targets.numel() / total)).backward()
    grads = {
        name: (p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p))
        for name, p in model.named_parameters()
    }
    model.zero_grad(set_to_none=True)
    return grads


@dataclass(frozen=True)
class StepCost:
    """One training step's cost: ``peak_bytes`` above what was held before it (None where the
    device has no measurement), how it was measured (``memory_method``), and its time."""

    peak_bytes: int | None
    memory_method: str
    timing: Timing


def step_cost(
    model: Encoder,
    batches: Sequence[Batch],
    *,
    checkpoint_blocks: bool = False,
    smoothing: float = 0.0,
    max_seconds: float = 1.0,
) -> StepCost:
    """Peak memory and time of one forward and backward pass over ``batches`` (accumulated as
    `accumulated_gradients` does), with or without `checkpointed` blocks."""
    device = next(model.parameters()).device

    def one_step() -> None:
        if checkpoint_blocks:
            with checkpointed(model):
                accumulated_gradients(model, batches, smoothing=smoothing)
        else:
            accumulated_gradients(model, batches, smoothing=smoothing)

    peak = peak_memory(one_step, device)
    sync = torch.cuda.synchronize if device.type == "cuda" else None
    timing = measure(one_step, max_seconds=max_seconds, sync=sync)
    return StepCost(peak, memory_method(device), timing)


# --- sweeps: one row per shape, each guarded before anything is built -------------------------

# A checkpointed step runs each block's forward pass twice: about 4/3 of a plain step's work
# (the backward pass costs about two forward passes).
CHECKPOINT_WORK = 4 / 3
# A row runs its step at most about this many times besides the timed repeats' max_seconds: the
# profiler's call (slower than a plain one), measure's warm-up, and a timed call that may end
# past max_seconds (`tformer.timing.measure` stops timing once max_seconds have passed).
ROW_CALLS = 4


def step_work(layers: int, length: int, batch: int, d_model: int) -> float:
    r"""A training step's work, up to a constant factor, to predict a shape's time from another's:
    per token and layer, the four :math:`d_{model} \times d_{model}` projections and the FFN's two
    :math:`d_{model} \times 4d_{model}` matrices (:math:`12\,d_{model}^2` multiply-adds) and
    attention's two products over ``length`` keys (:math:`2\,\text{length}\cdot d_{model}`)."""
    return float(batch * length * layers * (12 * d_model + 2 * length) * d_model)


@dataclass(frozen=True)
class MemoryRow:
    """One measured (or refused) training step: the shape, how it ran, and its cost.

    ``micro`` micro-batches of ``batch // micro`` sequences each; ``estimate_bytes`` is
    `training_memory_bytes` for the shape, checked against the budget before the model is
    built; ``skipped`` says why a row was not run (``cost`` is then None), as an English
    template and its values (`Note.render`)."""

    layers: int
    length: int
    batch: int
    micro: int
    checkpoint: bool
    estimate_bytes: int
    cost: StepCost | None
    skipped: Note | None = None


def _batches(spec: TaskSpec, batch: int, micro: int, device: torch.device, seed: int) -> list[Batch]:
    """``batch`` sequences of the task, cut into ``micro`` micro-batches (the same sequences
    whatever ``micro``, so rows differ only in how the step is split)."""
    x, y = make_batch(spec, np.random.default_rng(seed), batch)
    xs = torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64)).to(device)
    ys = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64)).to(device)
    return list(zip(xs.chunk(micro), ys.chunk(micro), strict=True))


@dataclass(frozen=True)
class SweepSetup:
    """What every row of a sweep shares: the task, the model width, the memory budget a shape's
    estimate must fit, the device, the time each row's timing may take, the seed, and the time
    the whole sweep may take (``total_seconds``: a row predicted to end past it is not run)."""

    budget_bytes: int
    task: str = "reverse"
    d_model: int = 64
    device: str = "cpu"
    max_seconds: float = 1.0
    seed: int = 0
    total_seconds: float = math.inf


@dataclass
class _Clock:
    """A sweep's time so far and its last measured row, to predict the next row's time."""

    setup: SweepSetup
    start: float = field(default_factory=time.perf_counter)
    last: tuple[float, float] | None = None  # (work, seconds per step) of the last measured row

    def refuse(self, work: float) -> Note | None:
        """Why a row of this much work is not run: the row before it predicts that it would end
        past the sweep's time; None when it may run (always the first row)."""
        if self.last is None or math.isinf(self.setup.total_seconds):
            return None
        guess = self.setup.max_seconds + ROW_CALLS * self.last[1] * work / self.last[0]
        spent = time.perf_counter() - self.start
        if spent + guess <= self.setup.total_seconds:
            return None
        return Note.of(
            "not run: about {guess:.0f} s more, past the sweep's {total:.0f} s",
            guess=guess,
            total=self.setup.total_seconds,
        )

    def measured(self, row: MemoryRow, work: float) -> None:
        if row.cost is not None:
            self.last = (work, row.cost.timing.median)


def _row(
    spec: TaskSpec,
    layers: int,
    batch: int,
    micro: int,
    checkpoint_blocks: bool,
    setup: SweepSetup,
    clock: _Clock | None = None,
) -> MemoryRow:
    """One shape: refused when its estimate exceeds the budget or (with ``clock``) when it
    would end past the sweep's time, else built and measured."""
    cfg = model_config(spec, n_layers=layers, d_model=setup.d_model)
    estimate = training_memory_bytes(cfg, Recipe(batch=batch))
    work = step_work(layers, spec.length, batch, setup.d_model) * (
        CHECKPOINT_WORK if checkpoint_blocks else 1
    )
    skipped = None
    cost = None
    if estimate > setup.budget_bytes:
        skipped = Note.of(
            "needs up to {need:.0f} MiB, over the budget of {budget:.0f} MiB",
            need=estimate / 2**20,
            budget=setup.budget_bytes / 2**20,
        )
    elif clock is not None:
        skipped = clock.refuse(work)
    if skipped is None:
        device = torch.device(setup.device)
        torch.manual_seed(setup.seed)
        model = Encoder(cfg).to(device).train()
        batches = _batches(spec, batch, micro, device, setup.seed)
        cost = step_cost(model, batches, checkpoint_blocks=checkpoint_blocks, max_seconds=setup.max_seconds)
    row = MemoryRow(layers, spec.length, batch, micro, checkpoint_blocks, estimate, cost, skipped)
    if clock is not None:
        clock.measured(row, work)
    return row


def checkpoint_sweep(
    lengths: Sequence[int],
    layers: Sequence[int],
    setup: SweepSetup,
    *,
    batch: int = 32,
) -> list[MemoryRow]:
    """A training step with and without `checkpointed` blocks, for every length and layer
    count (each once, in increasing order): two rows per shape (plain first). A shape whose
    estimate exceeds the budget is refused before anything is built; a row that the row
    measured before it predicts past ``setup.total_seconds`` is not run."""
    clock = _Clock(setup)
    return [
        _row(TaskSpec(setup.task, length=n), n_layers, batch, 1, ck, setup, clock)
        for n in sorted(set(lengths))
        for n_layers in sorted(set(layers))
        for ck in (False, True)
    ]


def accumulation_sweep(
    batches: Sequence[int],
    setup: SweepSetup,
    *,
    micro: int = 4,
    length: int = 64,
    layers: int = 4,
) -> list[MemoryRow]:
    """For every batch size: one step over the whole batch, and the same sequences as
    ``micro`` accumulated micro-batches (two rows per size, the whole batch first)."""
    uneven = [b for b in batches if b % micro]
    if uneven:
        raise ValueError(f"batch sizes {uneven} do not split into {micro} equal micro-batches")
    spec = TaskSpec(setup.task, length=length)
    return [_row(spec, layers, b, k, False, setup) for b in batches for k in (1, micro)]
