r"""Heads named as they form: the head finder's score of every head at each attention snapshot of
a training run, and the moments a head took on a role or gave it up.

A run keeps snapshots of one held-out input's attention patterns while it trains (the probe,
`tformer.training.trainer.Trainer.snapshot`). Each snapshot is scored by
`tformer.analysis.head_roles.role_scores`, the Head finder's function, so the timeline and the
finder page read a head the same way: a score is the mean weight a head puts on the key its role
names (the key before the query, the mirrored key of a reversing head...), 0..1.

When a head *becomes* a role is read off its series of scores with hysteresis
(`Rule`; the defaults `ON`, `OFF`, `HELD`):

.. math::
    \text{formed at } t \iff s_t \ge \text{on} \ \wedge\ \min(s_t, \dots, s_{t+k-1}) \ge \text{off}

and, once formed, it *fades* at the first :math:`t` with :math:`s_t < \text{off}` and
:math:`\max(s_t, \dots, s_{t+k-1}) < \text{on}`. A single snapshot above ``on`` that falls back
at once (a spike) names nothing; a head that dips a little (between ``off`` and ``on``) keeps
its name. While a run goes on, the last :math:`k-1` snapshots cannot confirm a change yet; once
it has ended (``final``), a change held through its last snapshot counts even with fewer than
:math:`k` left. "broad" is drawn but never named (every untrained head is broad), and a NaN score
(no row counted: "duplicate" on a probe without a repeated token) never forms.

`RoleRecorder` collects the scores in the training thread (append-only, safe to read from
page threads); `RoleTimeline` is what it hands out: immutable arrays, its `changes`, and a
compact JSON form (`RoleTimeline.to_json`, `RoleTimeline.from_json`) for a saved run's
run.json, bounded and checked on reading (run folders are untrusted input).

Numpy only: no torch, no Streamlit.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ..analysis.head_roles import ROLES, role_scores
from ..i18n import tr

__all__ = [
    "HELD",
    "MAX_SAVED_HEADS",
    "MAX_SAVED_SNAPSHOTS",
    "NAMED_ROLES",
    "OFF",
    "ON",
    "Change",
    "RoleRecorder",
    "RoleTimeline",
    "Rule",
    "snapshot_scores",
]

# A head takes a role when more than half of its attention (averaged over the probe's rows) goes
# to that role's key; 0.4 to keep it; for 3 snapshots in a row. On the presets a forming head's
# score climbs steadily through 0.5 (the reverse preset's layer 1 head 0: 0.38, 0.46, 0.53, 0.60
# at updates 450 to 600), while an untrained head of a 16-token input scores about 1/16 on every key.
ON = 0.5
OFF = 0.4
HELD = 3
# The roles a head can be named by: every role of the finder but "broad", which is every untrained
# head's (uniform attention scores broad 1).
NAMED_ROLES: tuple[str, ...] = tuple(r for r in ROLES if r != "broad")
# What a saved timeline may hold (run.json is untrusted): snapshots, heads (layers x heads).
MAX_SAVED_SNAPSHOTS = 400
MAX_SAVED_HEADS = 256
SCALE = 1000  # scores are saved as whole thousandths ("permille"), "-" for NaN
FORMAT = "permille"

FloatArray = npt.NDArray[np.float64]
Kind = Literal["formed", "faded"]


@dataclass(frozen=True)
class Rule:
    """When a score names a head (module docstring): reach ``on``, stay at or above ``off``
    for ``held`` snapshots; fade below ``off`` and stay under ``on`` as long."""

    on: float = ON
    off: float = OFF
    held: int = HELD

    def __post_init__(self) -> None:
        if not (0.0 < self.off <= self.on <= 1.0):
            raise ValueError(f"the rule needs 0 < off <= on <= 1, got on={self.on!r}, off={self.off!r}")
        if not isinstance(self.held, int) or isinstance(self.held, bool) or self.held < 1:
            raise ValueError(f"held={self.held!r} must be a whole number of snapshots >= 1")


@dataclass(frozen=True)
class Change:
    """A head took on (``formed``) or gave up (``faded``) a role at update ``step``; ``score``
    is its role score at that snapshot."""

    layer: int
    head: int
    role: str
    step: int
    score: float
    kind: Kind = "formed"


def snapshot_scores(pattern: npt.ArrayLike, ids: npt.ArrayLike) -> dict[str, FloatArray]:
    """Every role's score of every head on one snapshot: ``{role: [layer, head_index]}``.

    ``pattern``: [layer, head_index, query_pos, key_pos] of a task input, ``ids`` its [pos]
    ids. A task input has no [CLS] or [SEP] (`tformer.training.tasks.task_tokenizer`): every
    position is part of the input, "cls" measures position 0 and the anti-diagonal pairs
    position q with n-1-q.
    """
    return role_scores(pattern, ids, cls_pos=None, skip_special=None)


def _holds(ok: npt.NDArray[np.bool_], held: int, final: bool) -> npt.NDArray[np.bool_]:
    """[snap, series]: whether ``ok`` holds for the ``held`` snapshots from each one on (or for
    all that remain, once the run is ``final``), by a running count of ``ok``."""
    n = ok.shape[0]
    count = np.concatenate([np.zeros((1, ok.shape[1]), dtype=np.int64), np.cumsum(ok, axis=0)])
    start = np.arange(n)
    end = np.minimum(start + held, n)
    whole = (end - start == held) | final  # a shorter window confirms nothing while training goes on
    held_all: npt.NDArray[np.bool_] = ((count[end] - count[start]) == (end - start)[:, None]) & whole[:, None]
    return held_all


def _series_changes(a: FloatArray, rule: Rule, final: bool) -> list[list[tuple[int, Kind]]]:
    """For each series (column) of ``a`` [snap, series], the snapshot indices where it forms and
    fades. The windows are counted for every snapshot at once; the walk visits changes only."""
    y = np.nan_to_num(a, nan=-1.0)  # NaN: nothing counted, below every threshold
    can_form = (y >= rule.on) & _holds(y >= rule.off, rule.held, final)
    can_fade = (y < rule.off) & _holds(y < rule.on, rule.held, final)
    out: list[list[tuple[int, Kind]]] = []
    for j in range(y.shape[1]):
        forms, fades = np.flatnonzero(can_form[:, j]), np.flatnonzero(can_fade[:, j])
        found: list[tuple[int, Kind]] = []
        t, formed = -1, False
        while True:  # alternate: the first form after t, then the first fade after it...
            candidates = fades if formed else forms
            i = int(np.searchsorted(candidates, t, side="right"))
            if i == candidates.size:
                break
            t, formed = int(candidates[i]), not formed
            found.append((t, "formed" if formed else "faded"))
        out.append(found)
    return out


def _read_only(a: npt.ArrayLike) -> FloatArray:
    out = np.array(a, dtype=np.float64, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class RoleTimeline:
    """Role scores of every head at each snapshot: ``steps`` [snap] (the update each snapshot was
    taken after, increasing) and ``scores`` {role: float64 [snap, layer, head_index]}, read-only.
    ``text``: the input the snapshots show (the probe), as the task writes it."""

    steps: tuple[int, ...]
    scores: Mapping[str, FloatArray]
    text: str = ""
    shape: tuple[int, int] = field(default=(0, 0))  # (layers, heads), also for an empty timeline

    def __post_init__(self) -> None:
        n = len(self.steps)
        if any(b <= a for a, b in zip(self.steps, self.steps[1:], strict=False)):
            raise ValueError(tr("snapshot steps must increase, got {steps}...", steps=list(self.steps)[:8]))
        if list(self.scores) != list(ROLES):
            raise ValueError(f"scores must hold the roles {list(ROLES)} in order, got {list(self.scores)}")
        for role, a in self.scores.items():
            if a.shape != (n, *self.shape):
                raise ValueError(
                    f"scores[{role!r}] has shape {a.shape}, expected {(n, *self.shape)} [snap, layer, head_index]"
                )

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, text: str = "") -> RoleTimeline:
        zero = {role: _read_only(np.zeros((0, n_layers, n_heads))) for role in ROLES}
        return cls((), MappingProxyType(zero), text, (n_layers, n_heads))

    @property
    def n_layers(self) -> int:
        return self.shape[0]

    @property
    def n_heads(self) -> int:
        return self.shape[1]

    def __len__(self) -> int:
        return len(self.steps)

    def changes(
        self, rule: Rule | None = None, *, final: bool = False, roles: Iterable[str] = NAMED_ROLES
    ) -> list[Change]:
        """Every head's role changes under ``rule`` (default `Rule()`), in order of update, then
        layer, head and role. ``final``: the run has ended, so its last snapshots can confirm a
        change (module docstring)."""
        rule = Rule() if rule is None else rule
        names = list(roles)
        unknown = [r for r in names if r not in self.scores]
        if unknown:
            raise ValueError(f"roles {unknown} are not among {list(self.scores)}")
        found: list[tuple[int, int, int, int, Change]] = []
        for r_index, role in enumerate(names):
            a = self.scores[role]
            series = _series_changes(a.reshape(len(self.steps), -1), rule, final)
            for j, changes in enumerate(series):
                layer, head = divmod(j, max(self.n_heads, 1))
                for t, kind in changes:
                    change = Change(layer, head, role, self.steps[t], float(a[t, layer, head]), kind)
                    found.append((t, layer, head, r_index, change))
        return [c for *_, c in sorted(found, key=lambda f: f[:4])]

    def formed(self, rule: Rule | None = None, *, final: bool = False) -> list[Change]:
        """The first time each head took each role (`changes` of kind "formed", one per head and role)."""
        seen: set[tuple[int, int, str]] = set()
        out = []
        for c in self.changes(rule, final=final):
            if c.kind == "formed" and (c.layer, c.head, c.role) not in seen:
                seen.add((c.layer, c.head, c.role))
                out.append(c)
        return out

    def strongest_role(self) -> str | None:
        """The named role some head scores highest at the last snapshot (ties: `ROLES` order);
        None for an empty timeline or one with no score."""
        if not self.steps:
            return None
        best, found = -math.inf, None
        for role in NAMED_ROLES:
            last = self.scores[role][-1]
            if np.isfinite(last).any() and float(np.nanmax(last)) > best:
                best, found = float(np.nanmax(last)), role
        return found

    def thinned(self, most: int) -> RoleTimeline:
        """At most ``most`` snapshots (>= 2): every k-th and always the last."""
        n = len(self.steps)
        if n <= most:
            return self
        if most < 2:
            raise ValueError(f"most={most} must be >= 2 (the first and the last snapshot)")
        every = math.ceil((n - 1) / (most - 1))
        keep = [*range(0, n - 1, every), n - 1]
        scores = {role: _read_only(a[keep]) for role, a in self.scores.items()}
        return RoleTimeline(
            tuple(self.steps[i] for i in keep), MappingProxyType(scores), self.text, self.shape
        )

    # --- run.json --------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A compact, bounded JSON form for run.json: each role a list of one string per snapshot,
        its heads' scores in whole thousandths, layer by layer (``"12 508 61 40"``), ``-`` for NaN.
        Over `MAX_SAVED_SNAPSHOTS` snapshots it is thinned (`thinned`)."""
        t = self.thinned(MAX_SAVED_SNAPSHOTS)

        def row(values: FloatArray) -> str:
            return " ".join(
                "-" if not np.isfinite(v) else str(round(float(v) * SCALE)) for v in values.ravel()
            )

        return {
            "format": FORMAT,
            "text": t.text,
            "layers": t.n_layers,
            "heads": t.n_heads,
            "steps": list(t.steps),
            "scores": {role: [row(a[i]) for i in range(len(t.steps))] for role, a in t.scores.items()},
        }

    @classmethod
    def from_json(cls, data: object) -> RoleTimeline:
        """A timeline from `to_json`'s form. Raises ValueError naming what is wrong (a saved run
        is untrusted: every count is bounded before anything is allocated)."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(tr("a role timeline is an object with format {format!r}", format=FORMAT))
        layers, heads, steps = data.get("layers"), data.get("heads"), data.get("steps")
        if not (isinstance(layers, int) and isinstance(heads, int) and _whole(layers) and _whole(heads)):
            raise ValueError(tr("layers and heads must be whole numbers"))
        if not (layers >= 1 and heads >= 1 and layers * heads <= MAX_SAVED_HEADS):
            raise ValueError(
                tr(
                    "layers x heads must be 1..{most} heads in all, got {layers} x {heads}",
                    most=MAX_SAVED_HEADS,
                    layers=layers,
                    heads=heads,
                )
            )
        if not isinstance(steps, list) or len(steps) > MAX_SAVED_SNAPSHOTS:
            raise ValueError(tr("steps must be a list of at most {n} update numbers", n=MAX_SAVED_SNAPSHOTS))
        if not all(_whole(s) and s >= 0 for s in steps):
            raise ValueError(tr("steps must be whole numbers >= 0"))
        text, scores = data.get("text", ""), data.get("scores")
        if not isinstance(text, str) or len(text) > 8 * 2048:
            raise ValueError(tr("text must be a string of a task input"))
        if not isinstance(scores, Mapping) or set(scores) != set(ROLES):
            raise ValueError(tr("scores must hold exactly the roles {roles}", roles=list(ROLES)))
        shape = (len(steps), layers, heads)
        parsed = {role: _read_only(_rows(scores[role], shape, role)) for role in ROLES}
        return cls(tuple(int(s) for s in steps), MappingProxyType(parsed), text, shape[1:])


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _rows(rows: object, shape: tuple[int, int, int], role: str) -> FloatArray:
    """One role's saved strings as float64 [snap, layer, head_index] (thousandths -> 0..1)."""
    n, layers, heads = shape
    if not isinstance(rows, list) or len(rows) != n:
        raise ValueError(tr("scores[{role!r}] must be a list of {n} strings, one a snapshot", role=role, n=n))
    out = np.empty((n, layers * heads))
    for i, text in enumerate(rows):
        parts = text.split() if isinstance(text, str) and len(text) <= 6 * layers * heads else None
        if parts is None or len(parts) != layers * heads:
            raise ValueError(
                tr(
                    "scores[{role!r}][{i}] must hold {n} scores (thousandths or -)",
                    role=role,
                    i=i,
                    n=layers * heads,
                )
            )
        for j, p in enumerate(parts):
            if p == "-":
                out[i, j] = np.nan
            elif p.isascii() and p.isdigit() and int(p) <= SCALE:  # "²" is a digit to isdigit
                out[i, j] = int(p) / SCALE
            else:
                raise ValueError(
                    tr(
                        "scores[{role!r}][{i}] holds {value!r}: a score is 0..{most} or -",
                        role=role,
                        i=i,
                        value=p[:8],
                        most=SCALE,
                    )
                )
    return out.reshape(shape)


class RoleRecorder:
    """The scores of one run's snapshots as they come, written by the training thread and read
    by any page: `add` scores a snapshot, `timeline` returns what was scored so far (immutable)."""

    def __init__(self, ids: npt.ArrayLike, text: str = "") -> None:
        self._ids = np.asarray(ids).copy()
        self._text = text
        self._lock = threading.Lock()
        self._steps: list[int] = []
        self._rows: dict[str, list[FloatArray]] = {role: [] for role in ROLES}
        self._shape: tuple[int, int] | None = None

    def add(self, step: int, pattern: npt.ArrayLike) -> None:
        """Score the snapshot ``pattern`` [layer, head_index, query_pos, key_pos] taken after
        update ``step``; a step not after the last one recorded is ignored (a replayed snapshot)."""
        scores = snapshot_scores(pattern, self._ids)
        shape = scores["self"].shape  # [layer, head_index], the same for every role
        with self._lock:
            if self._steps and int(step) <= self._steps[-1]:
                return
            if self._shape is not None and shape != self._shape:
                raise ValueError(f"snapshot of {shape} heads after snapshots of {self._shape}")
            self._shape = (int(shape[0]), int(shape[1]))
            self._steps.append(int(step))
            for role in ROLES:
                self._rows[role].append(scores[role])

    def __len__(self) -> int:
        return len(self._steps)

    def timeline(self) -> RoleTimeline:
        with self._lock:
            steps = tuple(self._steps)
            rows = {role: list(v) for role, v in self._rows.items()}
            shape = self._shape
        if shape is None:
            return RoleTimeline.empty(0, 0, self._text)
        scores = {role: _read_only(np.stack(rows[role])) for role in ROLES}
        return RoleTimeline(steps, MappingProxyType(scores), self._text, shape)
