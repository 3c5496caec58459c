"""Figures of what attention costs (the sweeps of ``tformer.efficiency.costs``): lines on log-log axes.

On log-log axes a cost that grows like n^p is a straight line of slope p, so the n² wall is
the steepest line and its exponent can be read off (the legend names each fitted exponent).
One builder draws every such chart: time against n per method, peak memory against n with the
formula for the scores as a dashed reference line, a GRU against an attention layer, the path
length between the first and the last token, sparse against dense attention.

Every text shown (title, axis titles, legend names, the hover's unit) is passed in by the
caller, already translated; numpy and plotly only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from .colors import BLACK, BLUE, BLUISH_GREEN, GUIDE, ORANGE, REDDISH_PURPLE, SKY_BLUE, VERMILLION
from .labels import axis_title, safe_label, text_px
from .layout import FULL_WIDTH, base_layout, figure_title

__all__ = ["COLORS", "Series", "cost_lines"]

# One color per method key, the same on every chart of the page (Okabe-Ito: apart for
# color-blind viewers and on a washed-out projector). Dense/sparse pairs share a hue.
COLORS = {
    "explicit": VERMILLION,
    "sdpa_math": ORANGE,
    "sdpa_efficient": BLUISH_GREEN,
    "sdpa_flash": BLUE,
    "sdpa_cudnn": REDDISH_PURPLE,
    "tiled": BLACK,
    "gru": VERMILLION,
    "attention": BLUE,
    "dense_local": BLUISH_GREEN,
    "local": BLUISH_GREEN,
    "dense_strided": REDDISH_PURPLE,
    "strided": REDDISH_PURPLE,
    "formula": GUIDE,
}
DEFAULT_COLORS = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, BLACK)
DASHES = ("solid", "dot", "dash", "dashdot", "longdash")
LEGEND_FONT_PX = 14
TICK_FONT_PX = 13
PLOT_PX = 330
MIN_PLOT_W = 260
LINE_PX = 2.5
MARKER_PX = 8


@dataclass(frozen=True)
class Series:
    """One line: ``name`` its legend entry (shown as given), ``n`` the lengths, ``y`` the values
    (points that are not positive and finite are left out: a log axis cannot show them),
    ``key`` a method key (its color in `COLORS`), ``dash`` one of `DASHES`; ``lo`` and ``hi``
    (optional, both or neither): the spread of each value (a measured time's quartiles),
    drawn as error bars."""

    name: str
    n: npt.ArrayLike
    y: npt.ArrayLike
    key: str = ""
    dash: str = "solid"
    lo: npt.ArrayLike | None = None
    hi: npt.ArrayLike | None = None


def _points(
    s: Series,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
    """The series' plottable (n, y) and, with a spread, [2, points] of (y - lo, hi - y)."""
    n = np.asarray(s.n, dtype=np.float64).ravel()
    y = np.asarray(s.y, dtype=np.float64).ravel()
    if n.shape != y.shape:
        raise ValueError(f"series {s.name!r}: n has {n.size} values but y has {y.size}")
    if s.dash not in DASHES:
        raise ValueError(f"series {s.name!r}: dash {s.dash!r} is not one of {', '.join(DASHES)}")
    ok = np.isfinite(n) & np.isfinite(y) & (n > 0) & (y > 0)
    if (s.lo is None) != (s.hi is None):
        raise ValueError(f"series {s.name!r}: give both lo and hi, or neither")
    if s.lo is None or s.hi is None:
        return n[ok], y[ok], None
    lo = np.asarray(s.lo, dtype=np.float64).ravel()
    hi = np.asarray(s.hi, dtype=np.float64).ravel()
    if lo.shape != y.shape or hi.shape != y.shape:
        raise ValueError(f"series {s.name!r}: lo and hi need one value per point ({y.size})")
    if np.any((lo[ok] > y[ok]) | (hi[ok] < y[ok])):
        raise ValueError(f"series {s.name!r}: the spread must hold its value (lo <= y <= hi)")
    return n[ok], y[ok], np.stack([y[ok] - lo[ok], hi[ok] - y[ok]])


def _pow2_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks at powers of two from lo to hi (every other one when more than eight)."""
    e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    exps = list(range(e0, e1 + 1))
    while len(exps) > 8:
        exps = exps[::2]
    vals = [2.0**e for e in exps]
    return vals, [_num(v) for v in vals]


def _num(v: float) -> str:
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:g}"


def _log_ticks(lo: float, hi: float, max_ticks: int = 8) -> tuple[list[float], list[str]]:
    """Ticks of a log axis from lo to hi, each labelled in full (no bare "2" and "5" between
    decades): 1-2-5 of each decade, or 1-3, or the decades alone, whichever fits."""
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    vals: list[float] = []
    for mults in ((1, 2, 5), (1, 3), (1,)):
        vals = [m * 10.0**e for e in range(e0, e1 + 1) for m in mults]
        vals = [v for v in vals if lo / 1.05 <= v <= hi * 1.05]
        if len(vals) <= max_ticks:
            break
    step = 1
    while len(vals) > max_ticks:
        step += 1
        vals = [10.0**e for e in range(e0, e1 + 1) if e % step == 0]
    return vals, [_num(v) for v in vals]


def cost_lines(
    series: Sequence[Series],
    *,
    title: str,
    x_title: str,
    y_title: str,
    y_unit: str = "",
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Lines on log-log axes, one per series, with markers at the measured points and the
    legend to the right of the plot. ``y_unit`` follows the value in the hover."""
    if not series:
        raise ValueError("cost_lines needs at least one series")
    data: list[dict[str, Any]] = []
    all_n: list[float] = []
    all_y: list[float] = []
    for i, s in enumerate(series):
        n, y, spread = _points(s)
        all_n += n.tolist()
        all_y += y.tolist()
        name = safe_label(s.name)
        color = COLORS.get(s.key, DEFAULT_COLORS[i % len(DEFAULT_COLORS)])
        unit = safe_label(y_unit)
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": "lines+markers" if s.dash == "solid" else "lines",
            "x": n.astype(np.float32),
            "y": y.astype(np.float32),
            "name": name,
            "line": {"color": color, "width": LINE_PX, "dash": s.dash},
            "marker": {"size": MARKER_PX},
            "hovertemplate": f"n = %{{x:,}}<br>%{{y:.3g}} {unit}<extra>{name}</extra>",
        }
        if spread is not None:
            all_y += (y - spread[0]).tolist() + (y + spread[1]).tolist()
            trace["error_y"] = {
                "type": "data",
                "symmetric": False,
                "arrayminus": spread[0].astype(np.float32),
                "array": spread[1].astype(np.float32),
                "color": color,
                "thickness": 1.5,
                "width": 5,
            }
            trace["customdata"] = np.stack([y - spread[0], y + spread[1]], axis=-1).astype(np.float32)
            trace["hovertemplate"] = (
                f"n = %{{x:,}}<br>%{{y:.3g}} {unit} (%{{customdata[0]:.3g}}–%{{customdata[1]:.3g}})"
                f"<extra>{name}</extra>"
            )
        data.append(trace)
    legend_w = max((text_px(s.name, LEGEND_FONT_PX) for s in series), default=0.0) + 50
    right = int(min(legend_w, max(width - MIN_PLOT_W - 80, 120)))
    layout = base_layout(
        PLOT_PX,
        width=width,
        left=70,
        right=right,
        top=50,
        bottom=60,
        showlegend=True,
        legend={
            "x": 1.02,
            "xanchor": "left",
            "y": 1.0,
            "yanchor": "top",
            "font": {"size": LEGEND_FONT_PX},
        },
        xaxis={"type": "log", "title": axis_title(x_title), "tickfont": {"size": TICK_FONT_PX}},
        yaxis={"type": "log", "title": axis_title(y_title), "tickfont": {"size": TICK_FONT_PX}},
    )
    # these charts keep the axis pad of Streamlit's theme (base_layout's pad 0 would move their axes)
    del layout["margin"]["pad"]
    layout["title"] = figure_title(title)  # even an empty one, which base_layout leaves out
    if all_n:
        vals, text = _pow2_ticks(min(all_n), max(all_n))
        layout["xaxis"].update({"tickvals": vals, "ticktext": text})
    all_y = [v for v in all_y if v > 0]  # a spread reaching 0 has no place on a log axis
    if all_y and min(all_y) == max(all_y):  # one flat line: give the log axis a decade of room
        y0 = math.log10(all_y[0])
        layout["yaxis"]["range"] = [y0 - 0.5, y0 + 0.5]
        all_y += [10 ** (y0 - 0.5), 10 ** (y0 + 0.5)]
    if all_y:
        vals, text = _log_ticks(min(all_y), max(all_y))
        if len(vals) >= 2:
            layout["yaxis"].update({"tickvals": vals, "ticktext": text})
    return go.Figure({"data": data, "layout": layout})
