r"""Figures of the "train a small encoder" page: a run's curves, its schedule, a race of head counts.

:func:`training_curves` draws one run as it trains, four panels over the update step: the
training loss (log axis), the held-out token accuracy with the target to reach, the learning
rate and the gradient's global norm before clipping (log axis), with the clipping threshold:

.. math::
    g \leftarrow g \cdot \min\!\left(1,\ \frac{c}{\lVert g \rVert_2}\right)

:func:`schedule_figure` draws the learning-rate schedule beside its settings (the warm-up,
then the 1/√step decay of ``tformer.training.recipe.noam_lr``):

.. math::
    \mathrm{lr}(s) = \mathrm{peak}\cdot\min\!\left(\frac{s}{w},\ \sqrt{\frac{w}{s}}\right)

:func:`heads_race_figure` compares runs that differ only in their number of heads: held-out
accuracy over the steps, one line per head count, and the time each update took.

Inputs are what ``tformer.training.runs.Progress`` records (lists of plain dicts) and plain mappings;
nothing of tformer outside this package is imported. A run still going is drawn as far as it
got: an empty list draws empty panels with a note, never an error. Long runs are thinned to
at most :data:`MAX_POINTS` points a series (every k-th update and always the last), so the
browser gets a bounded payload; ``layout.meta`` says so.

Every word drawn goes through `tformer.i18n.tr` when the figure is built (the module's
constants are the English templates).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32
from .colors import (
    BLACK,
    BLUE,
    BLUISH_GREEN,
    DARK_PURPLE,
    INK,
    MARK_INK,
    NOTE_INK,
    ORANGE,
    REDDISH_PURPLE,
    SKY_BLUE,
    VERMILLION,
)
from .labels import axis_title, numeric_axis_margin, text_px, x_numeric_margin
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    HALF_WIDTH,
    LEGEND_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    Domain,
    base_layout,
    figure_title,
    legend_rows,
    panel_title,
    px_domain,
    top_legend,
)

if TYPE_CHECKING:
    from ..training.compare import Curves

__all__ = ["MAX_POINTS", "heads_race_figure", "runs_overlay", "schedule_figure", "training_curves"]

# Points a series sends to the browser at most (plus the last one): 4 series of 2,000 float32
# points are ~85 kB of base64, where 10,000 updates would be ~430 kB and redrawn every poll.
MAX_POINTS = 2000

STEP_KEYS = ("step", "loss", "lr", "grad_norm")
EVAL_KEYS = ("step", "accuracy")

# Okabe-Ito colors: apart for color-blind viewers and on a washed-out projector.
LOSS_COLOR = BLUE
ACCURACY_COLOR = BLUISH_GREEN
LR_COLOR = VERMILLION
GRAD_COLOR = DARK_PURPLE  # thin spiky lines
HEAD_COLORS = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, BLACK)
REFERENCE_COLOR = MARK_INK  # dark: it crosses dense, spiky series
NOTE_COLOR = NOTE_INK

TICK_PX = 13
NOTE_FONT_PX = 14
LABEL_FONT_PX = 13  # the labels of the clip, target and warm-up lines
LINE_PX = 2.5
THIN_LINE_PX = 1.5  # a series of hundreds of points: a thick line would be a smear
MARKER_PX = 8
MARKERS_UP_TO = 60  # points; more and the markers hide the line

# training_curves: each panel's plot height, the air between panels side by side; below
# MIN_PANEL_PX of plot width (a half-width column) the panels are stacked in one column.
PANEL_PX = 200
STACKED_PANEL_PX = 170
PANEL_AIR_PX = 22
MIN_PANEL_PX = 200
MIN_X = 10  # the step axis spans at least 0..MIN_X, so one point does not fill it
# schedule_figure's height (the brief's compact size beside the settings).
SCHEDULE_HEIGHT_PX = 260
# heads_race_figure: the plot height and the accuracy panel's share of the width.
RACE_PANEL_PX = 260
RACE_ACCURACY_SHARE = 0.62

WAITING_STEP = "waiting for the first step"
WAITING_EVAL = "waiting for the first evaluation"
WAITING_TIME = "waiting for the first timing"
RUNNING = "running"  # a bar slot whose run has no time per update yet
CURVE_TITLES = (
    "training loss (log scale)",
    "held-out token accuracy",
    "learning rate",
    "gradient norm before clipping (log scale)",
)
RACE_TITLES = ("held-out token accuracy", "time per update (ms)")
ACCURACY_TICKTEXT = ["0 %", "25 %", "50 %", "75 %", "100 %"]
ACCURACY_TICKS: dict[str, Any] = {
    "tickmode": "array",
    "tickvals": [0.0, 0.25, 0.5, 0.75, 1.0],
    "ticktext": ACCURACY_TICKTEXT,
}
ACCURACY_RANGE = [-0.02, 1.04]  # a line at 0 or 1 is not cut in half by the frame
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)

Box = tuple[float, float, float, float]  # (x0, x1, y0, y1) px from the plot area's top-left
Series = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]  # (step, accuracy) columns
_NO_EVALS: Series = (np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))


# ---------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------
def _is_number(v: object) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _records(rows: object, keys: Sequence[str], name: str) -> dict[str, npt.NDArray[np.float64]]:
    """``rows`` (a list of dicts, each with at least ``keys``) as one float64 column a key."""
    need = ", ".join(keys)
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
        raise ValueError(f"{name} must be a list of dicts with keys {need}, got {type(rows).__name__}")
    cols = {k: np.empty(len(rows), dtype=np.float64) for k in keys}
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"{name}[{i}] must be a dict with keys {need}, got {type(row).__name__}")
        missing = [k for k in keys if k not in row]
        if missing:
            raise ValueError(
                f"{name}[{i}] has no {', '.join(missing)} (each entry needs {need}; it has "
                f"{', '.join(map(str, row)) or 'no keys'})"
            )
        for k in keys:
            v = row[k]
            if not _is_number(v):
                raise ValueError(f"{name}[{i}]['{k}'] must be a number, got {v!r}")
            cols[k][i] = float(v)
    _check_steps(cols["step"], name)
    return cols


def _check_steps(s: npt.NDArray[np.float64], name: str) -> None:
    """Update numbers: whole, >= 0 and increasing (one run, in the order it happened)."""
    bad = np.flatnonzero(~np.isfinite(s) | (s < 0) | (s != np.round(s)))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name}[{i}]['step'] must be a whole number >= 0, got {s[i]:g}")
    back = np.flatnonzero(np.diff(s) <= 0)
    if back.size:
        i = int(back[0]) + 1
        raise ValueError(
            f"{name} must be in increasing step order: {name}[{i}] has step {s[i]:g} after step {s[i - 1]:g}"
        )


def _check_accuracy(acc: npt.NDArray[np.float64], name: str) -> None:
    bad = np.flatnonzero(~np.isfinite(acc) | (acc < 0) | (acc > 1))
    if bad.size:
        i = int(bad[0])
        hint = ": pass a fraction 0..1, not a percent" if 1 < acc[i] <= 100 else ""
        raise ValueError(f"{name}[{i}] accuracy must be in 0..1, got {acc[i]:g}{hint}")


def _check_target(target: float | None) -> float | None:
    if target is None:
        return None
    if not _is_number(target) or not 0 < float(target) <= 1:
        raise ValueError(f"target must be an accuracy in (0, 1], e.g. 0.99, got {target!r}")
    return float(target)


def _kept(n: int, max_points: int = MAX_POINTS) -> tuple[npt.NDArray[np.intp], int]:
    """Indices to draw of ``n`` points: all up to ``max_points``, else every k-th and the last;
    and that k (1: all kept)."""
    if n <= max_points:
        return np.arange(n), 1
    every = math.ceil(n / max_points)
    idx = np.arange(0, n, every)
    if idx[-1] != n - 1:
        idx = np.append(idx, n - 1)
    return idx, every


def _positive(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """float32 for a log axis: non-finite and non-positive values become gaps (NaN)."""
    out = values.astype(np.float32)
    out[~(np.isfinite(out) & (out > 0))] = np.nan
    return out


# ---------------------------------------------------------------------------------------------
# Ticks
# ---------------------------------------------------------------------------------------------
def _nice125(x: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``x`` (``x`` > 0)."""
    p = 10.0 ** math.floor(math.log10(x))
    return min(f * p for f in (1.0, 2.0, 5.0, 10.0) if f * p >= x * (1 - 1e-9))


def _num_text(v: float) -> str:
    """A tick label: ``0.01``, ``2``, ``300``; ``1e−5`` outside 0.001 .. 99,999."""
    if 1e-3 <= v < 1e5:
        return f"{round(v, 6):g}"
    mantissa, exp = f"{v:.0e}".split("e")
    return f"{mantissa}e{int(exp)}".replace("-", "\u2212")


def _log_range(values: npt.NDArray[np.floating[Any]], extra: Sequence[float] = ()) -> tuple[float, float]:
    """``(lo, hi)`` spanning the positive finite ``values`` and ``extra``, padded by 6 % of the
    span (at least a factor 1.2) on each side and at least a factor 5 wide (so a lone point
    gets a tick each side); 0.1..1, padded, for none."""
    v = np.asarray(values, dtype=np.float64)
    v = np.concatenate([v[np.isfinite(v) & (v > 0)], np.asarray(extra, dtype=np.float64)])
    if not v.size:
        v = np.array([0.1, 1.0])
    lo, hi = float(v.min()), float(v.max())
    span = math.log10(hi / lo)
    pad = max(0.06 * span, math.log10(1.2), (math.log10(5.0) - span) / 2)
    return lo / 10.0**pad, hi * 10.0**pad


def _log_ticks(lo: float, hi: float, max_ticks: int = 6) -> tuple[list[float], list[str]]:
    """Ticks of a log axis over ``lo .. hi``: 1-2-5 of each decade, fewer when crowded (every
    decade, every other decade...), every whole multiple when fewer than two would show."""
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))

    def within(mults: Sequence[int], every: int = 1) -> list[float]:
        vals = [m * 10.0**e for e in range(e0, e1 + 1) if e % every == 0 for m in mults]
        return [v for v in vals if lo <= v <= hi]

    vals: list[float] = []
    for mults in ((1, 2, 5), (1, 3), (1,)):
        vals = within(mults)
        if len(vals) <= max_ticks:
            break
    every = 2
    while len(vals) > max_ticks:
        vals = within((1,), every)
        every += 1
    if len(vals) < 2:
        vals = within(range(1, 10))
    # not at the very bottom (it would meet the x axis's first label) nor top of the axis
    a, b = math.log10(lo), math.log10(hi)
    inner = [v for v in vals if a + 0.05 * (b - a) <= math.log10(v) <= b - 0.02 * (b - a)]
    vals = inner if len(inner) >= 2 else vals
    return vals, [_num_text(v) for v in vals]


def _scaled_ticks(top: float, n: int = 4) -> tuple[list[float], list[str], str]:
    """Ticks 0 .. ``top`` (> 0) for a small quantity: labels in units of 10ᵉ when ``top`` is
    under 0.01 or from 1000 on, and the unit (`` (×10⁻³)``) for the panel title."""
    e = math.floor(math.log10(top))
    scale_e = e if (e < -2 or e > 2) else 0
    vals, texts = _linear_ticks(top, n, 10.0**scale_e)
    suffix = "" if scale_e == 0 else f" (\u00d710{str(scale_e).translate(_SUPERSCRIPT)})"
    return vals, texts, suffix


def _linear_ticks(top: float, n: int, unit: float = 1.0) -> tuple[list[float], list[str]]:
    """About ``n`` round ticks over ``0 .. top`` (> 0), labelled in multiples of ``unit``."""
    step = _nice125(top / unit / n) * unit
    vals = [i * step for i in range(int(top / step + 1e-9) + 1)]
    return vals, [f"{round(v / unit, 6):g}" for v in vals]


def _step_ticks(x_max: float, plot_w: float) -> dict[str, Any]:
    """Whole-number ticks of an update-step axis over ``0 .. x_max``, as many as fit side by
    side at :data:`TICK_PX` in ``plot_w`` px."""
    widest = text_px(f"{int(x_max):,}", TICK_PX) + 2 * TICK_PX
    fit = max(2, int(plot_w // widest))
    want = x_max / max(1, fit - 1)
    p = 10.0 ** max(0, math.floor(math.log10(max(want, 1.0))))
    # 1, 2, 2.5, 5 x 10^k whole steps: 0, 2,500, 5,000 ... rather than only 0, 5,000, 10,000
    step = min(int(f * p) for f in (1, 2, 2.5, 5, 10) if f * p >= want and (f * p).is_integer())
    vals = list(range(0, int(x_max) + 1, step))
    return {"tickmode": "array", "tickvals": vals, "ticktext": [f"{v:,}" for v in vals]}


def _x_max(*steps: npt.NDArray[np.float64]) -> float:
    last = max((float(s[-1]) for s in steps if s.size), default=0.0)
    return max(last, MIN_X)


def _y_margin(texts: Sequence[str]) -> int:
    return numeric_axis_margin(
        max(texts, key=lambda t: text_px(t, TICK_PX), default="0"), title=False, font=TICK_PX
    )


def _right_margin(x_max: float) -> int:
    """Room right of a step axis for half of its last label (it is centred on its tick)."""
    return max(EDGE_PX, math.ceil(text_px(f"{int(x_max):,}", TICK_PX) / 2 + 4))


# ---------------------------------------------------------------------------------------------
# Pieces shared by the builders
# ---------------------------------------------------------------------------------------------
def _note(text: str, sfx: str) -> dict[str, Any]:
    """A note in the middle of an empty panel."""
    return {
        "text": text,
        "xref": f"x{sfx} domain",
        "yref": f"y{sfx} domain",
        "x": 0.5,
        "y": 0.5,
        "showarrow": False,
        "bgcolor": "rgba(255,255,255,0.85)",
        "font": {"size": NOTE_FONT_PX, "color": NOTE_COLOR},
    }


def _hline(sfx: str, y: float, name: str) -> dict[str, Any]:
    return {
        "type": "line",
        "name": name,
        "xref": f"x{sfx} domain",
        "yref": f"y{sfx}",
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"color": REFERENCE_COLOR, "width": 2, "dash": "dash"},
        "layer": "above",
    }


def _line_label(
    text: str, sfx: str, y: float, *, right: bool, above: bool, log: bool = False
) -> dict[str, Any]:
    """The label of a reference line, at one end of it, on a white box over the data.
    ``log``: the axis is logarithmic (annotations, unlike shapes, take log10 there)."""
    return {
        "text": text,
        "xref": f"x{sfx} domain",
        "yref": f"y{sfx}",
        "x": 1.0 if right else 0.0,
        "y": math.log10(y) if log else y,
        "xanchor": "right" if right else "left",
        "yanchor": "bottom" if above else "top",
        "xshift": -4 if right else 4,
        "yshift": 2 if above else -2,
        "showarrow": False,
        "bgcolor": "rgba(255,255,255,0.85)",
        "font": {"size": LABEL_FONT_PX, "color": NOTE_COLOR},
    }


def _series(
    x: npt.ArrayLike, y: npt.ArrayLike, sfx: str, *, name: str, color: str, hover: str, thin: bool = False
) -> dict[str, Any]:
    n = len(np.asarray(x))
    return {
        "type": "scatter",
        "mode": "lines+markers" if (n <= MARKERS_UP_TO and not thin) or n == 1 else "lines",
        "name": name,
        "x": x,
        "y": y,
        "xaxis": f"x{sfx}",
        "yaxis": f"y{sfx}",
        "line": {"color": color, "width": THIN_LINE_PX if thin and n > MARKERS_UP_TO else LINE_PX},
        "marker": {"color": color, "size": MARKER_PX},
        "connectgaps": False,
        "hovertemplate": hover + "<extra></extra>",
    }


def _base_axis(domain: Sequence[float], anchor: str) -> dict[str, Any]:
    return {
        "domain": list(domain),
        "anchor": anchor,
        "tickfont": {"size": TICK_PX},
        "ticks": "",
        "zeroline": False,
        "automargin": False,  # margins are planned for the labels; no second layout pass
    }


def _with_title(layout: dict[str, Any], title: str | None, height: float) -> None:
    if title:
        # at the top of the figure, above legend and panel titles
        layout["title"] = {**figure_title(title), "yref": "container", "y": 1 - 10 / height, "yanchor": "top"}


# ---------------------------------------------------------------------------------------------
# training_curves
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Curves:
    """One run's series as drawn: thinned to :data:`MAX_POINTS`, float32, gaps as NaN."""

    x: npt.NDArray[np.float32]  # update steps of the loss, lr and gradient-norm series
    x_e: npt.NDArray[np.float32]  # update steps of the evaluations
    loss: npt.NDArray[np.float32]
    acc: npt.NDArray[np.float32]
    lr: npt.NDArray[np.float32]
    grad: npt.NDArray[np.float32]
    every: int  # every k-th update drawn (1: all)
    every_e: int  # every k-th evaluation drawn


def _check_clip(clip: float | None) -> float | None:
    """The clipping threshold to draw: ``None`` for no line (``None`` or 0 = no clipping)."""
    if clip is not None and (not _is_number(clip) or not math.isfinite(float(clip)) or clip < 0):
        raise ValueError(f"clip must be a gradient norm >= 0 (0 = no clipping), got {clip!r}")
    return float(clip) if clip is not None and clip > 0 else None


def _curves(s: Mapping[str, npt.NDArray[np.float64]], e: Mapping[str, npt.NDArray[np.float64]]) -> _Curves:
    """The validated columns of ``steps`` and ``evals`` thinned and typed for drawing: a loss
    or gradient norm that is not finite or not positive leaves a gap on its log axis."""
    keep, every = _kept(len(s["step"]))
    keep_e, every_e = _kept(len(e["step"]))
    lr = s["lr"][keep].astype(np.float32)
    lr[~np.isfinite(lr)] = np.nan
    return _Curves(
        x=s["step"][keep].astype(np.float32),
        x_e=e["step"][keep_e].astype(np.float32),
        loss=_positive(s["loss"][keep]),
        acc=e["accuracy"][keep_e].astype(np.float32),
        lr=lr,
        grad=_positive(s["grad_norm"][keep]),
        every=every,
        every_e=every_e,
    )


def _curve_y_axes(run: _Curves, clip_at: float | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The four panels' y axes (range and ticks) and titles: the loss and the gradient norm on
    log axes (the latter reaching the clip line), accuracy 0..100 %, the learning rate from 0
    with its unit (``×10⁻³``) in its title."""
    loss_lo, loss_hi = _log_range(run.loss)
    grad_lo, grad_hi = _log_range(run.grad, [clip_at] if clip_at else [])
    lr_top = float(np.nanmax(run.lr)) if np.isfinite(run.lr).any() and np.nanmax(run.lr) > 0 else 1e-3
    lr_vals, lr_text, lr_unit = _scaled_ticks(1.08 * lr_top)  # ticks up to the top of the panel
    loss_ticks, grad_ticks = _log_ticks(loss_lo, loss_hi, 5), _log_ticks(grad_lo, grad_hi, 5)
    y_axes: list[dict[str, Any]] = [
        {"type": "log", "range": [math.log10(loss_lo), math.log10(loss_hi)], "tickmode": "array",
         "tickvals": loss_ticks[0], "ticktext": loss_ticks[1]},
        {"range": ACCURACY_RANGE, **ACCURACY_TICKS},
        {"range": [0.0, 1.08 * lr_top], "tickmode": "array", "tickvals": lr_vals, "ticktext": lr_text},
        {"type": "log", "range": [math.log10(grad_lo), math.log10(grad_hi)], "tickmode": "array",
         "tickvals": grad_ticks[0], "ticktext": grad_ticks[1]},
    ]  # fmt: skip
    titles = [tr(t) for t in CURVE_TITLES]
    titles[2] += lr_unit
    return y_axes, titles


def _curve_boxes(lefts: Sequence[int], width: int, right: int, x_gap: int) -> tuple[list[Box], bool, int]:
    """Boxes of the four panels (2 x 2, or stacked in one column when a panel would be
    narrower than :data:`MIN_PANEL_PX`), whether stacked, and the left margin."""
    col_left = (max(lefts[0], lefts[2]), max(lefts[1], lefts[3]))
    panel_w = (width - col_left[0] - PANEL_AIR_PX - col_left[1] - right) / 2
    if panel_w >= MIN_PANEL_PX:
        x1 = panel_w + PANEL_AIR_PX + col_left[1]
        y1 = PANEL_PX + x_gap
        corners = [(0.0, 0.0), (x1, 0.0), (0.0, y1), (x1, y1)]
        return [(x, x + panel_w, y, y + PANEL_PX) for x, y in corners], False, col_left[0]
    left = max(lefts)
    plot_w = width - left - right
    pitch = STACKED_PANEL_PX + x_gap
    return [(0.0, plot_w, i * pitch, i * pitch + STACKED_PANEL_PX) for i in range(4)], True, left


def _curve_traces(run: _Curves) -> list[dict[str, Any]]:
    """One line a panel: loss, accuracy, learning rate, gradient norm (``x``, ``x2`` ...)."""
    return [
        _series(run.x, run.loss, "", name=tr("training loss"), color=LOSS_COLOR, thin=True,
                hover=tr("step %{x:,}<br>loss %{y:.3g}")),
        _series(run.x_e, run.acc, "2", name=tr("held-out token accuracy"), color=ACCURACY_COLOR,
                hover=tr("step %{x:,}<br>accuracy %{y:.1%}")),
        _series(run.x, run.lr, "3", name=tr("learning rate"), color=LR_COLOR, thin=True,
                hover=tr("step %{x:,}<br>learning rate %{y:.3g}")),
        _series(run.x, run.grad, "4", name=tr("gradient norm"), color=GRAD_COLOR, thin=True,
                hover=tr("step %{x:,}<br>gradient norm %{y:.3g}")),
    ]  # fmt: skip


def _curve_panels(
    boxes: Sequence[Box],
    *,
    paper_w: float,
    y_axes: Sequence[dict[str, Any]],
    titles: Sequence[str],
    x_max: float,
    stacked: bool,
    waiting: tuple[bool, bool],
) -> dict[str, Any]:
    """The panels' axes (one zoom for all step axes, titled on the bottom row), their titles,
    and a note in each panel still waiting for data (``waiting``: no steps, no evaluations)."""
    plot_h = boxes[-1][3]
    x_ticks = _step_ticks(x_max, boxes[0][1] - boxes[0][0])
    bottom_row = {3} if stacked else {2, 3}
    no_steps, no_evals = waiting
    panels: dict[str, Any] = {"annotations": [], "shapes": []}
    for i, box in enumerate(boxes):
        xd, yd = px_domain(*box, paper_w, plot_h)
        sfx = "" if i == 0 else str(i + 1)
        x_axis = {**_base_axis(xd, f"y{sfx}"), "range": [0.0, x_max * 1.015], **x_ticks}
        if i:
            x_axis["matches"] = "x"  # zooming one panel zooms them all
        if i in bottom_row:
            x_axis["title"] = axis_title(tr("update step"))
        panels[f"xaxis{sfx}"] = x_axis
        panels[f"yaxis{sfx}"] = {**_base_axis(yd, f"x{sfx}"), **y_axes[i]}
        panels["annotations"].append(panel_title(titles[i], xd, yd))
        if no_evals if i == 1 else no_steps:  # the accuracy panel waits for evaluations
            panels["annotations"].append(_note(tr(WAITING_STEP if no_steps else WAITING_EVAL), sfx))
    return panels


def _curve_lines(layout: dict[str, Any], target: float | None, clip_at: float | None) -> None:
    """Add the dashed target line (accuracy panel) and clip line (gradient-norm panel), each
    labelled where its panel's data leaves room."""
    if target is not None:
        layout["shapes"].append(_hline("2", target, "target"))
        # below the line at the left end: early accuracy is low, that corner is free
        label = tr("target {percent:g} %", percent=round(target * 100, 4))
        layout["annotations"].append(_line_label(label, "2", target, right=False, above=False))
    if clip_at is not None:
        layout["shapes"].append(_hline("4", clip_at, "clip"))
        # above the line at the right end: late in training the norm is mostly below it
        label = tr("clip = {clip:g}", clip=clip_at)
        layout["annotations"].append(_line_label(label, "4", clip_at, right=True, above=True, log=True))


def training_curves(
    steps: Sequence[Mapping[str, Any]],
    evals: Sequence[Mapping[str, Any]],
    *,
    clip: float | None = None,
    target: float | None = None,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """One run's curves over the update step, four panels in a 2 x 2 grid with one shared
    step axis: training loss (log axis), held-out token accuracy (0..100 %), learning rate,
    gradient norm before clipping (log axis). In a column too narrow for two panels of 200 px
    (half width) they are stacked.

    ``steps``: one dict an update with ``step``, ``loss``, ``lr``, ``grad_norm`` (more keys,
    e.g. ``seconds``, are ignored), as ``tformer.training.runs.Progress.steps()`` returns them;
    ``evals``: dicts with ``step`` and ``accuracy`` (0..1). Steps increase in each list. A
    loss or gradient norm that is not finite (a diverged run) leaves a gap. Either list may be
    empty: its panels say what they wait for.

    ``clip``: the gradient-norm threshold, drawn dashed ("clip = 1") when > 0. ``target``:
    the accuracy to reach, drawn dashed ("target 99 %"). ``title`` is shown as given (escape
    user text with ``safe_label``). Over :data:`MAX_POINTS` updates every k-th one and the
    last are drawn. ``layout.meta``: ``n_steps``, ``n_evals``, ``downsampled``, ``every``,
    ``last_step``, ``clip``, ``target``, ``stacked``, ``width``.
    """
    s = _records(steps, STEP_KEYS, "steps")
    e = _records(evals, EVAL_KEYS, "evals")
    _check_accuracy(e["accuracy"], "evals")
    target = _check_target(target)
    clip_at = _check_clip(clip)
    run = _curves(s, e)
    y_axes, titles = _curve_y_axes(run, clip_at)

    n_steps, n_evals = len(s["step"]), len(e["step"])
    x_max = _x_max(s["step"], e["step"])
    right = _right_margin(x_max)
    x_gap = x_numeric_margin(title=False, font=TICK_PX) + TOP_PANEL_TITLE_PX + 6
    boxes, stacked, left = _curve_boxes([_y_margin(a["ticktext"]) for a in y_axes], width, right, x_gap)
    layout = base_layout(
        boxes[-1][3],
        width=width,
        left=left,
        right=right,
        top=(TOP_TITLE_PX if title else 0) + TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        meta={
            "n_steps": n_steps,
            "n_evals": n_evals,
            "downsampled": run.every > 1 or run.every_e > 1,
            "every": run.every,
            "last_step": int(s["step"][-1]) if n_steps else None,
            "clip": clip_at,
            "target": target,
            "stacked": stacked,
        },
        showlegend=False,
        hovermode="closest",
        **_curve_panels(
            boxes,
            paper_w=width - left - right,
            y_axes=y_axes,
            titles=titles,
            x_max=x_max,
            stacked=stacked,
            waiting=(n_steps == 0, n_evals == 0),
        ),
    )
    _curve_lines(layout, target, clip_at)
    _with_title(layout, title, layout["height"])
    return go.Figure({"data": _curve_traces(run), "layout": layout})


# ---------------------------------------------------------------------------------------------
# runs_overlay
# ---------------------------------------------------------------------------------------------
RUN_COLORS = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE)  # one a run, in the order given
RUN_DASHES = ("solid", "dash", "dot", "dashdot")  # and a dash each: apart in grey print too
MAX_OVERLAID = len(RUN_COLORS)
NOT_RECORDED = "not recorded"
NOT_RECORDED_BY = "not recorded by {runs}"
OVERLAY_SERIES = (("loss", "step"), ("accuracy", "eval_step"), ("lr", "step"), ("grad_norm", "step"))


@dataclass(frozen=True)
class _Columns:
    """One run's columns, checked: its update and evaluation steps, and each series of
    :data:`OVERLAY_SERIES` (None where the run did not record it)."""

    step: npt.NDArray[np.float64]
    eval_step: npt.NDArray[np.float64]
    series: dict[str, npt.NDArray[np.float64] | None]

    def steps_of(self, x_name: str) -> npt.NDArray[np.float64]:
        return self.step if x_name == "step" else self.eval_step

    def column(self, name: str, x_name: str) -> npt.NDArray[np.float64]:
        """A series to draw: all gaps where it was not recorded."""
        y = self.series[name]
        return y if y is not None else np.full(self.steps_of(x_name).shape, np.nan)


def _overlay_columns(run: Curves, i: int) -> _Columns:
    """Run ``i``'s columns, each series checked against its steps."""
    step, eval_step = (np.asarray(getattr(run, x), dtype=np.float64) for x in ("step", "eval_step"))
    _check_steps(step, f"runs[{i}].step")
    _check_steps(eval_step, f"runs[{i}].eval_step")
    cols = _Columns(step, eval_step, {})
    for name, x_name in OVERLAY_SERIES:
        y = getattr(run, name)
        if y is not None:
            y = np.asarray(y, dtype=np.float64)
            x_shape = cols.steps_of(x_name).shape
            if y.shape != x_shape:
                raise ValueError(f"runs[{i}].{name} has shape {y.shape} but runs[{i}].{x_name} has {x_shape}")
        cols.series[name] = y
    accuracy = cols.series["accuracy"]
    if accuracy is not None:
        _check_accuracy(accuracy, f"runs[{i}]")
    return cols


def _overlay_curves(cols: _Columns) -> _Curves:
    """One run as drawn: thinned to :data:`MAX_POINTS`, float32; a series not recorded is all gaps."""
    steps = {"step": cols.step, **{name: cols.column(name, "step") for name in ("loss", "lr", "grad_norm")}}
    return _curves(steps, {"step": cols.eval_step, "accuracy": cols.column("accuracy", "eval_step")})


def _all_of(runs: Sequence[_Curves]) -> _Curves:
    """Every run's points in one `_Curves`: the axes' ranges span them all."""
    fields = ("x", "x_e", "loss", "acc", "lr", "grad")
    joined = {f: np.concatenate([getattr(r, f) for r in runs]) for f in fields}
    return _Curves(**joined, every=1, every_e=1)


def _overlay_traces(
    runs: Sequence[_Curves], labels: Sequence[str], recorded: Sequence[set[str]]
) -> list[dict[str, Any]]:
    """Four traces a run (one a panel), in its color and dash; its legend entry on the first
    trace it has, one legend group a run (a click on it hides the run in every panel)."""
    data: list[dict[str, Any]] = []
    for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
        style = {"color": RUN_COLORS[i], "dash": RUN_DASHES[i]}
        shown = False
        for (name, _), trace in zip(OVERLAY_SERIES, _curve_traces(run), strict=True):
            if name not in recorded[i]:
                continue
            trace.update(name=label, legendgroup=str(i), showlegend=not shown)
            trace["line"] = {**trace["line"], **style}
            trace["marker"] = {**trace["marker"], "color": style["color"]}
            trace["hovertemplate"] = label + "<br>" + trace["hovertemplate"]
            data.append(trace)
            shown = True
        if not shown:  # plotly drops the legend entry of a run without a trace: keep it listed
            data.append({"type": "scatter", "x": [None], "y": [None], "name": label, "legendgroup": str(i),
                         "mode": "lines", "line": style, "showlegend": True, "hoverinfo": "skip"})  # fmt: skip
    return data


# where a "not recorded by" note sits in each panel: a corner the curves seldom reach (the loss
# falls, the accuracy rises, the learning rate ends above 0, the gradient norm starts near its top)
NOTE_CORNERS = ((1.0, 1.0), (1.0, 0.0), (1.0, 0.0), (0.0, 0.0))


def _overlay_notes(labels: Sequence[str], recorded: Sequence[set[str]]) -> list[dict[str, Any]]:
    """In each panel: "not recorded" when no run has its series, else "not recorded by <label>"
    for the runs that lack it but have other series (a run with no curve at all says so in the
    legend instead), in a corner the curves seldom reach."""
    notes = []
    partial = [bool(have) for have in recorded]
    for p, (name, _) in enumerate(OVERLAY_SERIES):
        sfx = "" if p == 0 else str(p + 1)
        lack = [name not in have for have in recorded]
        missing = [label for label, no, some in zip(labels, lack, partial, strict=True) if no and some]
        if all(lack):
            notes.append(_note(tr(NOT_RECORDED), sfx))
        elif missing:
            x, y = NOTE_CORNERS[p]
            note = _note(tr(NOT_RECORDED_BY, runs=tr("; ").join(missing)), sfx)  # "；" in Chinese
            notes.append({**note, "x": 0.02 + 0.96 * x, "y": 0.04 + 0.92 * y, "xanchor": "right" if x else "left",
                          "yanchor": "top" if y else "bottom", "font": {**note["font"], "size": LABEL_FONT_PX}})  # fmt: skip
    return notes


def runs_overlay(
    runs: Sequence[Curves],
    labels: Sequence[str],
    *,
    clips: Sequence[float] = (),
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Up to four runs on one set of curves: the four panels of `training_curves` (training
    loss, held-out token accuracy, learning rate, gradient norm before clipping), one color and
    dash a run, its ``labels`` entry in a legend above the panels (shown as given: escape user
    text with ``safe_label``).

    ``runs``: `tformer.training.compare.Curves` (columns over the update step; a series of None
    was not recorded by that run, and its panel says so). The loss and the gradient norm are
    drawn as the runs hold them: all with the same ``window`` (updates each is averaged over),
    named in their panel titles. ``clips``: clipping thresholds to draw dashed (0 = none).
    ``layout.meta``: ``labels``, ``n_steps``, ``n_evals``, ``window``, ``recorded``, ``stacked``,
    ``width``.
    """
    if not 1 <= len(runs) <= MAX_OVERLAID or len(labels) != len(runs):
        raise ValueError(
            f"{len(runs)} runs and {len(labels)} labels: pass 1 to {MAX_OVERLAID} runs, a label each"
        )
    windows = {int(r.window) for r in runs}
    if len(windows) != 1 or min(windows) < 1:
        raise ValueError(
            f"the runs are averaged over windows {sorted(windows)}: pass one of at least 1 update"
        )
    window = windows.pop()
    cols = [_overlay_columns(r, i) for i, r in enumerate(runs)]
    recorded = [{name for name, _ in OVERLAY_SERIES if c.series[name] is not None} for c in cols]
    drawn = [_overlay_curves(c) for c in cols]
    clip_lines = sorted({float(c) for c in clips if _check_clip(c) is not None})
    y_axes, titles = _curve_y_axes(_all_of(drawn), clip_lines[-1] if clip_lines else None)
    if window > 1:
        titles[0] = tr("training loss, mean of {n} updates (log scale)", n=window)
        titles[3] = tr("gradient norm, mean of {n} updates (log scale)", n=window)

    x_max = _x_max(*(c.step for c in cols), *(c.eval_step for c in cols))
    right = _right_margin(x_max)
    x_gap = x_numeric_margin(title=False, font=TICK_PX) + TOP_PANEL_TITLE_PX + 6
    boxes, stacked, left = _curve_boxes([_y_margin(a["ticktext"]) for a in y_axes], width, right, x_gap)
    paper_w, plot_h = width - left - right, boxes[-1][3]
    # a run with no curve at all (saved before they were kept) says so in the legend
    names = [
        label if have else tr("{label} (curves not recorded)", label=label)
        for label, have in zip(labels, recorded, strict=True)
    ]
    n_rows = legend_rows(names, paper_w)
    panels = _curve_panels(boxes, paper_w=paper_w, y_axes=y_axes, titles=titles, x_max=x_max, stacked=stacked,
                           waiting=(False, False))  # fmt: skip
    panels["annotations"] += _overlay_notes(labels, recorded)
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=right,
        top=(TOP_TITLE_PX if title else 0) + n_rows * LEGEND_PX + TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        meta={
            "labels": list(labels),
            "n_steps": [int(c.step.size) for c in cols],
            "n_evals": [int(c.eval_step.size) for c in cols],
            "window": window,
            "recorded": [sorted(r) for r in recorded],
            "stacked": stacked,
        },
        showlegend=True,
        legend=top_legend(n_rows, plot_h),
        hovermode="closest",
        **panels,
    )
    for clip_at in clip_lines:
        _curve_lines(layout, None, clip_at)
    _with_title(layout, title, layout["height"])
    return go.Figure({"data": _overlay_traces(drawn, names, recorded), "layout": layout})


# ---------------------------------------------------------------------------------------------
# schedule_figure
# ---------------------------------------------------------------------------------------------
def _schedule_inputs(
    steps: npt.ArrayLike, lrs: npt.ArrayLike, warmup: int | None
) -> tuple[Float32Array, Float32Array, int | None]:
    """``steps`` and ``lrs`` as float32 [step] (one run's increasing steps, rates >= 0), and
    the warm-up to mark (``None`` for none or 0)."""
    x_all = as_float32(steps, 1, "steps", "[step]")
    y_all = as_float32(lrs, 1, "lrs", "[step]")
    if x_all.shape != y_all.shape:
        raise ValueError(f"steps has shape {x_all.shape} but lrs has shape {y_all.shape} [step]")
    if x_all.shape[0] == 0:
        raise ValueError("steps has shape (0,): the schedule needs at least one step")
    _check_steps(x_all.astype(np.float64), "steps")
    if not (np.isfinite(y_all).all() and (y_all >= 0).all()):
        i = int(np.flatnonzero(~(np.isfinite(y_all) & (y_all >= 0)))[0])
        raise ValueError(f"lrs must be finite and >= 0, got lrs[{i}] = {y_all[i]:g}")
    if warmup is not None and (not _is_number(warmup) or warmup < 0 or int(warmup) != warmup):
        raise ValueError(f"warmup must be a whole number of steps >= 0, got {warmup!r}")
    return x_all, y_all, int(warmup) if warmup else None


def _warmup_marks(w: int, x_max: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """The dotted line where the warm-up ends at step ``w``, and its label."""
    line = {
        "type": "line",
        "name": "warm-up",
        "xref": "x",
        "yref": "y domain",
        "x0": w,
        "x1": w,
        "y0": 0,
        "y1": 1,
        "line": {"color": REFERENCE_COLOR, "width": 2, "dash": "dot"},
        "layer": "below",
    }
    # low beside the line, on the side with more room: the curve is high right after the
    # peak and the ramp is low only near step 0
    right_side = w <= 0.6 * x_max
    label = {
        "text": tr("warm-up: {steps:,} steps", steps=w),
        "xref": "x",
        "yref": "y domain",
        "x": w,
        "y": 0.06,
        "xanchor": "left" if right_side else "right",
        "yanchor": "bottom",
        "xshift": 5 if right_side else -5,
        "showarrow": False,
        "font": {"size": LABEL_FONT_PX, "color": NOTE_COLOR},
    }
    return line, label


def schedule_figure(
    steps: npt.ArrayLike,
    lrs: npt.ArrayLike,
    *,
    warmup: int | None = None,
    title: str | None = None,
    width: int = HALF_WIDTH,
) -> go.Figure:
    """The learning-rate schedule: ``lrs`` [step] over ``steps`` [step] (e.g.
    ``tformer.training.recipe.schedule_curve(recipe)``), compact (260 px tall) for beside its
    settings. ``warmup``: a dotted line where the warm-up ends, labelled with its length
    (none for ``None`` or 0). Over :data:`MAX_POINTS` steps every k-th one and the last are
    drawn. ``layout.meta``: ``n_steps``, ``downsampled``, ``warmup``, ``peak``, ``width``.
    """
    x_all, y_all, w = _schedule_inputs(steps, lrs, warmup)
    n = int(x_all.shape[0])
    keep, every = _kept(n)
    peak = float(y_all.max())
    vals, texts, unit = _scaled_ticks(1.1 * (peak if peak > 0 else 1e-3))
    x_max = max(float(x_all[-1]), float(w or 0), MIN_X)

    left = _y_margin(texts)
    right = _right_margin(x_max)
    top = (TOP_TITLE_PX if title else 0) + TOP_PANEL_TITLE_PX
    bottom = x_numeric_margin(font=TICK_PX)
    domain = ([0.0, 1.0], [0.0, 1.0])
    marks = _warmup_marks(w, x_max) if w is not None else None
    layout = base_layout(
        SCHEDULE_HEIGHT_PX - TOP_PANEL_TITLE_PX - bottom,  # the title, if any, adds to the height
        width=width,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        meta={"n_steps": n, "downsampled": every > 1, "warmup": w, "peak": peak},
        xaxis={
            **_base_axis(domain[0], "y"),
            "range": [0.0, x_max * 1.015],
            **_step_ticks(x_max, width - left - right),
            "title": axis_title(tr("update step")),
        },
        yaxis={
            **_base_axis(domain[1], "x"),
            "range": [0.0, 1.1 * (peak if peak > 0 else 1e-3)],
            "tickmode": "array",
            "tickvals": vals,
            "ticktext": texts,
        },
        annotations=[panel_title(tr("learning rate") + unit, *domain), *([marks[1]] if marks else [])],
        shapes=[marks[0]] if marks else [],
        showlegend=False,
        hovermode="closest",
    )
    _with_title(layout, title, layout["height"])
    trace = _series(
        x_all[keep],
        y_all[keep],
        "",
        name=tr("learning rate"),
        color=LR_COLOR,
        hover=tr("step %{x:,}<br>learning rate %{y:.3g}"),
    )
    return go.Figure({"data": [trace], "layout": layout})


# ---------------------------------------------------------------------------------------------
# heads_race_figure
# ---------------------------------------------------------------------------------------------
def _head_count(key: object, name: str) -> int:
    if not isinstance(key, numbers.Integral) or isinstance(key, bool) or int(key) < 1:
        raise ValueError(f"{name} keys must be head counts (whole numbers >= 1), got {key!r}")
    return int(key)


def _mapping(obj: object, name: str, what: str) -> Mapping[Any, Any]:
    if not isinstance(obj, Mapping):
        raise ValueError(f"{name} must be a dict {{n_heads: {what}}}, got {type(obj).__name__}")
    return obj


def _race_evals(evals_by_heads: object) -> dict[int, Series]:
    out = {}
    for key, pairs in _mapping(evals_by_heads, "evals_by_heads", "list of (step, accuracy)").items():
        h = _head_count(key, "evals_by_heads")
        name = f"evals_by_heads[{h}]"
        if pairs is None:
            pairs = []
        if isinstance(pairs, (str, bytes, Mapping)) or not isinstance(pairs, Sequence):
            raise ValueError(f"{name} must be a list of (step, accuracy) pairs, got {type(pairs).__name__}")
        arr = np.empty((len(pairs), 2), dtype=np.float64)
        for i, pair in enumerate(pairs):
            ok = isinstance(pair, Sequence) and not isinstance(pair, (str, bytes)) and len(pair) == 2
            if not ok or not all(_is_number(v) for v in pair):
                raise ValueError(f"{name}[{i}] must be a (step, accuracy) pair of numbers, got {pair!r}")
            arr[i] = (float(pair[0]), float(pair[1]))
        _check_steps(arr[:, 0], name)
        _check_accuracy(arr[:, 1], name)
        out[h] = (arr[:, 0], arr[:, 1])
    return out


def _race_seconds(seconds_by_heads: object) -> dict[int, float | None]:
    out: dict[int, float | None] = {}
    for key, sec in _mapping(seconds_by_heads, "seconds_by_heads", "mean seconds per update").items():
        h = _head_count(key, "seconds_by_heads")
        if sec is None or (_is_number(sec) and math.isnan(float(sec))):
            out[h] = None  # not measured yet
        elif not _is_number(sec) or not math.isfinite(float(sec)) or float(sec) <= 0:
            raise ValueError(
                f"seconds_by_heads[{h}] must be seconds > 0 (or None while unknown), got {sec!r}"
            )
        else:
            out[h] = float(sec)
    return out


def _race_spread(spread_by_heads: object, seconds: dict[int, float | None]) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    for key, pair in _mapping(spread_by_heads, "spread_by_heads", "(q1, q3) seconds per update").items():
        h = _head_count(key, "spread_by_heads")
        ok = isinstance(pair, Sequence) and not isinstance(pair, (str, bytes)) and len(pair) == 2
        if not ok or not all(_is_number(v) and math.isfinite(float(v)) for v in pair):
            raise ValueError(f"spread_by_heads[{h}] must be a (q1, q3) pair of seconds, got {pair!r}")
        q1, q3 = float(pair[0]), float(pair[1])
        sec = seconds.get(h)
        if sec is None:
            continue  # no time yet: no bar to draw the spread on
        if not 0 <= q1 <= sec <= q3:
            raise ValueError(
                f"spread_by_heads[{h}] = {pair!r} must hold its median {sec!r} (q1 <= median <= q3)"
            )
        out[h] = (q1, q3)
    return out


def _head_name(h: int, d_head: int | None) -> str:
    if d_head is None:
        return tr("1 head") if h == 1 else tr("{h} heads", h=h)
    if h == 1:
        return tr("1 head, d<sub>head</sub> = {d_head}", d_head=d_head)
    return tr("{h} heads, d<sub>head</sub> = {d_head}", h=h, d_head=d_head)


def _bar_hover(name: str, ms: float | None, spread: tuple[float, float] | None) -> str:
    if ms is None:
        return f"{name}<br>{tr(RUNNING)}"
    if spread is None:
        return name + "<br>" + tr("{ms:.3g} ms per update", ms=ms)
    return (
        name
        + "<br>"
        + tr(
            "{ms:.3g} ms per update (quartiles {q1:.3g}–{q3:.3g} ms)",
            ms=ms,
            q1=1000.0 * spread[0],
            q3=1000.0 * spread[1],
        )
    )


@dataclass(frozen=True)
class _Race:
    """The validated runs of a race, one entry of each list a head count (sorted): its legend
    name, its color (bar and line alike), its mean ms per update (``None`` while running)."""

    heads: list[int]
    names: list[str]
    colors: list[str]
    ms: list[float | None]
    evals: dict[int, Series]
    seconds: dict[int, float | None]
    spread: dict[int, tuple[float, float]]  # (q1, q3) seconds, only where there is a time

    def steps_acc(self, h: int) -> Series:
        """The (step, accuracy) columns of head count ``h``, empty before its first evaluation."""
        return self.evals.get(h, _NO_EVALS)


def _race_d_heads(d_head_by_heads: object) -> dict[int, int]:
    """{n_heads: d_head}, each a whole number >= 1."""
    d_heads = {}
    for key, d in _mapping(d_head_by_heads, "d_head_by_heads", "d_head").items():
        h = _head_count(key, "d_head_by_heads")
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or int(d) < 1:
            raise ValueError(f"d_head_by_heads[{h}] must be a whole number >= 1, got {d!r}")
        d_heads[h] = int(d)
    return d_heads


def _race(
    evals_by_heads: object, seconds_by_heads: object, spread_by_heads: object, d_head_by_heads: object
) -> _Race:
    """The race's inputs checked and lined up by sorted head count (a head count in either
    ``evals_by_heads`` or ``seconds_by_heads`` gets a line and a bar slot)."""
    evals = _race_evals(evals_by_heads)
    seconds = _race_seconds(seconds_by_heads)
    spread = _race_spread(spread_by_heads, seconds)
    d_heads = _race_d_heads(d_head_by_heads)
    heads = sorted(set(evals) | set(seconds))
    return _Race(
        heads=heads,
        names=[_head_name(h, d_heads.get(h)) for h in heads],
        colors=[HEAD_COLORS[i % len(HEAD_COLORS)] for i in range(len(heads))],
        ms=[None if seconds.get(h) is None else 1000.0 * float(seconds[h] or 0) for h in heads],
        evals=evals,
        seconds=seconds,
        spread=spread,
    )


def _ms_axis(race: _Race) -> dict[str, Any]:
    """The bar panel's y axis in ms: from 0 to a quarter above the longest time or quartile,
    about 3 round ticks."""
    known = [m for m in race.ms if m is not None]
    ms_top = max(known + [1000.0 * q3 for _, q3 in race.spread.values()], default=1.0)
    vals, text = _linear_ticks(ms_top * 1.25, 3)
    return {
        "range": [0.0, vals[-1] if vals[-1] >= ms_top * 1.2 else ms_top * 1.25],
        "tickmode": "array",
        "tickvals": vals,
        "ticktext": text,
    }


def _race_boxes(width: int, left_bar: int, right: int) -> tuple[list[Box], bool, int, float]:
    """Boxes of the accuracy panel and the bar panel (side by side, or stacked when either
    would be too narrow), whether stacked, the left margin and the accuracy panel's width.
    ``left_bar``: room for the bar panel's tick labels."""
    left_acc = _y_margin(ACCURACY_TICKTEXT)
    room = width - left_acc - PANEL_AIR_PX - left_bar - right
    acc_w, bar_w = RACE_ACCURACY_SHARE * room, (1 - RACE_ACCURACY_SHARE) * room
    if acc_w >= 2 * MIN_PANEL_PX and bar_w >= 0.75 * MIN_PANEL_PX:
        x1 = acc_w + PANEL_AIR_PX + left_bar
        side_by_side: list[Box] = [(0.0, acc_w, 0.0, RACE_PANEL_PX), (x1, x1 + bar_w, 0.0, RACE_PANEL_PX)]
        return side_by_side, False, left_acc, acc_w
    left = max(left_acc, left_bar)
    plot_w = width - left - right
    y1 = RACE_PANEL_PX + x_numeric_margin(font=TICK_PX) + TOP_PANEL_TITLE_PX + 6
    return [(0.0, plot_w, 0.0, RACE_PANEL_PX), (0.0, plot_w, y1, y1 + RACE_PANEL_PX)], True, left, plot_w


def _race_lines(race: _Race) -> list[dict[str, Any]]:
    """Accuracy over the steps, one line and legend entry a head count."""
    data: list[dict[str, Any]] = []
    for h, name, color in zip(race.heads, race.names, race.colors, strict=True):
        steps, acc = race.steps_acc(h)
        keep, _ = _kept(len(steps))
        if not steps.size:  # plotly drops the legend entry of a trace without points
            steps, acc, keep = np.array([np.nan]), np.array([np.nan]), np.array([0])
        trace = _series(
            steps[keep].astype(np.float32),
            acc[keep].astype(np.float32),
            "",
            name=name,
            color=color,
            hover=name + "<br>" + tr("step %{x:,}<br>accuracy %{y:.1%}"),
        )
        data.append({**trace, "legendgroup": str(h), "showlegend": True})
    if not race.heads:  # plotly draws no axes for a panel without a trace
        data.append({"type": "scatter", "x": [], "y": [], "xaxis": "x", "yaxis": "y", "showlegend": False})
    return data


def _race_bars(race: _Race) -> dict[str, Any]:
    """The time per update, one bar a head count in its line's color (0 while running), the
    quartiles as error bars where known."""
    bar: dict[str, Any] = {
        "type": "bar",
        "name": tr("time per update"),
        "x": list(range(len(race.heads))),
        "y": [0.0 if m is None else m for m in race.ms],
        "xaxis": "x2",
        "yaxis": "y2",
        "marker": {"color": race.colors, "line": {"width": 0}},
        "customdata": [
            _bar_hover(n, m, race.spread.get(h))
            for h, n, m in zip(race.heads, race.names, race.ms, strict=True)
        ],
        "hovertemplate": "%{customdata}<extra></extra>",
        "showlegend": False,
    }
    if race.spread:
        spread = race.spread
        pairs = list(zip(race.heads, race.ms, strict=True))
        bar["error_y"] = {
            "type": "data",
            "symmetric": False,
            "arrayminus": [
                (m - 1000.0 * spread[h][0]) if h in spread and m is not None else 0.0 for h, m in pairs
            ],
            "array": [
                (1000.0 * spread[h][1] - m) if h in spread and m is not None else 0.0 for h, m in pairs
            ],
            "color": INK,
            "thickness": 1.5,
            "width": 6,
        }
    return bar


def _race_axes(
    race: _Race, domains: Sequence[Domain], *, x_max: float, acc_w: float, ms_axis: dict[str, Any]
) -> dict[str, Any]:
    """The accuracy panel's step and accuracy axes, the bar panel's head-count and ms axes."""
    return {
        "xaxis": {
            **_base_axis(domains[0][0], "y"),
            "range": [0.0, x_max * 1.015],
            **_step_ticks(x_max, acc_w),
            "title": axis_title(tr("update step")),
        },
        "yaxis": {**_base_axis(domains[0][1], "x"), "range": ACCURACY_RANGE, **ACCURACY_TICKS},
        "xaxis2": {
            **_base_axis(domains[1][0], "y2"),
            "range": [-0.5, max(len(race.heads), 1) - 0.5],
            "tickmode": "array",
            "tickvals": list(range(len(race.heads))),
            "ticktext": [str(h) for h in race.heads],
            "title": axis_title(tr("heads")),
        },
        "yaxis2": {**_base_axis(domains[1][1], "x2"), **ms_axis},
    }


def _race_annotations(race: _Race, domains: Sequence[Domain]) -> list[dict[str, Any]]:
    """The panel titles, each bar's label (its ms, or "running"), and a note in a panel that
    has nothing to draw yet."""
    notes = [panel_title(tr(t), *d) for t, d in zip(RACE_TITLES, domains, strict=True)]
    if not any(race.steps_acc(h)[0].size for h in race.heads):
        notes.append(_note(tr(WAITING_EVAL), ""))
    # bar labels as annotations: plotly shrinks a bar's own text to the bar's width; above the
    # error bar where there is one
    for i, (h, m) in enumerate(zip(race.heads, race.ms, strict=True)):
        label_y = 0.0 if m is None else (max(m, 1000.0 * race.spread[h][1]) if h in race.spread else m)
        notes.append(
            {
                "text": tr(RUNNING) if m is None else f"{m:.3g} ms",
                "xref": "x2",
                "yref": "y2",
                "x": i,
                "y": label_y,
                "yanchor": "bottom",
                "yshift": 2,
                "showarrow": False,
                "font": {"size": TICK_PX, "color": NOTE_COLOR if m is None else INK},
            }
        )
    if all(m is None for m in race.ms):
        notes.append(_note(tr(WAITING_TIME), "2"))
    return notes


def heads_race_figure(
    evals_by_heads: Mapping[int, Sequence[tuple[float, float]]],
    seconds_by_heads: Mapping[int, float | None],
    *,
    spread_by_heads: Mapping[int, tuple[float, float]] | None = None,
    d_head_by_heads: Mapping[int, int] | None = None,
    target: float | None = None,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Runs that differ in their number of heads, side by side: held-out token accuracy over
    the update step, one line per head count, and the mean time per update (ms), one bar per
    head count in the same color. In a half-width column the two panels are stacked.
    ``spread_by_heads``: {n_heads: (q1, q3) seconds per update}, each time's quartiles, drawn as
    error bars on its bar (a head count without a time yet has no bar to draw them on).

    ``evals_by_heads``: {n_heads: [(step, accuracy 0..1), ...]}; ``seconds_by_heads``:
    {n_heads: mean seconds per update}. A head count in either dict gets a line, a legend
    entry and a bar slot; an empty list or a ``None`` time (a run still going) draws nothing
    there yet (the bar slot says "running"). ``d_head_by_heads``: {n_heads: d_head}, named in the
    legend ("4 heads, d_head = 16"). Colors follow the sorted head counts: pass every head
    count from the start (with empty lists) to keep them fixed while runs finish.
    ``target``: a dashed accuracy line. ``layout.meta``: ``heads``, ``n_evals``, ``seconds``,
    ``stacked``, ``width``.
    """
    race = _race(evals_by_heads, seconds_by_heads, spread_by_heads or {}, d_head_by_heads or {})
    target = _check_target(target)

    x_max = _x_max(*(race.steps_acc(h)[0] for h in race.heads))
    ms_axis = _ms_axis(race)
    right = _right_margin(x_max)
    boxes, stacked, left, acc_w = _race_boxes(width, _y_margin(ms_axis["ticktext"]), right)
    paper_w, plot_h = width - left - right, boxes[-1][3]
    n_rows = legend_rows(race.names, paper_w) if race.heads else 0
    domains = [px_domain(*b, paper_w, plot_h) for b in boxes]
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=right,
        top=(TOP_TITLE_PX if title else 0) + n_rows * LEGEND_PX + TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        meta={
            "heads": race.heads,
            "n_evals": [int(race.evals[h][0].size) if h in race.evals else 0 for h in race.heads],
            "seconds": [race.seconds.get(h) for h in race.heads],
            "spread": [race.spread.get(h) for h in race.heads],
            "stacked": stacked,
        },
        annotations=_race_annotations(race, domains),
        shapes=[],
        showlegend=bool(race.heads),
        legend=top_legend(n_rows, plot_h),
        bargap=0.35,
        hovermode="closest",
        **_race_axes(race, domains, x_max=x_max, acc_w=acc_w, ms_axis=ms_axis),
    )
    if target is not None:
        layout["shapes"].append(_hline("", target, "target"))
        label = tr("target {percent:g} %", percent=round(target * 100, 4))
        layout["annotations"].append(_line_label(label, "", target, right=False, above=False))
    _with_title(layout, title, layout["height"])
    return go.Figure({"data": [*_race_lines(race), _race_bars(race)], "layout": layout})
