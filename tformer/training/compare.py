r"""Saved runs side by side: what a run keeps of its curves, the runs table, labels that say what
differs between the runs chosen, and "the same run without ..." as a comparison.

A run folder is untrusted input (`tformer.training.checkpoints`): its run.json and config.json
are read with the same bounded readers `load_run` uses (sizes checked before reading), and
every field this module reads is checked here; a folder that fails is a `Refused` row with the
reason, and the table goes on. One scan reads the newest folders, at most `MAX_TABLE_RUNS` of
them and at most `MAX_TABLE_BYTES` of run.json in all (each may hold 16 MB, and parsing one that
large takes about a second: 200 of them would hold a page for minutes).

What a run saves (`saved_history`): each update's loss, learning rate, gradient norm before
clipping and time, each evaluation's held-out accuracy, and a ``final`` summary. Runs saved
before the curves were kept hold ``final`` alone: their curves are "not recorded".

Settings are compared field by field (`SETTINGS`: the task's, the model's, the recipe's);
``steps``, ``eval_every`` and ``snapshot_every`` are left out (how long a run may go and how
often it is watched, not how it learns; the updates a run took are a column of their own).

Text a reader sees goes through `tformer.i18n.tr` when a function is called (the labels are
worded in the caller's language).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..i18n import tr
from ..model.config import EncoderConfig
from ..model.model_files import inside
from ..timing import Load, timing_of
from .checkpoints import (
    CheckpointError,
    finite_number,
    is_run_name,
    read_run_config,
    read_run_meta,
    runs_dir,
    sanitize_run_name,
)
from .recipe import Recipe, model_config
from .tasks import TaskSpec

__all__ = [
    "FINAL_LOSS_UPDATES",
    "MAX_CURVE_POINTS",
    "MAX_SAVED_STEPS",
    "MAX_TABLE_BYTES",
    "MAX_TABLE_RUNS",
    "SETTINGS",
    "VARIANTS",
    "WARMUP_UPDATES",
    "Curves",
    "Refused",
    "RunsScan",
    "SavedRun",
    "Setting",
    "comparison_title",
    "curves_of",
    "differing",
    "listed",
    "model_text",
    "read_or_refuse",
    "read_saved_run",
    "recipe_changes",
    "run_folders",
    "run_labels",
    "saved_history",
    "scan_runs",
    "task_text",
    "trailing_mean",
    "variant",
    "variant_name",
]

# update records a run.json keeps (beyond: every k-th and the last): the curves are drawn with at
# most 2,000 points anyway, and a run.json stays small (under 200 kB of them, measured)
MAX_SAVED_STEPS = 2_000
MAX_CURVE_POINTS = 200_000  # entries of one curve read back (run.json's byte bound comes first)
MAX_TABLE_RUNS = 200  # run folders one scan reads, the newest first
# run.json bytes one scan reads: 200 runs of 2,000 update records (~350 kB each) fit; a folder of
# files near run.json's 16 MB bound is cut to ~8 of them (~1 s of json.loads each, measured)
MAX_TABLE_BYTES = 128 * 2**20
FINAL_LOSS_UPDATES = 10  # the final loss: the mean of the last updates' batch losses
WARMUP_UPDATES = 5  # the first updates pay for allocation and kernel choice: not in the quartiles
STEP_FIELDS = ("step", "loss", "lr", "grad_norm", "seconds")
AVERAGED = ("loss", "grad_norm", "seconds")  # a thinned record's: the mean of the updates it stands for
EVAL_FIELDS = ("step", "accuracy")
UNCOMPARED = frozenset({"steps", "eval_every", "snapshot_every"})  # a run's length and watching

FloatArray = npt.NDArray[np.float64]


# --- what a run saves -----------------------------------------------------------------------------


def _thinned(entries: Sequence[Mapping[str, Any]], most: int) -> list[dict[str, Any]]:
    """At most ``most`` of ``entries``: every k-th and always the last, each kept entry's
    `AVERAGED` fields the mean over the entries since the one kept before it (a kept batch loss
    alone is as noisy as any one batch's: the curves' averaging window would then average fewer
    updates than it says)."""
    n = len(entries)
    if n <= most:
        return [dict(e) for e in entries]
    every = _stride(n, most)
    keep = list(range(0, n, every))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    out, start = [], 0
    for i in keep:
        entry = dict(entries[i])
        block = entries[start : i + 1]
        for key in AVERAGED:
            if key in entry and all(key in e for e in block):
                entry[key] = sum(float(e[key]) for e in block) / len(block)
        out.append(entry)
        start = i + 1
    return out


def _stride(n: int, most: int) -> int:
    """k such that every k-th of ``n`` entries and the last are at most ``most`` (>= 2)."""
    return math.ceil(n / (most - 1))


def saved_history(
    steps: Sequence[Mapping[str, Any]],
    evals: Sequence[Mapping[str, Any]],
    *,
    accuracy: float,
    step: int,
    load: Load | None = None,
) -> dict[str, Any]:
    """The ``history`` `save_run` keeps of a run, from what it reported (`RunHandle.progress`).

    ``steps``: one dict an update (``step``, ``loss``, ``lr``, ``grad_norm``, ``seconds``), thinned to
    `MAX_SAVED_STEPS` entries; ``evals``: ``step`` and ``accuracy``; ``final``: the held-out
    ``accuracy`` at update ``step``, the ``loss`` (the mean of the last `FINAL_LOSS_UPDATES`
    updates' batch losses), ``seconds`` (the sum of every update's own time; evaluations and
    snapshots not counted), ``ms_per_update`` (the quartiles q1, median, q3 of the updates' own
    times, the first `WARMUP_UPDATES` left out) and, given the ``load`` watched while it
    trained (`tformer.timing.watch`), ``busy``, ``other_work`` and ``other_cpu``: what else ran
    meanwhile. A history of ``"every"`` > 1 was thinned: each record kept then holds the mean
    loss, gradient norm and time of the updates since the record before it (its learning rate
    is its own update's).
    """
    losses = [float(s["loss"]) for s in steps[-FINAL_LOSS_UPDATES:] if "loss" in s]
    final: dict[str, Any] = {"accuracy": float(accuracy), "step": int(step)}
    if losses:
        final["loss"] = sum(losses) / len(losses)
    if steps and all("seconds" in s for s in steps):
        times = [float(s["seconds"]) for s in steps]
        final["seconds"] = sum(times)
        t = timing_of(times[WARMUP_UPDATES:] or times)
        final["ms_per_update"] = [1e3 * t.q1, 1e3 * t.median, 1e3 * t.q3]
    if load is not None:
        final |= {"busy": load.busy, "other_work": list(load.others), "other_cpu": load.other_cpu}
    kept = _thinned(steps, MAX_SAVED_STEPS)
    return {
        "steps": [{k: s[k] for k in STEP_FIELDS if k in s} for s in kept],
        "evals": [{k: e[k] for k in EVAL_FIELDS if k in e} for e in evals],
        "every": _stride(len(steps), MAX_SAVED_STEPS) if len(steps) > MAX_SAVED_STEPS else 1,
        "final": final,
    }


# --- a run's curves -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Curves:
    """One run's series over the update step, float64 and read-only. A series the run did not
    record is None ("not recorded": runs saved before it was kept, or a hand-edited file)."""

    step: FloatArray  # [update] the update of each loss, lr, grad_norm entry
    loss: FloatArray | None
    lr: FloatArray | None
    grad_norm: FloatArray | None
    eval_step: FloatArray  # [evaluation]
    accuracy: FloatArray | None
    window: int = 1  # updates each loss and gradient norm is averaged over (1: as recorded)

    @property
    def empty(self) -> bool:
        return not self.step.size and not self.eval_step.size

    def smoothed(self, window: int) -> Curves:
        """The loss and the gradient norm as `trailing_mean` over ``window`` updates (the
        learning rate and the accuracy as they are)."""
        if self.window != 1:
            raise ValueError(f"these curves are averaged already (window={self.window})")

        def mean(values: FloatArray | None) -> FloatArray | None:
            return None if values is None else _frozen(trailing_mean(self.step, values, window))

        return dataclasses.replace(self, loss=mean(self.loss), grad_norm=mean(self.grad_norm), window=window)


_NUMBERS = frozenset({int, float})  # what json.loads gives for a number


def _column(rows: Sequence[Mapping[str, Any]], key: str, where: str) -> FloatArray | None:
    """``key`` of every row as float64 (None when no row has it; an error when some lack it)."""
    have = [key in r for r in rows]
    if not any(have):
        return None
    if not all(have):
        i = have.index(False)
        raise ValueError(tr("{where}[{i}] has no {key}", where=where, i=i, key=key))
    values = [r[key] for r in rows]
    if not {type(v) for v in values} <= _NUMBERS:  # exact types: a bool is no number here
        i = next(i for i, v in enumerate(values) if type(v) not in _NUMBERS)
        raise ValueError(tr("{where}[{i}].{key} is not a number", where=where, i=i, key=key))
    try:
        return _frozen(np.array(values, dtype=np.float64))
    except OverflowError:  # an integer past float's range (JSON allows any number of digits)
        i = next(i for i, v in enumerate(values) if finite_number(v) is None and isinstance(v, int))
        raise ValueError(
            tr("{where}[{i}].{key} is too large for a number", where=where, i=i, key=key)
        ) from None


def _frozen(a: FloatArray) -> FloatArray:
    """``a`` read-only: curves are shared between sessions by the app's cache."""
    a.setflags(write=False)
    return a


def _rows(value: Any, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise ValueError(tr("{where} is not a list of entries", where=where))
    if len(value) > MAX_CURVE_POINTS:
        raise ValueError(
            tr(
                "{where} holds {n:,} entries, over the {most:,} read",
                where=where,
                n=len(value),
                most=MAX_CURVE_POINTS,
            )
        )
    return value


def _steps_column(rows: Sequence[Mapping[str, Any]], where: str) -> FloatArray:
    steps = _column(rows, "step", where)
    if steps is None:
        if rows:
            raise ValueError(tr("{where}[0] has no step", where=where))
        return _frozen(np.empty(0, dtype=np.float64))
    if not (np.isfinite(steps).all() and (steps >= 0).all() and (steps == np.round(steps)).all()):
        raise ValueError(tr("{where}: every step must be a whole number >= 0", where=where))
    if (np.diff(steps) <= 0).any():
        raise ValueError(tr("{where}: the steps must increase", where=where))
    return steps


def curves_of(steps: Any, evals: Any, where: str = "history") -> Curves:
    """A run's `Curves` from its update and evaluation entries (lists of dicts, as
    `RunHandle.progress` holds them and run.json saves them); ValueError naming the entry
    that is not one (``where`` names the lists in the message)."""
    s_rows, e_rows = _rows(steps, f"{where}.steps"), _rows(evals, f"{where}.evals")
    accuracy = _column(e_rows, "accuracy", f"{where}.evals")
    if accuracy is not None and not ((accuracy >= 0) & (accuracy <= 1)).all():
        raise ValueError(tr("{where}.evals: an accuracy is outside 0..1", where=where))
    return Curves(
        step=_steps_column(s_rows, f"{where}.steps"),
        loss=_column(s_rows, "loss", f"{where}.steps"),
        lr=_column(s_rows, "lr", f"{where}.steps"),
        grad_norm=_column(s_rows, "grad_norm", f"{where}.steps"),
        eval_step=_steps_column(e_rows, f"{where}.evals"),
        accuracy=accuracy,
    )


def trailing_mean(step: FloatArray, values: FloatArray, window: int) -> FloatArray:
    r"""Each value replaced by the mean of the finite values of the updates
    :math:`(s_i - w,\ s_i]` (``window`` updates ending at it; fewer at the start): the loss of
    one batch is noisy, its mean over the last few updates shows the trend. A value that is
    not finite stays a gap."""
    v: FloatArray = np.array(values, dtype=np.float64)  # a copy: the result is the caller's
    if window <= 1 or not v.size:
        return v
    ok = np.isfinite(v)
    total = np.concatenate([[0.0], np.cumsum(np.where(ok, v, 0.0))])
    count = np.concatenate([[0], np.cumsum(ok)])
    hi = np.arange(1, v.size + 1)
    lo = np.searchsorted(step, np.asarray(step) - window, side="right")
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = (total[hi] - total[lo]) / (count[hi] - count[lo])
    out[~ok] = np.nan
    return out


# --- one saved run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SavedRun:
    """One run folder as the runs table reads it: run.json and config.json, every field checked."""

    name: str
    path: Path
    created: datetime  # timezone-aware (UTC)
    task: TaskSpec
    cfg: EncoderConfig
    recipe: Recipe
    updates: int | None  # the updates it took (history's final step), None if not saved
    loss: float | None  # the final loss (mean of the last updates'), None if not recorded
    accuracy: float | None  # the final held-out token accuracy
    seconds: float | None  # the updates' own time, summed
    ms_per_update: tuple[float, float, float] | None  # q1, median, q3 of an update's own time
    busy: bool | None  # other work ran while it trained (None: not recorded)
    curves: Curves | None  # None when read for the table alone (`read_saved_run`)

    @classmethod
    def unsaved(
        cls, name: str, task: TaskSpec, cfg: EncoderConfig, recipe: Recipe, curves: Curves
    ) -> SavedRun:
        """A run not saved (yet): one still training, drawn beside saved ones. Its settings
        and curves only; no summary numbers, no folder (``path`` is its name)."""
        return cls(
            name, Path(name), datetime.now(timezone.utc), task, cfg, recipe,
            None, None, None, None, None, None, curves,
        )  # fmt: skip


@dataclass(frozen=True)
class Refused:
    """A folder that looks like a run but cannot be read: its name and why, worded for the reader."""

    name: str
    reason: str


def _fields_of(cls: type, data: Any, where: str) -> dict[str, Any]:
    """``data`` as keyword arguments of dataclass ``cls``: a JSON object naming only its fields."""
    if not isinstance(data, dict):
        raise ValueError(tr("{where} is not a JSON object", where=where))
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(tr("{where} has unknown settings {names}", where=where, names=unknown))
    return dict(data)


def _recipe_of(data: Any) -> Recipe:
    fields = _fields_of(Recipe, data, "recipe")
    betas = fields.get("betas")
    if isinstance(betas, list) and len(betas) == 2:
        fields["betas"] = tuple(betas)
    elif "betas" in fields:
        raise ValueError(tr("recipe.betas is not a pair of numbers"))
    for name in ("lr", "eps", "weight_decay", "clip", "label_smoothing", "dropout"):
        if name in fields and (isinstance(fields[name], bool) or not isinstance(fields[name], int | float)):
            raise ValueError(tr("recipe.{name} is not a number", name=name))
    return Recipe(**fields)


def _task_of(data: Any) -> TaskSpec:
    fields = _fields_of(TaskSpec, data, "task")
    types = {"name": str, "length": int, "vocab": int, "shift": int, "held_out": float, "seed": int}
    for name, kind in types.items():
        value = fields.get(name)
        ok = isinstance(value, int | float) if kind is float else isinstance(value, kind)
        if name in fields and (isinstance(value, bool) or not ok):
            raise ValueError(tr("task.{name}={value!r} is not of its type", name=name, value=value))
    return TaskSpec(**fields)


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _quartiles(value: Any) -> tuple[float, float, float] | None:
    """Three ordered finite numbers (q1 <= median <= q3), else None."""
    if not isinstance(value, list) or len(value) != 3:
        return None
    q = [finite_number(v) for v in value]
    if q[0] is None or q[1] is None or q[2] is None or not 0 <= q[0] <= q[1] <= q[2]:
        return None
    return q[0], q[1], q[2]


def _created(run: Mapping[str, Any]) -> datetime:
    created = datetime.fromisoformat(str(run.get("created")))
    return created if created.tzinfo is not None else created.replace(tzinfo=timezone.utc)


def read_saved_run(folder: Path, *, curves: bool = True) -> SavedRun:
    """The run in ``folder`` with everything the table and the overlay show, read with the
    bounded readers of `tformer.training.checkpoints`. CheckpointError naming run.json or
    config.json and what is wrong, in the current language. The history is checked either
    way; ``curves=False`` leaves it out of the result (a table of many runs holds no arrays)."""
    run = read_run_meta(folder)
    cfg = read_run_config(folder)
    try:
        task = _task_of(run.get("task"))
        recipe = _recipe_of(run.get("recipe"))
        history = run.get("history") or {}
        if not isinstance(history, dict):
            raise ValueError(tr("history is not a JSON object"))
        final: dict[str, Any] = history.get("final") or {}
        if not isinstance(final, dict):
            raise ValueError(tr("history.final is not a JSON object"))
        series = curves_of(history.get("steps"), history.get("evals"))
        created = _created(run)
    except (ValueError, TypeError, OverflowError) as exc:
        raise CheckpointError(tr("{path}: {error}", path=folder / "run.json", error=exc)) from exc
    accuracy = finite_number(final.get("accuracy"))
    if accuracy is None:
        accuracy = finite_number(run.get("accuracy"))
    return SavedRun(
        name=folder.name,
        path=folder,
        created=created,
        task=task,
        cfg=cfg,
        recipe=recipe,
        updates=_whole(final.get("step")),
        loss=finite_number(final.get("loss")),
        accuracy=accuracy if accuracy is None or 0 <= accuracy <= 1 else None,
        seconds=finite_number(final.get("seconds")),
        ms_per_update=_quartiles(final.get("ms_per_update")),
        busy=final["busy"] if isinstance(final.get("busy"), bool) else None,
        curves=series if curves else None,
    )


def read_or_refuse(folder: Path, *, curves: bool = True) -> SavedRun | Refused:
    """`read_saved_run`, or a `Refused` with the reason: whatever a hostile folder holds (bad
    JSON, wrong types, numbers too large for a float, a file removed while read)."""
    try:
        return read_saved_run(folder, curves=curves)
    except (ValueError, TypeError, OverflowError) as exc:  # CheckpointError is a ValueError
        return Refused(folder.name, str(exc))
    except OSError as exc:
        return Refused(folder.name, tr("{path} cannot be read: {error}", path=folder, error=exc))


@dataclass(frozen=True)
class RunsScan:
    """What one scan of a runs folder found: readable runs (newest first), refused folders, and
    how many run folders were left unread past `MAX_TABLE_RUNS` or `MAX_TABLE_BYTES`."""

    runs: tuple[SavedRun, ...]
    refused: tuple[Refused, ...]
    unread: int = 0

    def by_name(self) -> dict[str, SavedRun]:
        return {r.name: r for r in self.runs}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def run_folders(root: Path) -> list[Path]:
    """The entries of ``root`` that may be runs (a run name, a folder inside ``root``), newest
    first by modification time; what cannot be listed gives []."""
    try:
        entries = [e for e in root.iterdir() if is_run_name(e.name)]
    except OSError:
        return []
    folders = [e for e in entries if e.is_dir() and inside(e, root)]
    return sorted(folders, key=lambda e: (_mtime(e), e.name), reverse=True)


def _newest_within(folders: Sequence[Path], most: int, most_bytes: int) -> list[Path]:
    """The first of ``folders`` (newest first) up to ``most`` of them and ``most_bytes`` of
    run.json in all, by its size on disk before anything is read (the first is always taken:
    its own size is bounded by `read_run_meta`)."""
    kept: list[Path] = []
    total = 0
    for folder in folders[:most]:
        try:
            size = (folder / "run.json").stat().st_size
        except OSError:
            size = 0  # its read says why it cannot be read
        if kept and total + size > most_bytes:
            break
        kept.append(folder)
        total += size
    return kept


def scan_runs(
    root: str | os.PathLike[str] | None = None,
    *,
    most: int = MAX_TABLE_RUNS,
    most_bytes: int = MAX_TABLE_BYTES,
    read: Callable[[Path], SavedRun | Refused] | None = None,
) -> RunsScan:
    """Every run folder under ``root`` (default `runs_dir()`), the newest of them up to ``most``
    folders and ``most_bytes`` of run.json, read with ``read`` (default: `read_or_refuse` without
    the curves; a caching caller passes its own). A folder that fails is refused with the reason
    and the rest go on; a folder without run.json is not a run and is not listed."""
    base = Path(root) if root is not None else runs_dir()
    read = read or functools.partial(read_or_refuse, curves=False)
    folders = [f for f in run_folders(base) if os.path.lexists(f / "run.json")]
    chosen = _newest_within(folders, most, most_bytes)
    found = [read(folder) for folder in chosen]
    runs = sorted(
        (r for r in found if isinstance(r, SavedRun)), key=lambda r: (r.created, r.name), reverse=True
    )
    refused = tuple(r for r in found if isinstance(r, Refused))
    return RunsScan(tuple(runs), refused, len(folders) - len(chosen))


# --- settings and what differs ------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One compared setting: where it lives (``"task"``, ``"model"``, ``"recipe"``), its field,
    and how a label says its value (worded when called)."""

    part: str
    name: str
    text: Callable[[Any], str]  # the part's object (TaskSpec, EncoderConfig, Recipe) -> label

    def value(self, run: SavedRun) -> Any:
        return getattr(self.of(run), self.name)

    def of(self, run: SavedRun) -> Any:
        return {"task": run.task, "model": run.cfg, "recipe": run.recipe}[self.part]


def _off_or(off: str, on: str, name: str) -> Callable[[Any], str]:
    """A label that says ``off`` when the field is 0, else ``on`` with its value."""

    def text(obj: Any) -> str:
        value = getattr(obj, name)
        return tr(off) if value == 0 else tr(on, value=value)

    return text


def _count(n: int, one: str, many: str) -> str:
    """``one`` for 1, else ``many`` with ``n`` (English templates)."""
    return tr(one) if n == 1 else tr(many, n=n)


def listed(parts: Sequence[str]) -> str:
    """Labels joined as a list in the current language ("a, b" / "a，b")."""
    return tr(", ").join(parts)


def _warmup_text(r: Recipe) -> str:
    """The warm-up as a label. Without its ramp (`Recipe.ramp`) a 1/√step schedule holds the peak
    through the warm-up's updates before it decays; a constant one simply starts at the peak."""
    if r.warmup == 0 or (not r.ramp and r.schedule == "constant"):
        return tr("no warm-up")
    return tr("warm-up {n}", n=r.warmup) if r.ramp else tr("peak lr held {n} updates", n=r.warmup)


def _ramp_text(r: Recipe) -> str:
    return tr("warm-up {n}", n=r.warmup) if r.ramp and r.warmup else tr("no warm-up")


SETTINGS: tuple[Setting, ...] = (
    Setting("task", "name", lambda t: tr(t.name)),
    Setting("task", "length", lambda t: tr("{n} tokens", n=t.length)),
    Setting("task", "vocab", lambda t: tr("{n} symbols", n=t.vocab)),
    Setting("task", "shift", lambda t: tr("k = {n}", n=t.shift)),
    Setting("task", "held_out", lambda t: tr("{p:.0%} held out", p=t.held_out)),
    Setting("task", "seed", lambda t: tr("task seed {n}", n=t.seed)),
    Setting("model", "n_layers", lambda c: _count(c.n_layers, "1 layer", "{n} layers")),
    Setting("model", "n_heads", lambda c: _count(c.n_heads, "1 head", "{n} heads")),
    Setting("model", "d_model", lambda c: tr("d_model {n}", n=c.d_model)),
    Setting("model", "d_ff", lambda c: tr("d_ff {n}", n=c.d_ff)),
    Setting("model", "pos_encoding", lambda c: tr("positions: {name}", name=tr(c.pos_encoding))),
    Setting("model", "norm", lambda c: tr("pre-norm") if c.norm == "pre" else tr("post-norm")),
    Setting("model", "activation", lambda c: c.activation),
    Setting("model", "scaled", lambda c: tr("scores ÷ √d_k") if c.scaled else tr("no 1/√d_k scaling")),
    Setting("recipe", "optimizer", lambda r: "AdamW" if r.optimizer == "adamw" else "Adam"),
    Setting("recipe", "lr", lambda r: tr("lr {value:g}", value=r.lr)),
    Setting("recipe", "betas", lambda r: tr("β {b1:g}, {b2:g}", b1=r.betas[0], b2=r.betas[1])),
    Setting("recipe", "eps", lambda r: tr("ε {value:g}", value=r.eps)),
    Setting("recipe", "weight_decay", _off_or("no weight decay", "weight decay {value:g}", "weight_decay")),
    Setting(
        "recipe", "schedule", lambda r: tr("1/√step decay") if r.schedule == "noam" else tr("constant lr")
    ),
    Setting("recipe", "warmup", _warmup_text),
    Setting("recipe", "ramp", _ramp_text),
    Setting("recipe", "clip", _off_or("no clipping", "clip {value:g}", "clip")),
    Setting(
        "recipe",
        "label_smoothing",
        _off_or("no label smoothing", "label smoothing {value:g}", "label_smoothing"),
    ),
    Setting("recipe", "dropout", _off_or("no dropout", "dropout {value:g}", "dropout")),
    Setting("recipe", "batch", lambda r: tr("batch {n}", n=r.batch)),
    Setting("recipe", "accum", lambda r: tr("{n} micro-batches", n=r.accum)),
    Setting("recipe", "seed", lambda r: tr("seed {n}", n=r.seed)),
)


def differing(runs: Sequence[SavedRun]) -> list[Setting]:
    """The settings whose values are not all equal across ``runs``, in `SETTINGS` order (equal as
    `recipe_changes` compares them: a hand-written ``"clip": 1`` is the same setting as 1.0)."""
    return [s for s in SETTINGS if any(s.value(r) != s.value(runs[0]) for r in runs[1:])]


def _parts(run: SavedRun, settings: Sequence[Setting]) -> list[str]:
    """The labels of ``settings`` for ``run``, each text once (warm-up and ramp may say the same)."""
    out: list[str] = []
    for s in settings:
        text = s.text(s.of(run))
        if text not in out:
            out.append(text)
    return out


def run_labels(runs: Sequence[SavedRun]) -> list[str]:
    """One legend label a run, saying what differs between ``runs`` ("warm-up 50" against
    "no warm-up"); a run's name where nothing differs, and after a label two runs share."""
    settings = differing(runs)
    labels = [listed(_parts(r, settings)) or r.name for r in runs]
    return [
        label if labels.count(label) == 1 or label == run.name else f"{label} ({run.name})"
        for label, run in zip(labels, runs, strict=True)
    ]


def comparison_title(runs: Sequence[SavedRun]) -> str:
    """What differs, setting by setting: "warm-up 50 vs no warm-up · clip 1 vs no clipping";
    "" when nothing does."""
    out = []
    for s in differing(runs):
        values: list[str] = []
        for r in runs:
            text = s.text(s.of(r))
            if text not in values:
                values.append(text)
        out.append(tr(" vs ").join(values))
    return " · ".join(out)


def recipe_changes(recipe: Recipe) -> list[str]:
    """The recipe's settings that differ from `Recipe`'s defaults, as labels."""
    default = Recipe()
    return [
        s.text(recipe)
        for s in SETTINGS
        if s.part == "recipe"
        and s.name not in UNCOMPARED
        and getattr(recipe, s.name) != getattr(default, s.name)
    ]


def task_text(task: TaskSpec) -> str:
    """The table's task column: "reverse, 16 tokens, 16 symbols"."""
    parts = [tr(task.name), tr("{n} tokens", n=task.length), tr("{n} symbols", n=task.vocab)]
    if task.name == "shift":
        parts.append(tr("k = {n}", n=task.shift))
    return listed(parts)


def model_text(run: SavedRun) -> str:
    """The table's model column: its shape, and what differs from the Train page's default model
    for its task ("2 layers × 4 heads, d_model 64, no 1/√d_k scaling")."""
    cfg = run.cfg
    shape = tr(
        "{layers} × {heads}, d_model {d}",
        layers=_count(cfg.n_layers, "1 layer", "{n} layers"),
        heads=_count(cfg.n_heads, "1 head", "{n} heads"),
        d=cfg.d_model,
    )
    try:
        default = model_config(run.task, cfg.n_layers, cfg.n_heads, cfg.d_model)
    except ValueError:
        return shape
    names = ("d_ff", "pos_encoding", "norm", "activation", "scaled")
    extra = [
        s.text(cfg)
        for s in SETTINGS
        if s.part == "model" and s.name in names and getattr(cfg, s.name) != getattr(default, s.name)
    ]
    return listed([shape, *extra])


# --- "the same run without ..." ----------------------------------------------------------------

# what a comparison switches off -> its button's text (an English template)
VARIANTS: Mapping[str, str] = {
    "warmup": "without warm-up",
    "clip": "without clipping",
    "label_smoothing": "without label smoothing",
    "dropout": "without dropout",
    "scaled": "without the 1/√d_k scaling",
}
_SLUGS = {
    "warmup": "warmup",
    "clip": "clip",
    "label_smoothing": "smoothing",
    "dropout": "dropout",
    "scaled": "scaling",
}


def _already_off(run: SavedRun, key: str) -> bool:
    r = run.recipe
    return {
        "warmup": r.warmup == 0 or not r.ramp,
        "clip": r.clip == 0,
        "label_smoothing": r.label_smoothing == 0,
        "dropout": r.dropout == 0,
        "scaled": not run.cfg.scaled,
    }[key]


def variant(run: SavedRun, key: str) -> tuple[EncoderConfig, Recipe] | None:
    """``run``'s model config and recipe with one thing switched off (`VARIANTS`): the warm-up's
    ramp (the peak from update 1, the decay after the warm-up unchanged), clipping, label
    smoothing, dropout, or the scores' 1/√d_k. The seed, task and every other setting stay, so
    the same batches and held-out set are drawn. None when ``run`` has it off already."""
    if key not in VARIANTS:
        raise ValueError(f"key={key!r} is not one of {list(VARIANTS)}")
    if _already_off(run, key):
        return None
    if key == "scaled":
        return dataclasses.replace(run.cfg, scaled=False), run.recipe
    change: dict[str, Any] = {"ramp": False} if key == "warmup" else {key: 0.0}
    return run.cfg, dataclasses.replace(run.recipe, **change)


def variant_name(base: str, key: str, taken: Callable[[str], bool] = lambda _: False) -> str:
    """A run name for ``base`` without ``key``: ``<base>-no-<what>``, cut to the name's 64
    characters, numbered (``-2``, ``-3``...) while ``taken`` says it exists."""
    suffix = f"-no-{_SLUGS[key]}"
    for i in range(1, 1000):
        tail = suffix if i == 1 else f"{suffix}-{i}"
        name = sanitize_run_name(base[: 64 - len(tail)].rstrip("-") + tail, fallback="run" + tail)
        if not taken(name):
            return name
    raise ValueError(f"no free run name for {base!r} without {key}")
