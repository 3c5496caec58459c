"""Runs to show a class: a task, a model and a recipe slow enough that the heads form after about
a minute on a core of its own (the first head takes its role at update 3,660 or 4,020 of 6,000,
after 58 or 65 s of the training thread's CPU time; `benchmarks/presets.py`, figures in
docs/training.md), with snapshots often enough that the replay slider shows the forming (61 and
67 of them before the first head), and what the class should see, as a claim that a run can be
checked against.

Each `Preset` trains with a fixed seed and no early stop, so a run of it repeats the run its
claim was measured on (up to the rounding of a different thread count). Its `Claim` names the
role a head takes, the layer it is in, the updates between which the first such head takes it
(by the rule of `tformer.training.role_timeline`), and the held-out accuracy before and after:
`check_claim` reads a run's timeline and evaluations and says what did not hold, and
`tests/test_presets.py` trains every preset with its seed and checks its claim.

The titles and the sentences are English catalog templates (a page shows them through
`tformer.i18n.tr`). Importing this module loads no torch (`run_preset` does, when called).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .recipe import Recipe, model_config
from .role_timeline import NAMED_ROLES, RoleRecorder, RoleTimeline
from .tasks import TaskSpec

if TYPE_CHECKING:
    import numpy.typing as npt

    from .trainer import RunSummary

__all__ = [
    "PRESETS",
    "Claim",
    "Preset",
    "PresetRun",
    "check_claim",
    "claim_sentence",
    "first_head_time",
    "run_preset",
]


@dataclass(frozen=True)
class Claim:
    """What a class should see: the first head of ``layer`` to take ``role`` takes it between
    updates ``window`` (inclusive; ``around`` is the update the sentence names) and no head of
    another layer takes it; held-out accuracy is at most ``low[1]`` at update ``low[0]`` and at
    least ``high[1]`` at update ``high[0]`` (the evaluation at or just before each update)."""

    role: str
    layer: int
    window: tuple[int, int]
    around: int
    low: tuple[int, float]
    high: tuple[int, float]

    def __post_init__(self) -> None:
        if self.role not in NAMED_ROLES:
            raise ValueError(f"role {self.role!r} is not one of {NAMED_ROLES}")
        lo, hi = self.window
        if not 0 <= lo <= self.around <= hi:
            raise ValueError(f"around={self.around} must lie in the window {self.window}")
        if not (self.low[0] < self.high[0] and 0 <= self.low[1] < self.high[1] <= 1):
            raise ValueError(f"low={self.low} must come before high={self.high}, with a lower accuracy")


@dataclass(frozen=True)
class Preset:
    """A task, a model shape and a recipe to train for a class, and its `Claim`.

    ``model``: the `tformer.training.recipe.model_config` arguments (layers, heads, d_model...).
    ``title`` and ``shows`` are English templates: the preset's name, and one sentence on what
    to point at while it trains (``claim_sentence`` adds the measured numbers). ``cpu_seconds``:
    the training thread's CPU time until the claim's first head took its role and for the whole
    run, medians measured with one torch thread (`benchmarks/presets.py`): about what a run takes
    on a core of its own.
    """

    key: str
    title: str
    task: TaskSpec
    model: Mapping[str, Any]
    recipe: Recipe
    claim: Claim
    shows: str
    cpu_seconds: tuple[float, float]
    stop_at_99: bool = field(default=False)  # presets run their whole length: the heads keep sharpening


# The role names as a sentence says them (English templates).
ROLE_PHRASES = {
    "previous": "a previous-token head",
    "next": "a next-token head",
    "self": "a head on its own position",
    "cls": "a head on the first token",
    "duplicate": "a head on earlier copies of the token",
    "antidiagonal": "an anti-diagonal head",
}

# Both presets' recipe: a peak learning rate of 1e-4 (the default 7e-3 solves reverse in ~120
# updates, 3e-4 in ~600: ten seconds of one core), reached after 40 updates and decaying as
# 1/√step, so the first head forms between updates 3,600 and 4,100; a snapshot every 60 updates
# keeps the slider's 100 frames over the whole run, an evaluation as often.
SLOW = Recipe(lr=1e-4, warmup=40, steps=6000, snapshot_every=60, eval_every=60, seed=0)

PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        p.key: p
        for p in (
            Preset(
                key="reverse",
                title="reverse: the anti-diagonal forms in layer 1",
                task=TaskSpec("reverse", length=16, vocab=16),
                model={"n_layers": 2, "n_heads": 2, "d_model": 64},
                recipe=SLOW,
                claim=Claim(
                    "antidiagonal", 1, window=(3500, 4500), around=4020, low=(2400, 0.5), high=(4800, 0.99)
                ),
                shows="Point at layer 1 in the snapshots: its heads start as a blur and draw the "
                "anti-diagonal, query i reading key 15 - i. No head of layer 0 draws it: one layer "
                "of attention is enough to reverse.",
                cpu_seconds=(65.0, 97.0),
            ),
            Preset(
                key="shift",
                title="shift by one: a previous-token head forms",
                task=TaskSpec("shift", length=16, vocab=16, shift=1),
                model={"n_layers": 2, "n_heads": 2, "d_model": 64},
                recipe=SLOW,
                claim=Claim(
                    "previous", 1, window=(3200, 4100), around=3660, low=(2100, 0.5), high=(4000, 0.99)
                ),
                shows="Point at the line just left of the diagonal: each query reads the token "
                "before it, the one it has to output.",
                cpu_seconds=(58.0, 96.0),
            ),
        )
    }
)


def claim_sentence(preset: Preset) -> tuple[str, dict[str, Any]]:
    """What the class should see, as an English template and its values (`tformer.i18n.tr`;
    ``role`` is a template too)."""
    c = preset.claim
    template = (
        "Around update {around:,} (the rule names it between {lo:,} and {hi:,}) a head of layer {layer} "
        "becomes {role}, and no head of another layer does. Held-out accuracy climbs as it forms: "
        "at most {low:.0%} at update {low_at:,}, at least {high:.0%} by update {high_at:,}."
    )
    values = {
        "around": c.around,
        "lo": c.window[0],
        "hi": c.window[1],
        "layer": c.layer,
        "role": ROLE_PHRASES[c.role],
        "low_at": c.low[0],
        "low": c.low[1],
        "high_at": c.high[0],
        "high": c.high[1],
    }
    return template, values


def _accuracy_at(evals: Sequence[Mapping[str, Any]], step: int) -> tuple[int, float] | None:
    """(update, accuracy) of the last evaluation at or before ``step``; None when none is."""
    found = [(int(e["step"]), float(e["accuracy"])) for e in evals if int(e["step"]) <= step]
    return found[-1] if found else None


def check_claim(
    claim: Claim, timeline: RoleTimeline, evals: Sequence[Mapping[str, Any]], *, final: bool = True
) -> list[tuple[str, dict[str, Any]]]:
    """What of ``claim`` a run did not do, as English templates and values; empty when it held.

    ``timeline``: the run's `RoleTimeline`; ``evals``: its evaluations, dicts with ``step`` and
    ``accuracy`` in update order; ``final``: the run has ended (`RoleTimeline.changes`).
    """
    problems: list[tuple[str, dict[str, Any]]] = []
    formed = [c for c in timeline.formed(final=final) if c.role == claim.role]
    lo, hi = claim.window
    own = [c for c in formed if c.layer == claim.layer]
    if not own:
        problems.append(("no head of layer {layer} took the role", {"layer": claim.layer}))
    elif not lo <= own[0].step <= hi:
        problems.append(
            (
                "the first head of layer {layer} took the role at update {step:,}, outside {lo:,}..{hi:,}",
                {"layer": claim.layer, "step": own[0].step, "lo": lo, "hi": hi},
            )
        )
    others = sorted({c.layer for c in formed if c.layer != claim.layer})
    if others:
        problems.append(("heads of layer(s) {layers} took the role too", {"layers": others}))
    low, high = _accuracy_at(evals, claim.low[0]), _accuracy_at(evals, claim.high[0])
    if low is not None and low[1] > claim.low[1]:
        problems.append(
            (
                "held-out accuracy was already {accuracy:.0%} at update {step:,}",
                {"accuracy": low[1], "step": low[0]},
            )
        )
    if high is None or high[1] < claim.high[1]:
        step, acc = high if high is not None else (0, 0.0)
        problems.append(
            ("held-out accuracy was {accuracy:.0%} at update {step:,}", {"accuracy": acc, "step": step})
        )
    return problems


def first_head_time(
    claim: Claim, timeline: RoleTimeline, steps: Sequence[Mapping[str, Any]]
) -> tuple[int, float] | None:
    """The update at which the first head of ``claim``'s layer took its role in a finished run,
    and the seconds the run's updates took until then (``steps``: one record an update, with
    ``step`` and ``seconds``); None when no such head took it or an update's time is missing."""
    first = next(
        (c for c in timeline.formed(final=True) if c.role == claim.role and c.layer == claim.layer), None
    )
    if first is None:
        return None
    seconds = [
        x for s in steps if s.get("step", 0) <= first.step and isinstance(x := s.get("seconds"), float)
    ]
    return (first.step, sum(seconds)) if len(seconds) == first.step else None


@dataclass(frozen=True)
class PresetRun:
    """One run of a preset: its role timeline, its evaluations (``step``, ``accuracy``) and
    how it ended."""

    timeline: RoleTimeline
    evals: list[dict[str, Any]]
    summary: RunSummary


def run_preset(
    preset: Preset,
    device: str = "cpu",
    *,
    steps: int | None = None,
    on_snapshot: Callable[[int], object] | None = None,
) -> PresetRun:
    """Train ``preset`` as the Train page does (its seed, a snapshot every ``snapshot_every``
    updates, an evaluation every ``eval_every``, no early stop) and record its role timeline.
    ``steps``: stop after this many updates instead (the schedule depends on the warm-up only,
    so the first updates are the same). ``on_snapshot(step)``: called after each snapshot's role
    scores are recorded (`benchmarks/presets.py` reads the CPU time there). Loads torch (the
    trainer) when called."""
    from .trainer import Trainer

    recipe = preset.recipe if steps is None else replace(preset.recipe, steps=steps)
    trainer = Trainer(model_config(preset.task, **preset.model), preset.task, recipe, device)
    recorder = RoleRecorder(trainer.probe, trainer.probe_text)
    evals: list[dict[str, Any]] = []

    def snapshot(step: int, patterns: npt.ArrayLike) -> None:
        recorder.add(step, patterns)
        if on_snapshot is not None:
            on_snapshot(step)

    summary = trainer.run(
        until_acc=0.99 if preset.stop_at_99 else None,
        on_snapshot=snapshot,
        on_eval=lambda step, accuracy: evals.append({"step": step, "accuracy": accuracy}),
    )
    return PresetRun(recorder.timeline(), evals, summary)
