r"""Figures of the "Why attention" chapter: a recurrent layer against one attention layer, measured
(``tformer.analysis.why``, ``tformer.efficiency.rnn``, ``tformer.training.recall``).

- :func:`state_strip_figure`: each layer's hidden state per position as a strip; a recurrent
  layer's strip is filled up to the step shown (k of n), attention's is whole after its one step.
- :func:`path_length_figure`: the steps between the first and the last token (n − 1 for a GRU,
  1 for attention), and the steps that must run one after another; shared with the costs page.
- :func:`time_figure`: measured time of one call against n, median with its quartiles.
- :func:`gradient_figure`: :math:`\lVert \partial h_n / \partial x_i \rVert_F` against the
  distance n − i on a log axis, one line per layer and recurrent weight scale s, with the bound
  :math:`s^{\,n-i} \lVert W_{ih} \rVert_F` of the tanh RNN dotted.
- :func:`recall_figure`: held-out accuracy against the distance of the recalled token, one line
  per trained model, chance dashed.
- :func:`look_back_figure`: where the trained attention model's blank looks, one bar per key
  position (the first token, the answer, highlighted); :func:`first_weight_figure`: the weight
  on the first token against distance, one line per head.

Inputs are numpy arrays, plain values and objects read through protocols (nothing of tformer
outside this package is imported); every word drawn goes through `tformer.i18n.tr`; tokens are
shown through :func:`~tformer.figures.labels.safe_label`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32, check_tokens
from .colors import (
    BLACK,
    BLUE,
    BLUISH_GREEN,
    EMPTY,
    FAINT,
    GUIDE,
    INK,
    ORANGE,
    REDDISH_PURPLE,
    SKY_BLUE,
    VERMILLION,
)
from .costs import Series, cost_lines
from .labels import (
    axis_title,
    numeric_axis_margin,
    safe_label,
    tick_step,
    token_axis,
    token_labels,
    x_numeric_margin,
)
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    LEGEND_FONT_PX,
    LEGEND_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    base_layout,
    colorbar,
    colorbar_px,
    panel_title,
    px_domain,
    top_legend,
)

__all__ = [
    "KIND_COLORS",
    "KIND_NAMES",
    "ProfileLike",
    "StripPanel",
    "first_weight_figure",
    "gradient_figure",
    "look_back_figure",
    "path_length_figure",
    "recall_figure",
    "state_strip_figure",
    "time_figure",
]

KINDS = ("rnn", "gru", "attention")
# One color per layer kind on every figure of the chapter (Okabe-Ito: apart for color-blind
# viewers and on a washed-out projector); the costs page's GRU and attention colors.
KIND_COLORS = {"rnn": REDDISH_PURPLE, "gru": VERMILLION, "attention": BLUE}
KIND_NAMES = {"rnn": "tanh RNN", "gru": "GRU", "attention": "attention"}
KIND_SYMBOLS = {"rnn": "diamond", "gru": "circle", "attention": "square"}
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
BOUND_COLOR = GUIDE
CHANCE_COLOR = GUIDE
ANSWER_COLOR = VERMILLION
BAR_COLOR = SKY_BLUE
STEP_COLOR = INK
EMPTY_COLOR = EMPTY  # a strip's positions not computed yet
STRIP_COLORSCALE = "RdBu_r"
TICK_PX = 13
LINE_PX = 2.5
MARKER_PX = 8
PLOT_PX = 330
STRIP_ROW_PX = (6, 16)  # px per hidden unit in a strip, at least / at most
STRIP_MIN_PX = 70
STRIP_GAP_PX = TOP_PANEL_TITLE_PX + 8
MAX_STRIP_CELLS = 1 << 20  # positions x hidden units per panel: the browser's payload stays bounded


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {KINDS}")
    return kind


def _kind_name(kind: str) -> str:
    return tr(KIND_NAMES[_kind(kind)])


def _legend_rows(entries: Sequence[str], room: float) -> int:
    """Rows a horizontal legend of these entries needs in ``room`` px."""
    widths = [40 + 8 + len(e) * 0.62 * LEGEND_FONT_PX for e in entries]
    rows, used = 1, 0.0
    for w in widths:
        if used and used + w > room:
            rows, used = rows + 1, 0.0
        used += w
    return rows


def _legend_layout(
    data: Sequence[Mapping[str, Any]],
    *,
    left: float,
    width: int,
    title: str | None,
    meta: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """The layout of a line chart of the chapter: a plot :data:`PLOT_PX` tall under its title
    and a horizontal legend of the traces' names (as many rows as they need), numeric x ticks
    below. ``extra`` adds the axes and the chart's own keys."""
    rows = _legend_rows([t["name"] for t in data], width - left - EDGE_PX)
    return base_layout(
        PLOT_PX,
        width=width,
        left=left,
        right=EDGE_PX,
        top=(TOP_TITLE_PX if title else 8) + rows * LEGEND_PX + 8,
        bottom=x_numeric_margin(font=TICK_PX),
        title=title,
        meta=meta,
        showlegend=True,
        legend={**top_legend(rows, PLOT_PX), "y": 1.0 + (rows * LEGEND_PX + 8) / PLOT_PX},
        **extra,
    )


# --- the strip ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StripPanel:
    """One layer's strip: ``kind`` ("rnn", "gru" or "attention"), ``states`` [pos, d_hidden]
    (every position's state or output), ``filled``: how many positions are computed at the
    step shown (a recurrent layer after step k: k; attention after its one step: all)."""

    kind: str
    states: npt.ArrayLike
    filled: int


def _strip_title(kind: str, filled: int, n: int) -> str:
    if kind == "attention":
        return tr("attention: all {n} positions in 1 step", n=n)
    return tr("{layer}: step {k} of {n}", layer=_kind_name(kind), k=filled, n=n)


def state_strip_figure(
    panels: Sequence[StripPanel],
    labels: Sequence[object],
    *,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """The layers' states stacked, one panel each: x the token positions, y the hidden units,
    color the value (diverging around 0; -1..1 for the recurrent layers, whose states tanh and
    the GRU's interpolation keep inside it, ±the largest magnitude for attention's outputs).
    Positions a panel has not computed yet are blank; a dark line marks the step just taken.
    ``labels`` are the token labels, one per position.

    ``title`` is shown as given. ``layout.meta``: ``width``, ``n_pos``, ``filled`` (per panel),
    ``zmax`` (per panel).
    """
    arrays = _check_strips(panels, labels)
    n = len(labels)
    d_max = max(a.shape[1] for a in arrays)
    row_px = min(STRIP_ROW_PX[1], max(STRIP_ROW_PX[0], 160 / d_max))
    heights = [max(STRIP_MIN_PX, a.shape[1] * row_px) for a in arrays]
    zmaxes = [
        1.0 if p.kind != "attention" else max(float(np.nanmax(np.abs(a))), 1e-9)
        for p, a in zip(panels, arrays, strict=True)
    ]
    left = numeric_axis_margin("256", font=TICK_PX)
    right = colorbar_px(["-1.0", "0.5"], title=False) + 8
    plot_w = max(120.0, width - left - right)
    step = tick_step(labels, [("x", plot_w)])
    x_axis = token_axis(labels, plot_w, "x", step=step, title=tr("position (token)"))
    total_h = sum(heights) + STRIP_GAP_PX * len(arrays)
    layout = base_layout(
        total_h,
        width=width,
        left=left,
        right=right,
        top=TOP_TITLE_PX if title else 8,
        bottom=x_axis.margin,
        title=title,
        meta={"n_pos": n, "filled": [p.filled for p in panels], "zmax": zmaxes},
        annotations=[],
        shapes=[],
        plot_bgcolor=EMPTY_COLOR,
    )
    names = token_labels(labels)
    data: list[dict[str, Any]] = []
    y0 = 0.0
    for i, (p, a, h, zmax) in enumerate(zip(panels, arrays, heights, zmaxes, strict=True)):
        y0 += STRIP_GAP_PX
        xd, yd = px_domain(0, plot_w, y0, y0 + h, plot_w, total_h)
        y0 += h
        sfx = "" if i == 0 else str(i + 1)
        data.append(_strip_heatmap(p, a, zmax, names, sfx, yd))
        layout.update(_strip_axes(a.shape[1], n, x_axis.props, sfx, xd, yd, last=i == len(arrays) - 1))
        layout["annotations"].append(panel_title(_strip_title(p.kind, p.filled, n), xd, yd))
        if 0 < p.filled < n:
            layout["shapes"].append(_step_line(p.filled, sfx))
    return go.Figure({"data": data, "layout": layout})


def _check_strips(panels: Sequence[StripPanel], labels: Sequence[object]) -> list[Float32Array]:
    """Each panel's ``states`` as float32 [pos, d_hidden], checked: a known kind, one row per
    token label, at most :data:`MAX_STRIP_CELLS` cells, ``filled`` a position count."""
    if not panels:
        raise ValueError("state_strip_figure needs at least one panel")
    n = len(labels)
    if n == 0:
        raise ValueError("labels is empty: a strip needs at least one position")
    arrays = []
    for p in panels:
        _kind(p.kind)
        a = as_float32(p.states, 2, "states", "[pos, d_hidden]")
        check_tokens(labels, a.shape[0], "states", tuple(a.shape))
        if a.size > MAX_STRIP_CELLS:
            raise ValueError(f"states has shape {tuple(a.shape)}: at most {MAX_STRIP_CELLS} cells a panel")
        if isinstance(p.filled, bool) or not isinstance(p.filled, int) or not 0 <= p.filled <= n:
            raise ValueError(f"filled={p.filled!r} must be an integer in [0, {n}] (the token count)")
        arrays.append(a)
    return arrays


def _strip_heatmap(
    p: StripPanel, a: Float32Array, zmax: float, names: list[str], sfx: str, yd: Sequence[float]
) -> dict[str, Any]:
    """One strip's heatmap [d_hidden, pos] on axes ``x{sfx}``/``y{sfx}``: the positions not
    computed yet are gaps, its colorbar beside it and as tall (``yd`` its y domain)."""
    z = a.T.copy()  # [d_hidden, pos]
    z[:, p.filled :] = np.nan  # not computed yet
    return {
        "type": "heatmap",
        "z": z,
        "x": list(range(a.shape[0])),
        "y": list(range(a.shape[1])),
        "customdata": [names] * a.shape[1],
        "zmin": -zmax,
        "zmax": zmax,
        "zmid": 0.0,
        "colorscale": STRIP_COLORSCALE,
        "xaxis": f"x{sfx}",
        "yaxis": f"y{sfx}",
        "colorbar": colorbar("", x=1.0, y=sum(yd) / 2, length=yd[1] - yd[0]),
        "hovertemplate": f"%{{customdata}}<br>{tr('unit')} %{{y}}: %{{z:.3f}}<extra></extra>",
        "hoverongaps": False,
        "name": _kind_name(p.kind),
    }


def _strip_axes(
    d_hidden: int,
    n: int,
    x_props: dict[str, Any],
    sfx: str,
    xd: Sequence[float],
    yd: Sequence[float],
    *,
    last: bool,
) -> dict[str, Any]:
    """One strip's x axis (the token positions, matching the first strip's; labels and title
    on the ``last`` strip only) and y axis (the hidden units, top down)."""
    x_axis: dict[str, Any] = {
        **x_props,
        "type": "linear",
        "range": [-0.5, n - 0.5],
        "domain": xd,
        "anchor": f"y{sfx}",
        "showticklabels": last,
    }
    if sfx:
        x_axis["matches"] = "x"
    if not last:
        x_axis.pop("title", None)
    y_axis = {
        "domain": yd,
        "anchor": f"x{sfx}",
        "title": axis_title(tr("unit")),
        "tickfont": {"size": TICK_PX},
        "range": [d_hidden - 0.5, -0.5],
        "nticks": 5,
        "zeroline": False,
        "showgrid": False,
        "ticks": "",
    }
    return {f"xaxis{sfx}": x_axis, f"yaxis{sfx}": y_axis}


def _step_line(filled: int, sfx: str) -> dict[str, Any]:
    """The dark line after the last position a recurrent strip has computed."""
    return {
        "type": "line",
        "xref": f"x{sfx}",
        "yref": f"y{sfx} domain",
        "x0": filled - 0.5,
        "x1": filled - 0.5,
        "y0": 0,
        "y1": 1,
        "line": {"color": STEP_COLOR, "width": 2},
    }


# --- steps and time against n ----------------------------------------------------------------------------


def path_length_figure(
    n: npt.ArrayLike, paths: Mapping[str, Mapping[str, npt.ArrayLike]], *, width: int = FULL_WIDTH
) -> go.Figure:
    """How many steps separate the first and the last token, against n (log-log): the GRU's
    path (n − 1) and its steps that must run one after another (n), attention's (1). ``paths``
    is ``tformer.efficiency.rnn.path_lengths(n)``: ``{"gru": {"path", "sequential"},
    "attention": {"path", ...}}``. The costs page and the Why-attention page both draw it."""
    lengths = np.asarray(n)
    for key in ("gru", "attention"):
        if key not in paths or "path" not in paths[key]:
            raise ValueError(f"paths needs {key!r} with a 'path' array (tformer.efficiency.rnn.path_lengths)")
    if "sequential" not in paths["gru"]:
        raise ValueError("paths['gru'] needs a 'sequential' array (tformer.efficiency.rnn.path_lengths)")
    for key, kind in (("gru", "path"), ("gru", "sequential"), ("attention", "path")):
        if np.shape(paths[key][kind]) != lengths.shape:
            raise ValueError(
                f"paths[{key!r}][{kind!r}] has shape {np.shape(paths[key][kind])}, n has {lengths.shape}"
            )
    return cost_lines(
        [
            Series(
                tr("GRU: path from the first to the last token (n − 1)"),
                lengths,
                paths["gru"]["path"],
                key="gru",
            ),
            Series(
                tr("GRU: steps that must run one after another (n)"),
                lengths,
                paths["gru"]["sequential"],
                key="gru",
                dash="dot",
            ),
            Series(
                tr("attention: path and sequential steps (1)"),
                lengths,
                paths["attention"]["path"],
                key="attention",
            ),
        ],
        title=tr("How many steps separate the first and the last token"),
        x_title=tr("sequence length n (tokens)"),
        y_title=tr("steps"),
        width=width,
    )


TimeLine = tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike, npt.ArrayLike]  # n, median_s, q1_s, q3_s


def time_figure(lines: Mapping[str, TimeLine], *, width: int = FULL_WIDTH) -> go.Figure:
    """Measured time of one call against n (log-log), one line per layer kind ("rnn", "gru",
    "attention"): ``lines[kind] = (n, median_s, q1_s, q3_s)`` (seconds, from
    ``tformer.efficiency.rnn.rnn_sweep``'s curves: the median of repeated calls, error bars from
    the first to the third quartile)."""
    if not lines:
        raise ValueError("time_figure needs at least one line")
    series = []
    for kind, (n, med, q1, q3) in lines.items():
        _kind(kind)
        arrays = [np.asarray(v, dtype=np.float64) for v in (n, med, q1, q3)]
        if any(a.ndim != 1 or a.shape != arrays[0].shape for a in arrays):
            raise ValueError(
                f"lines[{kind!r}] must be four 1-D arrays of one length [n], got shapes {[a.shape for a in arrays]}"
            )
        n_, med_, q1_, q3_ = arrays
        if ((q1_ > med_) | (med_ > q3_)).any():
            raise ValueError(f"lines[{kind!r}]: every median must lie between its quartiles")
        series.append(Series(_kind_name(kind), n_, med_ * 1e3, key=kind, lo=q1_ * 1e3, hi=q3_ * 1e3))
    fig = cost_lines(
        series,
        title=tr(
            "Time of one call against n: median of repeated calls, bars from the first to the third quartile"
        ),
        x_title=tr("sequence length n (tokens)"),
        y_title=tr("time (ms)"),
        y_unit="ms",
        width=width,
    )
    for trace, kind in zip(fig.data, lines, strict=True):
        trace.line.color = KIND_COLORS[kind]
        if trace.error_y is not None:
            trace.error_y.color = KIND_COLORS[kind]
    return fig


# --- gradients ---------------------------------------------------------------------------------------------


class ProfileLike(Protocol):
    """What :func:`gradient_figure` reads (``tformer.analysis.why.GradientProfile``)."""

    @property
    def kind(self) -> str: ...
    @property
    def scale(self) -> float: ...
    @property
    def distance(self) -> npt.NDArray[Any]: ...
    @property
    def log10_norm(self) -> npt.NDArray[Any]: ...
    @property
    def log10_bound(self) -> npt.NDArray[Any] | None: ...
    @property
    def factor_per_step(self) -> float | None: ...


def _decade_ticks(lo: float, hi: float, max_ticks: int = 8) -> tuple[list[float], list[str]]:
    """Integer exponents spanning lo..hi (every k-th, k = 1, 2, 5, 10, ...) and their 10^k labels."""
    e0, e1 = math.floor(lo), math.ceil(hi)
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000):
        vals = [e for e in range(e0, e1 + 1) if e % step == 0]
        if len(vals) <= max_ticks:
            break
    return [float(v) for v in vals], [_power_of_ten(v) for v in vals]


def _power_of_ten(e: int) -> str:
    if e == 0:
        return "1"
    if e == 1:
        return "10"
    return f"10<sup>{e}</sup>".replace("-", "\u2212")


def _profile_name(p: ProfileLike) -> str:
    name = _kind_name(p.kind)
    if p.kind != "attention":
        name = tr("{layer}, s = {scale:g}", layer=name, scale=p.scale)
    if p.factor_per_step is not None:
        name = tr("{name} (×{factor:.2g} a step)", name=name, factor=p.factor_per_step)
    return name


def gradient_figure(
    profiles: Sequence[ProfileLike],
    *,
    bounds: bool = True,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    r"""‖∂h_n/∂x_i‖_F against the distance n − i, one line per profile: the layer's color,
    one dash per recurrent weight scale s (in the order first met). The y axis is logarithmic:
    it plots log10 of the norm and labels it in powers of ten, so norms far below float64's
    range (10⁻³⁰⁸) still show. Each legend entry names the fitted factor per step. With
    ``bounds``, each tanh RNN's bound :math:`s^{\,n-i}\lVert W_{ih}\rVert_F` is a thin dotted
    line of its dash. Points where the norm is exactly 0 are left out.

    ``layout.meta``: ``width``, ``n_pos``, ``scales``, ``y_range`` (log10).
    """
    if not profiles:
        raise ValueError("gradient_figure needs at least one profile")
    lengths = {int(np.asarray(p.distance).shape[0]) for p in profiles}
    if len(lengths) != 1:
        raise ValueError(f"every profile must cover one text: their lengths differ {sorted(lengths)}")
    n = lengths.pop()
    data, scales, finite = _gradient_lines(profiles, bounds)
    y_range, tickvals, ticktext = _log_norm_ticks(finite)
    left = numeric_axis_margin(
        max(ticktext, key=len).replace("<sup>", "").replace("</sup>", "") + "0", font=TICK_PX
    )
    layout = _legend_layout(
        data,
        left=left,
        width=width,
        title=title,
        meta={"n_pos": n, "scales": scales, "y_range": y_range},
        xaxis={
            "title": axis_title(tr("distance n − i (positions back from the last token)")),
            "tickfont": {"size": TICK_PX},
            "range": [-0.5, max(n - 1, 1) + 0.5],
            "zeroline": False,
        },
        yaxis={
            "title": axis_title(tr("‖∂h<sub>n</sub>/∂x<sub>i</sub>‖ (log scale)")),
            "tickmode": "array",
            "tickvals": tickvals,
            "ticktext": ticktext,
            "tickfont": {"size": TICK_PX},
            "range": y_range,
            "zeroline": False,
        },
        hovermode="closest",
    )
    return go.Figure({"data": data, "layout": layout})


def _profile_arrays(
    p: ProfileLike, bounds: bool
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
    """A profile's distances, log10 norms and (with ``bounds``, when it has one) log10 bound as
    float64 [pos], checked: a known kind, one length, norms finite or -inf (exactly 0)."""
    _kind(p.kind)
    d = np.asarray(p.distance, dtype=np.float64)
    y = np.asarray(p.log10_norm, dtype=np.float64)
    if d.ndim != 1 or y.shape != d.shape:
        raise ValueError(f"distance {d.shape} and log10_norm {y.shape} must be 1-D of one length [pos]")
    if np.isnan(y).any() or np.isposinf(y).any():
        raise ValueError("log10_norm must be finite or -inf (a norm of exactly 0)")
    if not bounds or p.log10_bound is None:
        return d, y, None
    b = np.asarray(p.log10_bound, dtype=np.float64)
    if b.shape != d.shape:
        raise ValueError(f"log10_bound has shape {b.shape}, distance {d.shape}")
    return d, y, b


def _gradient_lines(
    profiles: Sequence[ProfileLike], bounds: bool
) -> tuple[list[dict[str, Any]], list[float], list[float]]:
    """The line traces of :func:`gradient_figure` (each profile's norms, then its dotted bound),
    the recurrent scales in the order first met (one dash each) and every log10 value drawn
    (for the y range)."""
    data: list[dict[str, Any]] = []
    scales: list[float] = []
    finite: list[float] = []
    for p in profiles:
        d, y, b = _profile_arrays(p, bounds)
        if p.kind != "attention" and p.scale not in scales:
            scales.append(p.scale)
        dash = DASHES[scales.index(p.scale) % len(DASHES)] if p.kind != "attention" else "solid"
        ok = np.isfinite(y)
        finite += y[ok].tolist()
        name = safe_label(_profile_name(p))
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": d[ok].astype(np.float32),
                "y": y[ok].astype(np.float32),
                "name": name,
                "line": {"color": KIND_COLORS[p.kind], "width": LINE_PX, "dash": dash},
                "hovertemplate": f"n − i = %{{x}}<br>10<sup>%{{y:.2f}}</sup><extra>{name}</extra>",
            }
        )
        if b is not None:
            bound_name = tr("bound s^(n−i)·‖W_ih‖ (s = {scale:g})", scale=p.scale)
            finite += [float(b.min()), float(b.max())]
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": d.astype(np.float32),
                    "y": b.astype(np.float32),
                    "name": bound_name,
                    "line": {"color": BOUND_COLOR, "width": 1.5, "dash": "dot"},
                    "hovertemplate": f"n − i = %{{x}}<br>10<sup>%{{y:.2f}}</sup><extra>{bound_name}</extra>",
                }
            )
    return data, scales, finite


def _log_norm_ticks(finite: Sequence[float]) -> tuple[list[float], list[float], list[str]]:
    """The y range (log10, padded around the values drawn) and its power-of-ten ticks."""
    lo, hi = (min(finite), max(finite)) if finite else (-1.0, 1.0)
    pad = max(0.05 * (hi - lo), 0.3)
    y_range = [lo - pad, hi + pad]
    tickvals, ticktext = _decade_ticks(y_range[0], y_range[1])
    return y_range, tickvals, ticktext


# --- the trained models ------------------------------------------------------------------------------------


def _distance_axis(distances: npt.NDArray[np.float64]) -> dict[str, Any]:
    lo, hi = float(distances.min()), float(distances.max())
    span = max(math.log10(hi / lo), math.log10(2.0)) if lo > 0 else 1.0
    return {
        "type": "log",
        "range": [math.log10(lo) - 0.06 * span, math.log10(hi) + 0.06 * span],
        "tickmode": "array",
        "tickvals": distances.tolist(),
        "ticktext": [f"{int(v)}" for v in distances],
        "tickfont": {"size": TICK_PX},
        "title": axis_title(tr("distance d: the first token is d positions before the blank")),
    }


def _check_distances(distances: npt.ArrayLike) -> npt.NDArray[np.float64]:
    d = np.asarray(distances, dtype=np.float64)
    if d.ndim != 1 or d.shape[0] == 0:
        raise ValueError(f"distances must be 1-D [distance] and not empty, got shape {d.shape}")
    if not (d >= 1).all() or (np.diff(d) <= 0).any():
        raise ValueError(f"distances must increase and be >= 1, got {d.tolist()}")
    return d


def recall_figure(
    distances: npt.ArrayLike,
    accuracy: Mapping[str, npt.ArrayLike],
    *,
    chance: float,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Held-out accuracy against the distance (log₂ axis), one line per model kind
    (``accuracy[kind]`` [distance], in 0..1), the chance level (``chance``: 1 / symbols)
    dashed. ``layout.meta``: ``width``, ``distances``, ``chance``."""
    d = _check_distances(distances)
    if not accuracy:
        raise ValueError("recall_figure needs at least one model's accuracy")
    if not 0 < chance < 1:
        raise ValueError(f"chance={chance!r} must be in (0, 1)")
    data: list[dict[str, Any]] = []
    for kind, acc in accuracy.items():
        a = np.asarray(acc, dtype=np.float64)
        if a.shape != d.shape:
            raise ValueError(f"accuracy[{kind!r}] has shape {a.shape}, distances {d.shape} [distance]")
        if not ((a >= 0) & (a <= 1)).all():
            raise ValueError(f"accuracy[{kind!r}] must lie in [0, 1]")
        name = _kind_name(kind)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": d.astype(np.float32),
                "y": a.astype(np.float32),
                "name": name,
                "line": {"color": KIND_COLORS[kind], "width": LINE_PX},
                "marker": {"color": KIND_COLORS[kind], "size": MARKER_PX + 1, "symbol": KIND_SYMBOLS[kind]},
                "hovertemplate": f"d = %{{x}}<br>%{{y:.0%}}<extra>{name}</extra>",
            }
        )
    chance_name = tr("chance (1 in {n})", n=round(1 / chance))
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": [float(d.min()), float(d.max())],
            "y": [chance, chance],
            "name": chance_name,
            "line": {"color": CHANCE_COLOR, "width": 2, "dash": "dash"},
            "hoverinfo": "skip",
        }
    )
    left = numeric_axis_margin("100%", font=TICK_PX)
    layout = _legend_layout(
        data,
        left=left,
        width=width,
        title=title,
        meta={"distances": d.tolist(), "chance": chance},
        xaxis=_distance_axis(d),
        yaxis={
            "range": [-0.04, 1.04],
            "tickmode": "array",
            "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
            "ticktext": ["0%", "25%", "50%", "75%", "100%"],
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("held-out accuracy")),
            "zeroline": False,
        },
        hovermode="closest",
    )
    return go.Figure({"data": data, "layout": layout})


def look_back_figure(
    weights: npt.ArrayLike,
    labels: Sequence[object],
    *,
    head: int,
    answer: int = 0,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Where the question looks: the trained attention head's weights from the last position
    (the blank) to every key position, one bar per token, the answer (position ``answer``,
    the first token) highlighted. ``weights`` [key_pos] (one row of the pattern, 0..1),
    ``labels`` the token labels, one per position. ``layout.meta``: ``width``, ``n_pos``, ``head``,
    ``weight_on_answer``."""
    w = as_float32(weights, 1, "weights", "[key_pos]")
    check_tokens(labels, w.shape[0], "weights", tuple(w.shape))
    n = w.shape[0]
    if n < 2:
        raise ValueError("weights has shape (1,): the question needs at least one position to look back to")
    if not ((w >= -1e-6) & (w <= 1 + 1e-6)).all():
        raise ValueError("weights must lie in [0, 1] (a row of an attention pattern)")
    if not 0 <= answer < n:
        raise ValueError(f"answer={answer} must be a position in [0, {n - 1}]")
    if isinstance(head, bool) or not isinstance(head, int) or head < 0:
        raise ValueError(f"head={head!r} must be a non-negative integer")
    left = numeric_axis_margin("0.75", font=TICK_PX)
    plot_w = max(120.0, width - left - EDGE_PX)
    step = tick_step(labels, [("x", plot_w)])
    x_axis = token_axis(labels, plot_w, "x", step=step, title=tr("key position (token)"))
    colors = [ANSWER_COLOR if i == answer else BAR_COLOR for i in range(n)]
    data = [
        {
            "type": "bar",
            "x": list(range(n)),
            "y": w,
            "customdata": token_labels(labels),
            "marker": {"color": colors, "line": {"width": 0}},
            "name": tr("weight from the blank"),
            "hovertemplate": "%{customdata}: %{y:.3f}<extra></extra>",
        }
    ]
    layout = base_layout(
        PLOT_PX,
        width=width,
        left=left,
        right=EDGE_PX,
        top=TOP_TITLE_PX if title else 8,
        bottom=x_axis.margin,
        title=title,
        meta={"n_pos": n, "head": head, "weight_on_answer": float(w[answer])},
        showlegend=False,
        bargap=0.15 if n <= 64 else 0.0,
        xaxis={**x_axis.props, "type": "linear", "range": [-0.6, n - 0.4]},
        yaxis={
            "range": [0, 1.05],
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("weight (head {head})", head=head)),
            "zeroline": False,
        },
        annotations=[
            {
                "x": answer,
                "y": float(w[answer]),
                "xref": "x",
                "yref": "y",
                "text": tr("the first token: {weight:.0%}", weight=float(w[answer])),
                "showarrow": True,
                "arrowhead": 2,
                "ax": 40,
                "ay": 30 if float(w[answer]) > 0.8 else -30,  # a tall bar's label below its top: not cut
                "font": {"size": TICK_PX, "color": ANSWER_COLOR},
                "xanchor": "left",
            }
        ],
    )
    return go.Figure({"data": data, "layout": layout})


def first_weight_figure(
    distances: npt.ArrayLike,
    weight_on_first: npt.ArrayLike,
    *,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """The mean weight from the blank to the first token against the distance, one line per
    head (``weight_on_first`` [distance, head_index], 0..1): one head that looks back the whole
    way is a flat line near 1. ``layout.meta``: ``width``, ``heads``."""
    d = _check_distances(distances)
    w = as_float32(weight_on_first, 2, "weight_on_first", "[distance, head_index]")
    if w.shape[0] != d.shape[0]:
        raise ValueError(f"weight_on_first has shape {tuple(w.shape)} but {d.shape[0]} distances were given")
    if not ((w >= -1e-6) & (w <= 1 + 1e-6)).all():
        raise ValueError("weight_on_first must lie in [0, 1]")
    palette = (BLUE, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, VERMILLION, BLACK, FAINT)
    data: list[dict[str, Any]] = []
    for h in range(w.shape[1]):
        name = tr("head {head}", head=h)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": d.astype(np.float32),
                "y": w[:, h],
                "name": name,
                "line": {"color": palette[h % len(palette)], "width": LINE_PX},
                "marker": {"size": MARKER_PX},
                "hovertemplate": f"d = %{{x}}<br>%{{y:.3f}}<extra>{name}</extra>",
            }
        )
    left = numeric_axis_margin("0.75", font=TICK_PX)
    layout = _legend_layout(
        data,
        left=left,
        width=width,
        title=title,
        meta={"heads": int(w.shape[1])},
        xaxis=_distance_axis(d),
        yaxis={
            "range": [-0.03, 1.05],
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("weight on the first token")),
            "zeroline": False,
        },
    )
    return go.Figure({"data": data, "layout": layout})
