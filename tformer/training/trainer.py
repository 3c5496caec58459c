r"""Training a small encoder on a synthetic task (`tformer.training.tasks`), one optimizer step at a time.

The settings are a `Recipe` (`tformer.training.recipe`: every setting with its one-line help,
the learning-rate schedule, the model's config for a task). A `Trainer`'s `Trainer.step` does
one update, and `Trainer.evaluate` and `Trainer.snapshot` give held-out accuracy and the
probe's attention patterns to replay while the heads form. The loss is the token-level
cross-entropy with label smoothing (`label_smoothed_loss`).

Nothing here changes torch's global state (threads, seeds) unless asked (``threads=``).

Text a reader sees is English here and goes through `tformer.i18n.tr`: validation errors are
worded in the language of the thread that raises them, and `Trainer.divergence` gives a
template and its values (a training thread has no reader's language).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from ..i18n import tr
from ..model.capture import capture_ids
from ..model.config import EncoderConfig
from ..model.encoder import Encoder
from .recipe import Recipe
from .tasks import TaskSpec, as_text, held_out_set, make_batch, task_tokenizer

__all__ = [
    "RunSummary",
    "StepStats",
    "Trainer",
    "label_smoothed_loss",
    "training_memory_bytes",
]


def training_memory_bytes(cfg: EncoderConfig, recipe: Recipe) -> int:
    r"""An upper estimate of the memory one `Trainer` of ``cfg`` and ``recipe`` holds at its
    peak (a training step's backward pass), in bytes, computed before anything is built.

    With :math:`P` parameters, :math:`N = \text{batch}\cdot T` tokens of length :math:`T`
    (``cfg.max_len``, the task's length), :math:`L` layers, :math:`H` heads, :math:`V` output
    classes, in float32 (4 bytes):

    .. math::
        16P + 4N\,\bigl(L\,(10\,d_{model} + 2\,d_{mlp}) + 4\,d_{model} + 4V\bigr)
        + [\text{dropout} > 0]\;4\,L\,\bigl(4\,\text{batch}\,H\,T^2 + 4N d_{model}\bigr)
        + 300\,\text{MiB}

    the weights, their gradients and Adam's two moments (16P); the activations autograd keeps
    for the backward pass, per token and layer; the logits and their gradient; with dropout,
    attention runs unfused (PyTorch's fused CPU kernel has no dropout), so every layer keeps
    its [batch, head_index, query_pos, key_pos] scores, weights and dropout mask; and what a
    run holds besides (its held-out set, snapshots, the allocator's slack). The coefficients
    were fitted to peak RSS measured on 17 shapes here (1 to 6 layers, d_model 64 to 256,
    batch 64 to 512, 16 and 64 tokens, with and without dropout): the estimate was 1.07x to
    1.45x the measurement, never under it (tests/test_training.py checks two shapes again).
    Micro-batches of a gradient accumulation run one after another, so ``accum`` adds nothing.
    """
    d, f, L, T = cfg.d_model, cfg.d_mlp, cfg.n_layers, cfg.max_len
    tokens = recipe.batch * T
    total = 16 * cfg.n_params() + 4 * tokens * (L * (10 * d + 2 * f) + 4 * d + 4 * max(cfg.n_outputs, 1))
    if recipe.dropout > 0:
        total += 4 * L * (4 * recipe.batch * cfg.n_heads * T * T + 4 * tokens * d)
    return total + 300 * 2**20


def label_smoothed_loss(logits: torch.Tensor, targets: torch.Tensor, smoothing: float) -> torch.Tensor:
    r"""Mean token cross-entropy of logits [batch, pos, n_outputs] against targets [batch, pos],
    with label smoothing ε spread over the V output classes:

    .. math::
        \mathcal{L} = -\sum_{c=1}^{V} q_c \log p_c,\qquad
        q_c = (1-\varepsilon)\,[c = y] + \frac{\varepsilon}{V},\qquad
        p = \mathrm{softmax}(\mathrm{logits})

    A uniform prediction costs log V whatever ε; ε > 0 keeps the loss above 0 even for a
    perfect answer, so the model stops sharpening its softmax.
    """
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), label_smoothing=smoothing
    )


@dataclass(frozen=True)
class StepStats:
    """One update: its number (1 is the first), the mean loss of its batch, the learning rate it
    used, the global gradient norm before clipping and its wall time."""

    step: int
    loss: float
    lr: float
    grad_norm: float
    seconds: float


@dataclass(frozen=True)
class RunSummary:
    """How `Trainer.run` ended. ``reason``: "target" (accuracy reached), "steps" (recipe.steps
    done), "stopped" (stop() said so) or "diverged" (``message`` says which setting to lower)."""

    reason: str
    steps: int
    accuracy: float | None  # the last held-out accuracy measured, None if none was
    seconds: float
    message: str = ""


Batch = tuple[torch.Tensor, torch.Tensor]  # (inputs, targets), each [batch, pos] int64


class Trainer:
    """A model, its optimizer and the task's data, trained one `step` at a time.

    The recipe's ``dropout`` and ``seed`` replace the config's (``trainer.cfg`` is the model's
    real config). The held-out set (``n_held_out`` sequences) and the probe (its first
    sequence, ``probe_text``) are fixed for the whole run. ``threads`` calls
    ``torch.set_num_threads`` (process-wide) when given.
    """

    def __init__(
        self,
        cfg: EncoderConfig,
        task_spec: TaskSpec,
        recipe: Recipe | None = None,
        device: str | torch.device = "cpu",
        *,
        n_held_out: int = 256,
        threads: int | None = None,
    ) -> None:
        recipe = Recipe() if recipe is None else recipe
        n_ids = task_tokenizer(task_spec).vocab_size
        if cfg.n_outputs != n_ids or cfg.vocab_size < n_ids or cfg.max_len < task_spec.length:
            raise ValueError(
                tr(
                    "config (vocab_size={vocab_size}, n_outputs={n_outputs}, max_len={max_len}) does not "
                    "fit task {task!r} ({n_ids} ids, length {length}): build it with model_config(task_spec, ...)",
                    vocab_size=cfg.vocab_size,
                    n_outputs=cfg.n_outputs,
                    max_len=cfg.max_len,
                    task=task_spec.name,
                    n_ids=n_ids,
                    length=task_spec.length,
                )
            )
        if threads is not None:
            torch.set_num_threads(threads)
        self.cfg = replace(cfg, dropout=recipe.dropout, seed=recipe.seed)
        self.task = task_spec
        self.recipe = recipe
        self.device = torch.device(device)
        self.model = Encoder(self.cfg).to(self.device).train()
        decay = [p for p in self.model.parameters() if p.dim() >= 2]  # matrices and embeddings
        no_decay = [p for p in self.model.parameters() if p.dim() < 2]  # biases, LayerNorm
        groups = [
            {"params": decay, "weight_decay": recipe.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        opt_cls = torch.optim.AdamW if recipe.optimizer == "adamw" else torch.optim.Adam
        lr, betas, eps = recipe.lr, recipe.betas, recipe.eps
        try:  # one fused kernel for all parameters: 3x quicker than foreach here
            self.optimizer: torch.optim.Optimizer = opt_cls(groups, lr, betas, eps, fused=True)
        except (RuntimeError, TypeError):  # a device or torch version without it
            self.optimizer = opt_cls(groups, lr, betas, eps, foreach=True)
        self.rng = np.random.default_rng([recipe.seed, 0xDA7A])
        held_x, held_y = held_out_set(task_spec, n_held_out)
        self.held_out: Batch = (self._tensor(held_x), self._tensor(held_y))
        self.probe = held_x[0].copy()  # [pos] ids of the sequence the snapshots watch
        self.probe_text = as_text(self.probe)
        self._probe_encoded = task_tokenizer(task_spec).encode(self.probe_text)
        self.step_count = 0
        self.initial_loss: float | None = None
        self.initial_grad_norm: float | None = None

    def _tensor(self, a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64)).to(self.device)

    def draw(self) -> Batch:
        """One training micro-batch (recipe.batch sequences) from the trainer's generator."""
        x, y = make_batch(self.task, self.rng, self.recipe.batch)
        return self._tensor(x), self._tensor(y)

    def step(self, batches: Sequence[Batch] | None = None) -> StepStats:
        """One update: ``accum`` micro-batches (or ``batches``), each loss scaled by 1/count so
        the gradients add up to the mean over all of them; then clip, set the lr, step.

        After it, each parameter's ``.grad`` holds this update's (clipped) gradient.
        """
        start = time.perf_counter()
        r = self.recipe
        micro = [self.draw() for _ in range(r.accum)] if batches is None else list(batches)
        if not micro:
            raise ValueError("step needs at least one micro-batch")
        if not self.model.training:  # evaluate() and snapshot() restore it; a caller may not
            self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        with torch.random.fork_rng(devices=self._rng_devices(), enabled=r.dropout > 0):
            if r.dropout > 0:  # dropout masks come from the recipe's seed, not the caller's
                torch.manual_seed(r.seed * 1_000_003 + self.step_count)
            for inputs, targets in micro:
                loss = label_smoothed_loss(self.model.logits(inputs), targets, r.label_smoothing)
                (loss / len(micro)).backward()
                total += loss.item() / len(micro)
        max_norm = r.clip if r.clip > 0 else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        self.step_count += 1
        lr = r.lr_at(self.step_count)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        if self.initial_loss is None:
            self.initial_loss, self.initial_grad_norm = total, grad_norm
        return StepStats(self.step_count, total, lr, grad_norm, time.perf_counter() - start)

    def _rng_devices(self) -> list[int]:
        return [self.device.index or 0] if self.device.type == "cuda" else []

    @torch.inference_mode()
    def predict(self, inputs: np.ndarray | torch.Tensor) -> np.ndarray:
        """The model's answer (argmax id) for input ids [batch, pos] or [pos], without dropout."""
        was_training = self.model.training
        self.model.eval()
        try:
            ids = torch.as_tensor(inputs, dtype=torch.long)
            out = self.model.logits(ids).argmax(dim=-1)  # [batch, pos]
        finally:
            self.model.train(was_training)
        result: np.ndarray = out.cpu().numpy()
        return result[0] if np.ndim(inputs) == 1 else result

    @torch.inference_mode()
    def evaluate(self) -> float:
        """Held-out token accuracy: the share of positions whose argmax is the target."""
        inputs, targets = self.held_out
        was_training = self.model.training
        self.model.eval()
        try:
            pred = self.model.logits(inputs).argmax(dim=-1)  # [batch, pos]
        finally:
            self.model.train(was_training)
        return float((pred == targets).float().mean())

    def snapshot(self) -> np.ndarray:
        """The probe's attention patterns now: float32 [layer, head_index, query_pos, key_pos]."""
        was_training = self.model.training
        self.model.eval()
        try:
            cap = capture_ids(self.model, self._probe_encoded, names=("pattern",))
        finally:
            self.model.train(was_training)
        return cap.pattern

    def diverged(self, stats: StepStats) -> str | None:
        """A message naming the setting to lower when training has blown up, else None
        (`divergence`, worded in the current language).

        Blown up: a loss that is NaN or infinite; after warm-up, a loss above 3x the first
        step's; a gradient norm that is not finite or 1000x the first step's.
        """
        found = self.divergence(stats)
        return None if found is None else tr(found[0], **found[1])

    def divergence(self, stats: StepStats) -> tuple[str, dict[str, float | int]] | None:
        """`diverged`'s message as an English template and its values (`tformer.i18n.tr`), for
        a page to word in its reader's language; None when training is fine."""
        r = self.recipe
        at: dict[str, float | int] = {
            "step": stats.step,
            "lr": r.lr,
            "loss": stats.loss,
            "norm": stats.grad_norm,
        }
        if not math.isfinite(stats.loss):
            if r.clip:
                return "the loss became {loss} at step {step}: lower lr (now {lr:g})", at
            return (
                "the loss became {loss} at step {step}: lower lr (now {lr:g}), or turn clip on (e.g. 1.0)",
                at,
            )
        if not math.isfinite(stats.grad_norm):
            return "the gradient norm became {norm} at step {step}: lower lr (now {lr:g})", at
        first_loss, first_norm = self.initial_loss, self.initial_grad_norm
        if first_loss is not None and stats.step > r.warmup and stats.loss > 3 * first_loss:
            template = (
                "the loss {loss:.3g} at step {step} is over 3x its start ({first:.3g}): lower lr (now {lr:g})"
            )
            return template, {**at, "first": first_loss}
        if first_norm is not None and first_norm > 0 and stats.grad_norm > 1000 * first_norm:
            if r.clip:
                template = (
                    "the gradient norm {norm:.3g} at step {step} is over 1000x its start ({first:.3g}): "
                    "lower clip (now {clip:g}) or lr (lr now {lr:g})"
                )
            else:
                template = (
                    "the gradient norm {norm:.3g} at step {step} is over 1000x its start ({first:.3g}): "
                    "turn clip on (e.g. 1.0) or lower lr (lr now {lr:g})"
                )
            return template, {**at, "first": first_norm, "clip": r.clip}
        return None

    def run(
        self,
        until_acc: float | None = None,
        stop: Callable[[], bool] = lambda: False,
        on_step: Callable[[StepStats], object] | None = None,
        on_eval: Callable[[int, float], object] | None = None,
        on_snapshot: Callable[[int, np.ndarray], object] | None = None,
    ) -> RunSummary:
        """Train until ``until_acc`` held-out accuracy, ``recipe.steps`` updates, divergence or
        ``stop()`` (asked before every update). Calling it again carries on.

        Every ``eval_every`` updates (and at the last) it evaluates and calls
        ``on_eval(step, accuracy)``; every ``snapshot_every`` updates it calls
        ``on_snapshot(step, patterns)``: first with step 0 (the untrained patterns) and, unless
        training diverged, once more at the step it ends on, so a replay ends on the final heads.
        """
        r = self.recipe
        start = time.perf_counter()
        accuracy: float | None = None
        last_snapshot = -1

        def take_snapshot() -> None:
            nonlocal last_snapshot
            if on_snapshot is not None and last_snapshot != self.step_count:
                on_snapshot(self.step_count, self.snapshot())
                last_snapshot = self.step_count

        def summary(reason: str, message: str = "") -> RunSummary:
            if reason != "diverged":
                take_snapshot()
            return RunSummary(reason, self.step_count, accuracy, time.perf_counter() - start, message)

        if self.step_count == 0:
            take_snapshot()
        while self.step_count < r.steps:
            if stop():
                return summary("stopped")
            stats = self.step()
            if on_step is not None:
                on_step(stats)
            message = self.diverged(stats)
            if message is not None:
                return summary("diverged", message)
            n = self.step_count
            if n % r.snapshot_every == 0:
                take_snapshot()
            if n % r.eval_every == 0 or n == r.steps:
                accuracy = self.evaluate()
                if on_eval is not None:
                    on_eval(n, accuracy)
                if until_acc is not None and accuracy >= until_acc:
                    return summary("target")
        return summary("steps")
