r"""Mixed-precision training (seed 004's lesson): the same updates with the forward pass under
``torch.autocast``, measured against float32.

**Autocast.** Inside ``torch.autocast(device, dtype)`` the matrix products (every Linear, the
attention's products) run in a 16-bit format, while the weights, their gradients and Adam's
moments stay float32 (the *master weights*): each weight is cast to 16 bits when a product needs
it, and the update is applied to the float32 copy. Autocast keeps the loss in float32.

**The formats.** A float has exponent bits (its range) and mantissa bits (its precision).
bfloat16 keeps float32's 8 exponent bits and 7 of its 23 mantissa bits: the same range, about
three significant digits. float16 has 5 exponent bits and 10 mantissa bits: more precision but a
range of only :math:`6\cdot10^{-8}` to 65504, so small gradients underflow to 0.

**The gradient scaler** (float16, `MixedPrecisionTrainer.step`). The loss is multiplied by a
scale S before the backward pass, so every gradient is S times larger and stays above float16's
smallest number; the gradients are divided by S again before they are clipped and applied. A
gradient that overflowed skips the update and halves S; after N clean updates in a row S
doubles. bfloat16 needs no scaler: its range is float32's.

`MixedPrecisionTrainer` is a `tformer.training.trainer.Trainer` whose `step` runs this recipe;
in float32 it is the plain trainer's step, update for update (tests hold them equal).
`compare_precisions` trains the same model from the same seed on the same batches in each
precision and measures one update's time (`tformer.timing.measure`), its peak memory
(`tformer.efficiency.measure.peak_memory`: the CPU profiler's memory events, or the CUDA
allocator) and the held-out accuracy reached, with its memory and time budgets checked before
anything is trained. No Streamlit here; messages are `Note` templates the page translates.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from ..efficiency.measure import Note, memory_method, peak_memory
from ..i18n import tr
from ..model.config import EncoderConfig
from ..timing import Timing, measure
from .recipe import Recipe, model_config
from .tasks import TaskSpec
from .trainer import Batch, StepStats, Trainer, label_smoothed_loss, training_memory_bytes

__all__ = [
    "AUTOCAST_DTYPES",
    "BF16_FLAGS",
    "PRECISIONS",
    "MixedPrecisionTrainer",
    "PrecisionComparison",
    "PrecisionRun",
    "PrecisionSettings",
    "affordable_updates",
    "compare_precisions",
    "cpu_bf16_flags",
    "describe",
    "precision_memory_bytes",
    "precision_refusal",
    "precisions_for",
]

PRECISIONS = ("float32", "bfloat16", "float16")
# What autocast computes the products in; None: no autocast (plain float32).
AUTOCAST_DTYPES: dict[str, torch.dtype | None] = {
    "float32": None,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
WARMUP_UPDATES = 2  # the first updates allocate Adam's moments and pick kernels: neither timed nor profiled


def precisions_for(device: str | torch.device) -> tuple[str, ...]:
    """The precisions compared on ``device``: float32 and bfloat16 on a CPU; float32, float16
    (with the scaler) and, where the GPU has it, bfloat16 on CUDA."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return ("float32", "bfloat16")
    bf16 = torch.cuda.is_bf16_supported()
    return ("float32", "float16", "bfloat16") if bf16 else ("float32", "float16")


class MixedPrecisionTrainer(Trainer):
    """A `Trainer` whose forward passes run under ``torch.autocast`` in ``precision``
    ("float32": no autocast, "bfloat16", or "float16" with a gradient scaler).

    ``init_scale`` and ``growth_interval`` are the scaler's S at the start and its N (updates
    between two doublings); the scaler is switched off unless ``precision`` is float16.
    ``skipped_steps`` counts the updates the scaler skipped. Evaluation runs in the same
    precision as training."""

    def __init__(
        self,
        cfg: EncoderConfig,
        task_spec: TaskSpec,
        recipe: Recipe | None = None,
        device: str | torch.device = "cpu",
        *,
        precision: str = "float32",
        n_held_out: int = 256,
        init_scale: float = 2.0**16,
        growth_interval: int = 2000,
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(
                tr("precision={value!r} is not one of {choices}", value=precision, choices=PRECISIONS)
            )
        super().__init__(cfg, task_spec, recipe, device, n_held_out=n_held_out)
        self.precision = precision
        self.dtype = AUTOCAST_DTYPES[precision]
        self.scaler = torch.amp.GradScaler(
            self.device.type,
            init_scale=init_scale,
            growth_interval=growth_interval,
            enabled=precision == "float16",
        )
        self.skipped_steps = 0
        self.skipped_last = False  # the last update was skipped by the scaler

    def autocast(self) -> contextlib.AbstractContextManager[object]:
        """The forward pass's context: autocast to the precision's 16-bit dtype, or nothing."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    def step(self, batches: Sequence[Batch] | None = None) -> StepStats:
        r"""One update as `Trainer.step` does it, in mixed precision: 1. the forward pass and the
        loss under autocast; 2. the backward pass from the scaled loss S·L; 3. the gradients
        unscaled (÷S) before their norm is measured and clipped; 4. the update, skipped by the
        scaler when a gradient is not finite, and S adjusted:

        .. math::
            g = \frac{1}{S}\,\nabla_\theta\,(S\,\mathcal{L}),\qquad
            S \leftarrow
            \begin{cases}
              S/2, & \text{some } g \text{ not finite: update skipped}\\
              2S, & \text{after } N \text{ finite updates in a row}
            \end{cases}

        With the scaler off (float32, bfloat16) S = 1 and nothing is skipped."""
        start = time.perf_counter()
        r = self.recipe
        micro = [self.draw() for _ in range(r.accum)] if batches is None else list(batches)
        if not micro:
            raise ValueError("step needs at least one micro-batch")
        if not self.model.training:
            self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        with torch.random.fork_rng(devices=self._rng_devices(), enabled=r.dropout > 0):
            if r.dropout > 0:  # the plain trainer's dropout masks, update for update
                torch.manual_seed(r.seed * 1_000_003 + self.step_count)
            for inputs, targets in micro:
                with self.autocast():  # 1. products in 16 bits, the loss in float32
                    loss = label_smoothed_loss(self.model.logits(inputs), targets, r.label_smoothing)
                self.scaler.scale(loss / len(micro)).backward()  # 2. S·L (S = 1 when off)
                total += loss.item() / len(micro)
        self.scaler.unscale_(self.optimizer)  # 3. true gradients before clipping
        max_norm = r.clip if r.clip > 0 else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        self.step_count += 1
        lr = r.lr_at(self.step_count)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        scale = self.scaler.get_scale()
        self.scaler.step(self.optimizer)  # 4. skipped when a gradient is inf or NaN
        self.scaler.update()  # S halves after a skip, doubles after N clean updates
        self.skipped_last = self.scaler.is_enabled() and self.scaler.get_scale() < scale
        self.skipped_steps += int(self.skipped_last)
        if self.initial_loss is None and not self.skipped_last:
            self.initial_loss, self.initial_grad_norm = total, grad_norm
        return StepStats(self.step_count, total, lr, grad_norm, time.perf_counter() - start)

    def divergence(self, stats: StepStats) -> tuple[str, dict[str, float | int]] | None:
        """As `Trainer.divergence`, except that an update the scaler skipped (a gradient that
        overflowed float16, the loss still finite) is the scaler at work, not a divergence."""
        if self.skipped_last and math.isfinite(stats.loss):
            return None
        return super().divergence(stats)

    def evaluate(self) -> float:
        """Held-out token accuracy, the forward pass in the precision the model trains in."""
        with self.autocast():
            return super().evaluate()


# --- the comparison -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrecisionSettings:
    """One comparison: the task, the model, the recipe's batch, updates and seed, the device, the
    precisions in the order a table lists them, and the budgets. ``time_s`` bounds each timing
    (`tformer.timing.measure`); ``budget_s`` the training of every precision together, predicted
    from those timings before it starts (over it, every precision trains fewer updates, the same
    number); ``budget_bytes`` the memory estimate of one precision's training. Frozen: it keys
    the page's results."""

    task: str = "reverse"
    length: int = 16
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 64
    batch: int = 64
    steps: int = 150
    seed: int = 0
    device: str = "cpu"
    precisions: tuple[str, ...] = ("float32", "bfloat16")
    time_s: float = 1.5
    budget_s: float = 120.0
    budget_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        unknown = [p for p in self.precisions if p not in PRECISIONS]
        if not self.precisions or unknown or len(set(self.precisions)) != len(self.precisions):
            raise ValueError(
                f"precisions={self.precisions!r}: each of {PRECISIONS} at most once, at least one"
            )
        if self.steps < 2 * WARMUP_UPDATES + 1:
            raise ValueError(f"steps={self.steps} must be at least {2 * WARMUP_UPDATES + 1}")
        if not (self.time_s > 0 and self.budget_s > 0 and self.budget_bytes > 0):
            raise ValueError(
                f"time_s={self.time_s}, budget_s={self.budget_s}, budget_bytes={self.budget_bytes} must be > 0"
            )

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(self.task, length=self.length)

    @property
    def config(self) -> EncoderConfig:
        return model_config(self.spec, n_layers=self.n_layers, n_heads=self.n_heads, d_model=self.d_model)

    @property
    def recipe(self) -> Recipe:
        return Recipe(batch=self.batch, steps=self.steps, seed=self.seed)


@dataclass(frozen=True)
class PrecisionRun:
    """One precision's training: how long an update took (``timing``), the most memory one
    update held above what was held before it (``peak_bytes``, by ``memory_method``), every
    update's loss in order, the held-out accuracy at the end, the updates the scaler skipped and
    its final scale (None without a scaler)."""

    precision: str
    timing: Timing
    peak_bytes: int | None
    memory_method: str
    losses: tuple[float, ...]
    accuracy: float
    skipped: int = 0
    scale: float | None = None

    @property
    def updates(self) -> int:
        return len(self.losses)


@dataclass(frozen=True)
class PrecisionComparison:
    """Every precision's run, in the settings' order. ``updates``: how many each trained
    (``settings.steps``, or fewer where the budget said so); ``predicted_s``: the training time
    the timings predicted for ``settings.steps`` updates, before it was spent."""

    settings: PrecisionSettings
    runs: tuple[PrecisionRun, ...]
    updates: int
    predicted_s: float
    notes: tuple[Note, ...] = field(default=())

    def run(self, precision: str) -> PrecisionRun:
        return next(r for r in self.runs if r.precision == precision)


def precision_memory_bytes(settings: PrecisionSettings) -> int:
    """`training_memory_bytes` of the settings' model and recipe, plus a 16-bit copy of every
    weight (autocast keeps one per weight during a forward pass): an upper estimate of one
    precision's training, computed before anything is built."""
    cfg = settings.config
    return training_memory_bytes(cfg, settings.recipe) + 2 * cfg.n_params()


def precision_refusal(settings: PrecisionSettings) -> Note | None:
    """Why the comparison may not run (its memory estimate passes the budget), or None."""
    need = precision_memory_bytes(settings)
    if need <= settings.budget_bytes:
        return None
    return Note.of(
        "This comparison would need about {need:,.0f} MiB while training, over the budget of {budget:,.0f} MiB.",
        need=need / 2**20,
        budget=settings.budget_bytes / 2**20,
    )


def affordable_updates(seconds: Sequence[float], done: Sequence[int], steps: int, budget_s: float) -> int:
    """The most updates U <= ``steps`` every precision can reach within ``budget_s`` seconds
    of further training, one update of precision i taking ``seconds[i]`` and ``done[i]``
    already trained; never fewer than the most already done."""
    floor = max(done)
    rate = sum(seconds)
    if rate <= 0:
        return steps
    fit = math.floor((budget_s + sum(s * d for s, d in zip(seconds, done, strict=True))) / rate)
    return max(floor, min(steps, fit))


Progress = Callable[[str, int, int], None]  # (precision, updates done, updates to do)


def _probe(
    trainer: MixedPrecisionTrainer, settings: PrecisionSettings, losses: list[float]
) -> tuple[Timing, int | None]:
    """Warm-up updates, then one update's peak memory and the timing of further updates: all
    of them are training updates (their losses are kept)."""

    def update() -> None:
        losses.append(trainer.step().loss)

    for _ in range(WARMUP_UPDATES):
        update()
    peak = peak_memory(update, trainer.device)
    sync = torch.cuda.synchronize if trainer.device.type == "cuda" else None
    most = max(1, min(25, settings.steps - len(losses)))
    timing = measure(
        update, min_repeats=min(5, most), max_repeats=most, max_seconds=settings.time_s, warmup=0, sync=sync
    )
    return timing, peak


def compare_precisions(
    settings: PrecisionSettings,
    *,
    stop: Callable[[], bool] = lambda: False,
    progress: Progress | None = None,
) -> PrecisionComparison | None:
    """Train the settings' model once per precision, from the same seed on the same batches:
    time and peak memory of an update, the loss of every update, held-out accuracy at the end.

    First each precision's trainer measures (`_probe`); then the rest of the training is
    predicted from those times and, over ``budget_s``, cut to what fits (the same number of
    updates for every precision, a note says so); then each trains to that many updates.
    Returns None when ``stop()`` turned True. Raises ValueError (`precision_refusal`'s
    message, in the current language) before building anything when the memory budget is short."""
    refusal = precision_refusal(settings)
    if refusal is not None:
        raise ValueError(refusal.render(tr))
    device = torch.device(settings.device)
    trainers: list[MixedPrecisionTrainer] = []
    losses: list[list[float]] = []
    probes: list[tuple[Timing, int | None]] = []
    for p in settings.precisions:
        if stop():
            return None
        trainer = MixedPrecisionTrainer(
            settings.config, settings.spec, settings.recipe, device, precision=p, n_held_out=512
        )
        trainers.append(trainer)
        losses.append([])
        probes.append(_probe(trainer, settings, losses[-1]))
        if progress is not None:
            progress(p, len(losses[-1]), settings.steps)
    seconds = [t.median for t, _ in probes]
    done = [len(x) for x in losses]
    predicted = sum(s * (settings.steps - d) for s, d in zip(seconds, done, strict=True))
    updates = affordable_updates(seconds, done, settings.steps, settings.budget_s)
    notes: list[Note] = []
    if updates < settings.steps:
        notes.append(
            Note.of(
                "Training {steps} updates in every precision would take about {predicted:.0f} s here, over the "
                "budget of {budget:.0f} s: each precision trained {updates} updates.",
                steps=settings.steps,
                predicted=predicted,
                budget=settings.budget_s,
                updates=updates,
            )
        )
    runs = []
    for trainer, seen, (timing, peak) in zip(trainers, losses, probes, strict=True):
        while len(seen) < updates:
            if stop():
                return None
            seen.append(trainer.step().loss)
            if progress is not None and len(seen) % 10 == 0:
                progress(trainer.precision, len(seen), updates)
        scale = trainer.scaler.get_scale() if trainer.scaler.is_enabled() else None
        runs.append(
            PrecisionRun(
                trainer.precision,
                timing,
                peak,
                memory_method(device),
                tuple(seen),
                trainer.evaluate(),
                trainer.skipped_steps,
                scale,
            )
        )
    return PrecisionComparison(settings, tuple(runs), updates, predicted, tuple(notes))


# --- what a comparison shows -----------------------------------------------------------------------

SAME_TIME = 0.05  # times within 5 % of float32's (and their quartiles overlapping) count as the same


def describe(result: PrecisionComparison) -> list[Note]:
    """What the comparison shows, one sentence per part, each precision against float32 (the
    first run when float32 was not measured): time per update (slower, faster or the same,
    with the numbers), peak memory, the accuracy reached, and the updates a scaler skipped."""
    base = next((r for r in result.runs if r.precision == "float32"), result.runs[0])
    notes = []
    for run in result.runs:
        if run is base:
            continue
        notes.append(_time_note(run, base))
        if run.peak_bytes is not None and base.peak_bytes:
            notes.append(
                Note.of(
                    "{p} held {share:.0%} of {base}'s peak memory in an update ({mib:.1f} MiB against {base_mib:.1f}).",
                    p=run.precision,
                    base=base.precision,
                    share=run.peak_bytes / base.peak_bytes,
                    mib=run.peak_bytes / 2**20,
                    base_mib=base.peak_bytes / 2**20,
                )
            )
        notes.append(
            Note.of(
                "After {n} updates {p} reached {acc:.1%} held-out accuracy, {base} {base_acc:.1%}.",
                n=result.updates,
                p=run.precision,
                acc=run.accuracy,
                base=base.precision,
                base_acc=base.accuracy,
            )
        )
        if run.scale is not None:
            notes.append(
                Note.of(
                    "The gradient scaler skipped {k} of {n} updates (a gradient overflowed float16) and ended at "
                    "S = {scale:g}.",
                    k=run.skipped,
                    n=run.updates,
                    scale=run.scale,
                )
            )
    return notes


def _time_note(run: PrecisionRun, base: PrecisionRun) -> Note:
    t, b = run.timing, base.timing
    ratio = t.median / b.median if b.median > 0 else math.inf
    overlap = t.q1 <= b.q3 and b.q1 <= t.q3
    values = {"p": run.precision, "base": base.precision, "ms": t.median * 1e3, "base_ms": b.median * 1e3}
    if abs(ratio - 1) <= SAME_TIME or overlap:
        return Note.of(
            "{p} took about as long per update as {base} here ({ms:.3g} ms against {base_ms:.3g} ms).",
            **values,
        )
    if ratio > 1:
        return Note.of(
            "{p} was slower, not faster, here: an update took {ratio:.1f}× as long as in {base} ({ms:.3g} ms "
            "against {base_ms:.3g} ms).",
            ratio=ratio,
            **values,
        )
    return Note.of(
        "{p} was faster here: an update took {ratio:.2f}× the time of {base} ({ms:.3g} ms against {base_ms:.3g} ms).",
        ratio=ratio,
        **values,
    )


BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # x86 instructions that compute bfloat16 products


def cpu_bf16_flags(cpuinfo: str | None = None) -> tuple[str, ...] | None:
    """The `BF16_FLAGS` this CPU lists in ``/proc/cpuinfo`` (or in ``cpuinfo``, its text); None
    where the file cannot be read (not Linux)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                cpuinfo = f.read()
        except OSError:
            return None
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
    return tuple(f for f in BF16_FLAGS if f in flags)
