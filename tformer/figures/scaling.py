r"""Figures of the "why scale by √d_k" experiment.

:func:`sweep_figure` draws what a sweep over head widths measured on random vectors (see
``tformer.analysis.scaling.scaling_sweep``), without and with the division by √d_k, in three panels
side by side over d_k:

.. math::
    \mathrm{Var}(q \cdot k) = d_k,\qquad
    \max_j p_j \to 1,\qquad
    \lVert \operatorname{diag}(p) - p\,p^\top \rVert_F \to 0
    \quad\text{(without the scale, as } d_k \text{ grows)}

:func:`row_stats_figure` draws, for one head's pattern, how spread out each query's weights
are: their entropy in bits and their largest weight, one bar per query token.

A sweep is read through the :class:`SweepLike` protocol (the figures import nothing of tformer
outside this package); user text is shown through :func:`~tformer.figures.labels.safe_label`
and the planned token axes of :mod:`.labels`.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32
from .colors import BLUE, GUIDE, MARK_INK, NOTE_INK, VERMILLION
from .labels import (
    MAX_TICK_CHARS,
    TokenAxis,
    axis_title,
    numeric_axis_margin,
    safe_label,
    text_px,
    tick_step,
    token_axis,
    token_labels,
    x_numeric_margin,
)
from .layout import (
    DETAIL_WIDTH,
    EDGE_PX,
    FULL_WIDTH,
    LEGEND_FONT_PX,
    LEGEND_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    Domain,
    base_layout,
    figure_title,
    panel_title,
    px_domain,
    top_legend,
)
from .walkthrough import BAR_HIGHLIGHT, BAR_WEIGHT

# Two colors that stay apart for color-blind viewers and on a washed-out projector
# (Okabe-Ito vermillion and blue); the markers differ too, so a gray print still reads.
WITHOUT_COLOR = VERMILLION
WITH_COLOR = BLUE
WITHOUT_NAME = "without 1/\u221ad<sub>k</sub>"
WITH_NAME = "with 1/\u221ad<sub>k</sub>"
MARK_COLOR = MARK_INK
REFERENCE_COLOR = GUIDE
LINE_PX = 3
MARKER_PX = 9
TICK_PX = 13
NOTE_FONT_PX = 13
# sweep_figure: the panels' plot height and the air between a panel and the next one's ticks.
SWEEP_PLOT_PX = 270
PANEL_AIR_PX = 22
# Below this plot width (px) the three panels are stacked in one column (a half-width column).
MIN_PANEL_PX = 200
STACKED_PLOT_PX = 190
NOTE_COLOR = NOTE_INK
SWEEP_TITLES = ("Var(q\u00b7k)", "largest weight in a row", "softmax gradient \u2016J\u2016<sub>F</sub>")
# row_stats_figure: two bar panels, entropy above, largest weight below.
STATS_PANEL_PX = 150
STATS_GAP_PX = TOP_PANEL_TITLE_PX + 10
BAR_COLOR = BAR_WEIGHT  # the step-by-step page's weight bars, and its amber highlight
BAND_PX = 8  # the highlighted query's background band is at least this wide
NOTE_ROOM_PX = 24  # above the log2 n line, for its note
STATS_TITLES = ("entropy of each query's weights (bits)", "largest weight in each query's row")


class SweepLike(Protocol):
    """What :func:`sweep_figure` reads: arrays over d_k (``raw``: without the division by
    √d_k, ``scaled``: with it) and the keys per softmax row."""

    @property
    def d_k(self) -> npt.NDArray[Any]: ...
    @property
    def var_raw(self) -> npt.NDArray[Any]: ...
    @property
    def var_scaled(self) -> npt.NDArray[Any]: ...
    @property
    def max_raw(self) -> npt.NDArray[Any]: ...
    @property
    def max_scaled(self) -> npt.NDArray[Any]: ...
    @property
    def jac_raw(self) -> npt.NDArray[Any]: ...
    @property
    def jac_scaled(self) -> npt.NDArray[Any]: ...
    @property
    def n_keys(self) -> int: ...


Box = tuple[float, float, float, float]  # (x0, x1, y0, y1) px from the plot area's top-left
SWEEP_PANELS = ("var", "max", "jac")  # the sweep's quantities, one panel each
SWEEP_FIELDS = ("d_k", "var_raw", "var_scaled", "max_raw", "max_scaled", "jac_raw", "jac_scaled")


def _sweep_arrays(sweep: SweepLike) -> dict[str, Float32Array]:
    arrays = {name: as_float32(getattr(sweep, name), 1, name, "[d_k]") for name in SWEEP_FIELDS}
    n = arrays["d_k"].shape[0]
    if n == 0:
        raise ValueError("d_k has shape (0,): the sweep needs at least one d_k")
    wrong = {name: tuple(a.shape) for name, a in arrays.items() if a.shape != (n,)}
    if wrong:
        raise ValueError(f"every sweep array must have the shape of d_k ({n},) [d_k], got {wrong}")
    d = arrays["d_k"]
    if not (np.isfinite(d).all() and (d >= 1).all() and (np.diff(d) > 0).all()):
        raise ValueError(f"d_k must increase and be >= 1, got {d.tolist()}")
    for name in ("var_raw", "var_scaled"):
        if not (arrays[name] > 0).all():
            raise ValueError(f"{name} must be > 0 (it is drawn on a log axis), got {arrays[name].tolist()}")
    return arrays


def _powers_of_two(lo: float, hi: float, max_ticks: int) -> list[float]:
    """Powers of two spanning ``lo .. hi``, every s-th (s = 1, 2, 3, ...) so that at most
    ``max_ticks`` remain, aligned so that 1 = 2⁰ is one of them when it is in range."""
    e0, e1 = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    for s in range(1, 64):
        exps = [e for e in range(e0, e1 + 1) if e % s == 0]
        if len(exps) <= max_ticks:
            return [2.0**e for e in exps] or [2.0**e0]
    return [2.0**e0]


def _power_text(v: float) -> str:
    return str(int(v)) if v >= 1 else f"{v:g}"


def _x_ticks(d_k: Sequence[float], plot_w: float, lo: float, hi: float) -> dict[str, Any]:
    """Ticks of a d_k axis (log₂): every power of two in range gets a grid line, and as many
    as fit side by side at :data:`TICK_PX` get a label (every one, every 2nd, every 4th...)."""
    exps = list(range(math.ceil(math.log2(d_k[0]) - 1e-9), math.floor(math.log2(d_k[-1]) + 1e-9) + 1))
    if not exps:  # a single d_k that is no power of two
        vals = [float(v) for v in d_k]
        return {"tickvals": vals, "ticktext": [f"{v:g}" for v in vals]}
    vals = [2.0**e for e in exps]
    px_per_decade = plot_w / (math.log10(hi) - math.log10(lo))
    widest = max(text_px(_power_text(v), TICK_PX) for v in vals)
    every = 1
    while every < len(vals) and px_per_decade * math.log10(2.0) * every < widest + 0.6 * TICK_PX:
        every *= 2
    text = [_power_text(v) if i % every == 0 else "" for i, v in enumerate(vals)]
    return {"tickvals": vals, "ticktext": text}


def _log_range(values: npt.NDArray[Any], pad: float = 0.06) -> tuple[float, float]:
    """``(lo, hi)`` in data units: the values' range widened by ``pad`` of its log width on
    each side (at least a factor 1.25), so end markers are not cut."""
    lo, hi = float(np.min(values)), float(np.max(values))
    span = max(math.log10(hi / lo), math.log10(2.0))
    f = max(10.0 ** (pad * span), 1.25)
    return lo / f, hi * f


def _check_mark(mark_dk: int | None) -> int | None:
    """The current head's d_k to mark, a whole number >= 1 (``None``: no mark)."""
    if mark_dk is not None and (isinstance(mark_dk, bool) or int(mark_dk) != mark_dk or mark_dk < 1):
        raise ValueError(f"mark_dk must be a whole number >= 1, got {mark_dk!r}")
    return None if mark_dk is None else int(mark_dk)


def _sweep_y_axes(a: dict[str, Float32Array]) -> list[dict[str, Any]]:
    """The three panels' y axes: the variance on a log axis ticked at powers of two, the
    largest weight 0..1, the Jacobian's size from 0."""
    variances = np.concatenate([a["var_raw"], a["var_scaled"]])
    var_lo, var_hi = _log_range(variances)
    var_ticks = _powers_of_two(float(variances.min()), float(variances.max()), 6)
    jac_hi = max(float(np.nanmax(np.concatenate([a["jac_raw"], a["jac_scaled"]]))), 1e-6)
    return [
        {"type": "log", "range": [math.log10(var_lo), math.log10(var_hi)], "tickmode": "array",
         "tickvals": var_ticks, "ticktext": [_power_text(v) for v in var_ticks]},
        {"range": [0.0, 1.04], "tickmode": "array", "tickvals": [0, 0.25, 0.5, 0.75, 1.0],
         "ticktext": ["0", "0.25", "0.5", "0.75", "1"]},
        {"range": [0.0, 1.12 * jac_hi], "nticks": 5, "tickformat": ".2~f"},
    ]  # fmt: skip


def _sweep_boxes(
    lefts: Sequence[int], width: int, right: int, bottom: int
) -> tuple[list[Box], bool, int, float]:
    """Boxes of the three panels (side by side, or stacked at full width when a panel would
    be narrower than :data:`MIN_PANEL_PX`), whether stacked, the left margin, a panel's width.
    ``lefts``: the room each panel's tick labels need; ``bottom``: the x axis's margin."""
    side_w = (width - sum(lefts) - 2 * PANEL_AIR_PX - right) / 3
    if side_w < MIN_PANEL_PX:
        left = max(lefts)
        plot_w: float = width - left - right
        vgap = bottom + TOP_PANEL_TITLE_PX + 6
        pitch = STACKED_PLOT_PX + vgap
        return [(0, plot_w, i * pitch, i * pitch + STACKED_PLOT_PX) for i in range(3)], True, left, plot_w
    boxes: list[Box] = []
    x0 = 0.0
    for i in range(3):
        x0 += 0 if i == 0 else lefts[i] + PANEL_AIR_PX
        boxes.append((x0, x0 + side_w, 0, SWEEP_PLOT_PX))
        x0 += side_w
    return boxes, False, lefts[0], side_w


def _sweep_traces(a: dict[str, Float32Array]) -> list[dict[str, Any]]:
    """Without and with the scale in each panel (``x``, ``x2``, ``x3``); the first panel's
    pair carries the legend."""
    series = [
        (tr(WITHOUT_NAME), WITHOUT_COLOR, "circle", "raw"),
        (tr(WITH_NAME), WITH_COLOR, "square", "scaled"),
    ]
    what = (
        tr("Var(q\u00b7k)"),
        tr("largest weight (mean over rows)"),
        tr("\u2016J\u2016<sub>F</sub> (mean over rows)"),
    )
    return [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": label,
            "legendgroup": kind,
            "showlegend": i == 0,
            "x": a["d_k"],
            "y": a[f"{name}_{kind}"],
            "xaxis": f"x{_sfx(i)}",
            "yaxis": f"y{_sfx(i)}",
            "line": {"color": color, "width": LINE_PX},
            "marker": {"color": color, "size": MARKER_PX, "symbol": symbol},
            "hovertemplate": f"{label}<br>d<sub>k</sub> = %{{x}}<br>{short} = %{{y:.3g}}<extra></extra>",
        }
        for i, (name, short) in enumerate(zip(SWEEP_PANELS, what, strict=True))
        for label, color, symbol, kind in series
    ]


def _sfx(i: int) -> str:
    """The axis suffix of panel ``i``: "", "2", "3"."""
    return "" if i == 0 else str(i + 1)


def _sweep_axes(
    domains: Sequence[Domain], x_axis: dict[str, Any], y_axes: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Each panel's d_k axis (``x_axis``: range and ticks, one for all) and y axis."""
    axes: dict[str, Any] = {}
    for i, (xd, yd) in enumerate(domains):
        sfx = _sfx(i)
        axes[f"xaxis{sfx}"] = {
            **x_axis,
            "type": "log",
            "domain": xd,
            "anchor": f"y{sfx}",
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("d<sub>k</sub> (head width)")),
            "ticks": "",
            "zeroline": False,
        }
        axes[f"yaxis{sfx}"] = {
            **y_axes[i],
            "domain": yd,
            "anchor": f"x{sfx}",
            "tickfont": {"size": TICK_PX},
            "ticks": "",
            "zeroline": False,
        }
    return axes


def _sweep_marks(
    domains: Sequence[Domain], mark_dk: int | None, n_keys: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Annotations and shapes: each panel's title, the dotted line at the current head's d_k
    in every panel (one legend entry), the uniform weight 1/n_keys in the largest-weight panel."""
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    for i, (xd, yd) in enumerate(domains):
        sfx = _sfx(i)
        annotations.append(panel_title(tr(SWEEP_TITLES[i]), xd, yd))
        if mark_dk is not None:
            shapes.append(
                {
                    "type": "line",
                    "xref": f"x{sfx}",
                    "yref": f"y{sfx} domain",
                    "x0": mark_dk,
                    "x1": mark_dk,
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": MARK_COLOR, "width": 2.5, "dash": "dot"},
                    "layer": "below",
                    "name": _mark_name(mark_dk),
                    "legendgroup": "mark",
                    "showlegend": i == 0,
                }
            )
        if SWEEP_PANELS[i] == "max" and n_keys > 1:
            shapes.append(_uniform_line(f"x{sfx}", f"y{sfx}", 1.0 / n_keys))
            note = tr("uniform: 1/{n_keys}", n_keys=n_keys)
            annotations.append(_line_note(note, f"x{sfx}", f"y{sfx}", 1.0 / n_keys))
    return annotations, shapes


def sweep_figure(
    sweep: SweepLike,
    *,
    mark_dk: int | None = None,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    r"""Three panels side by side over d_k (log₂ axis): the variance of the scores q·k (log
    axis), the softmax's largest weight (0..1) and the size of its Jacobian
    ‖diag(p) − p pᵀ‖_F, each without (vermillion, circles) and with (blue, squares) the
    division by √d_k. One legend names the two; the colors are the same in every panel.

    ``sweep``: any object with the arrays of :class:`SweepLike` (``tformer.analysis.scaling``'s
    ``ScalingSweep``), d_k increasing. ``mark_dk``: draw a dotted vertical line at the current
    head's d_k in every panel (named in the legend); the x axis widens to include it.
    ``title`` is shown as given (escape user text in it with ``safe_label``). In a column too
    narrow for three panels of 200 px (e.g. half width) they are stacked instead.
    ``layout.meta``: ``width``, ``d_k``, ``mark_dk``, ``n_keys``, ``stacked``, ``panel_px``.
    """
    a = _sweep_arrays(sweep)
    mark = _check_mark(mark_dk)
    n_keys = int(sweep.n_keys)
    d = a["d_k"]
    y_axes = _sweep_y_axes(a)

    longest = [max(y_axes[0]["ticktext"], key=len), "0.75", "0.00"]
    lefts = [numeric_axis_margin(t, title=False, font=TICK_PX) for t in longest]
    right, bottom = EDGE_PX, x_numeric_margin(font=TICK_PX)
    boxes, stacked, left, plot_w = _sweep_boxes(lefts, width, right, bottom)
    paper_w, plot_h = width - left - right, boxes[-1][3]
    entries = [tr(WITHOUT_NAME), tr(WITH_NAME)] + ([] if mark is None else [_mark_name(mark)])
    legend_rows = 1 if _legend_px(entries) <= paper_w else len(entries)
    x_lo, x_hi = _log_range(np.append(d, [] if mark is None else [mark]), pad=0.05)
    x_axis = {
        "range": [math.log10(x_lo), math.log10(x_hi)],
        "tickmode": "array",
        **_x_ticks(d.tolist(), plot_w, x_lo, x_hi),
    }
    domains = [px_domain(*b, paper_w, plot_h) for b in boxes]
    annotations, shapes = _sweep_marks(domains, mark, n_keys)
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=right,
        top=(TOP_TITLE_PX if title else 8) + legend_rows * LEGEND_PX + TOP_PANEL_TITLE_PX,
        bottom=bottom,
        meta={
            "d_k": [int(v) if float(v).is_integer() else float(v) for v in d.tolist()],
            "mark_dk": mark,
            "n_keys": n_keys,
            "stacked": stacked,
            "panel_px": [round(plot_w), STACKED_PLOT_PX if stacked else SWEEP_PLOT_PX],
        },
        annotations=annotations,
        shapes=shapes,
        showlegend=True,
        legend=top_legend(legend_rows, plot_h),
        hovermode="closest",
        **_sweep_axes(domains, x_axis, y_axes),
    )
    if title:
        # at the top of the figure, above the legend (plotly would centre it in the top margin)
        layout["title"] = {
            **figure_title(title),
            "yref": "container",
            "y": 1 - 10 / layout["height"],
            "yanchor": "top",
        }
    return go.Figure({"data": _sweep_traces(a), "layout": layout})


def _mark_name(mark_dk: int) -> str:
    return tr("this head: d<sub>k</sub> = {d_k}", d_k=int(mark_dk))


def _legend_px(entries: Sequence[str]) -> float:
    """Estimated width of a one-row legend: symbol, text and spacing per entry."""
    return sum(40 + 10 + text_px(re.sub(r"<[^>]+>", "", e), LEGEND_FONT_PX) for e in entries)


def _uniform_line(xref: str, yref: str, y: float) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": f"{xref} domain",
        "yref": yref,
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"color": REFERENCE_COLOR, "width": 1.5, "dash": "dash"},
        "layer": "below",
    }


def _line_note(text: str, xref: str, yref: str, y: float) -> dict[str, Any]:
    """The note of a :func:`_uniform_line`, above it at the panel's right end."""
    return {
        "text": text,
        "xref": f"{xref} domain",
        "yref": yref,
        "x": 1.0,
        "y": y,
        "xanchor": "right",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": NOTE_FONT_PX, "color": NOTE_COLOR},
    }


# ---------------------------------------------------------------------------------------------
# row_stats_figure
# ---------------------------------------------------------------------------------------------
def _bold(tick: str) -> str:
    """A tick text in bold, after the ``<br>`` that stagger it."""
    m = re.match(r"((?:<br>)*)(.*)", tick, flags=re.S)
    assert m is not None
    return f"{m.group(1)}<b>{m.group(2)}</b>"


def _mark_tick(props: dict[str, Any], pos: int, text: str, reach: int) -> dict[str, Any]:
    """Axis ``props`` with position ``pos``'s label in bold; when thinned labels skip it,
    ``text`` is added there and labels closer than ``reach`` positions are dropped."""
    pairs = list(zip(props["tickvals"], props["ticktext"], strict=True))
    if any(v == pos for v, _ in pairs):
        pairs = [(v, _bold(t) if v == pos else t) for v, t in pairs]
    else:
        pairs = sorted([*((v, t) for v, t in pairs if abs(v - pos) >= reach), (pos, _bold(text))])
    return {**props, "tickvals": [v for v, _ in pairs], "ticktext": [t for _, t in pairs]}


def _token_x_axis(labels: Sequence[object], width: int, left: int) -> tuple[TokenAxis, int]:
    """The query-token axis under the bars and the right margin its last flat label needs."""
    right = EDGE_PX
    axis = None
    for _ in range(3):
        plot_w = width - left - right
        axis = token_axis(
            labels, plot_w, "x", step=tick_step(labels, [("x", plot_w)]), title=tr("query token")
        )
        last = html.unescape(re.sub(r"<[^>]+>", "", str(axis.props["ticktext"][-1])))
        need = math.ceil(text_px(last, axis.font) / 2 + 4) if axis.angle == 0 else EDGE_PX
        if need <= right:
            break
        right = need
    assert axis is not None
    return axis, right


def _band(pos: int, pitch: float, yaxis: str) -> dict[str, Any]:
    half = max(0.5, BAND_PX / 2 / pitch)
    return {
        "type": "rect",
        "xref": "x",
        "yref": f"{yaxis} domain",
        "x0": pos - half,
        "x1": pos + half,
        "y0": 0,
        "y1": 1,
        "line": {"width": 0},
        "fillcolor": BAR_HIGHLIGHT,
        "opacity": 0.3,
        "layer": "below",
    }


def _row_stats_inputs(
    entropy: npt.ArrayLike, max_weight: npt.ArrayLike, labels: Sequence[object], highlight: int | None
) -> tuple[Float32Array, Float32Array, int | None]:
    """``entropy`` and ``max_weight`` as float32 [query_pos] of one shape, one label a query,
    and the query to highlight (``None``: none)."""
    h = as_float32(entropy, 1, "entropy", "[query_pos]")
    m = as_float32(max_weight, 1, "max_weight", "[query_pos]")
    n = int(h.shape[0])
    if n == 0:
        raise ValueError("entropy has shape (0,): at least one query is needed")
    if m.shape != h.shape:
        raise ValueError(f"entropy has shape {h.shape} but max_weight has shape {m.shape} [query_pos]")
    if len(labels) != n:
        raise ValueError(f"entropy has shape {h.shape} but {len(labels)} labels were given (expected {n})")
    if highlight is not None and not 0 <= int(highlight) < n:
        raise ValueError(f"highlight={highlight} is not a position in 0..{n - 1}")
    return h, m, None if highlight is None else int(highlight)


def _row_bars(
    h: Float32Array, m: Float32Array, labels: Sequence[object], hl: int | None
) -> list[dict[str, Any]]:
    """The entropy bars (upper panel, ``y2``) and the largest-weight bars (lower, ``y``), the
    highlighted query amber in both."""
    n = int(h.shape[0])
    names = token_labels(labels)
    colors: str | list[str] = BAR_COLOR
    if hl is not None:
        colors = [BAR_HIGHLIGHT if i == hl else BAR_COLOR for i in range(n)]
    return [
        {
            "type": "bar",
            "name": what,
            "x": names,
            "y": values,
            "xaxis": "x",
            "yaxis": ya,
            "marker": {"color": colors, "line": {"width": 0}},
            "hovertemplate": tr("query %{x}") + "<br>" + what + " %{y:" + fmt + "}<extra></extra>",
        }
        for what, values, ya, fmt in (
            (tr("entropy (bits)"), h, "y2", ".2f"),
            (tr("largest weight"), m, "y", ".3f"),
        )
    ]


def _bar_y_axis(domain: Sequence[float], **ticks: Any) -> dict[str, Any]:
    """A bar panel's y axis from 0, its zero line dark (the bars stand on it)."""
    return {
        "domain": domain,
        "anchor": "x",
        **ticks,
        "tickfont": {"size": TICK_PX},
        "ticks": "",
        "zeroline": True,
        "zerolinecolor": MARK_INK,
    }


def _row_marks(
    domains: Sequence[Domain], n: int, hl: int | None, pitch: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Annotations and shapes: the panel titles at the left, an amber band behind the
    highlighted query when bars are thin (``pitch``: px a query), the dashed log₂ n line."""
    annotations = [
        {**panel_title(tr(STATS_TITLES[0]), *domains[0]), "x": 0.0, "xanchor": "left"},
        {**panel_title(tr(STATS_TITLES[1]), *domains[1]), "x": 0.0, "xanchor": "left"},
    ]
    shapes: list[dict[str, Any]] = []
    if hl is not None and pitch < 2 * BAND_PX:  # thin bars: a band makes the amber one findable
        shapes += [_band(hl, pitch, ya) for ya in ("y", "y2")]
    if n > 1:
        uniform = math.log2(n)
        shapes.append(_uniform_line("x", "y2", uniform))
        note = tr("log\u2082 {n} = {bits:.3g} bits: even over all {n} keys", n=n, bits=uniform)
        annotations.append(_line_note(note, "x", "y2", uniform))
    return annotations, shapes


def row_stats_figure(
    entropy: npt.ArrayLike,
    max_weight: npt.ArrayLike,
    labels: Sequence[object],
    *,
    highlight: int | None = None,
    title: str | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    r"""How spread out each query's attention is: two bar panels over one query-token axis,
    the row's entropy in bits above and its largest weight below.

    .. math::
        H_i = -\sum_j p_{ij} \log_2 p_{ij},\qquad m_i = \max_j p_{ij}

    ``entropy``, ``max_weight``: [query_pos] (``tformer.analysis.scaling.row_entropy`` and ``row_max``
    of a pattern); ``labels``: one per query (user text, escaped here). A dashed line marks
    log₂ n bits, the entropy of weights spread evenly over all n keys (n = the number of
    labels, as in self-attention). ``highlight``: a query drawn amber in both panels (on a
    light amber band when bars are only a few px wide), its label in bold (added when thinned
    labels skip it). Every label is shown up to 64 tokens,
    every k-th beyond (the hover names each); Chinese labels stay upright. ``layout.meta``:
    ``n``, ``highlight``, ``width``, ``tick_step``.
    """
    h, m, hl = _row_stats_inputs(entropy, max_weight, labels, highlight)
    n = int(h.shape[0])

    # room above the dashed log2 n line for its note
    h_max = float(np.nanmax(h)) if np.isfinite(h).any() else 0.0
    h_top = max(math.log2(n), h_max, 1.0) / (1 - NOTE_ROOM_PX / STATS_PANEL_PX)
    left = numeric_axis_margin("0.75", title=False, font=TICK_PX)
    x_axis, right = _token_x_axis(labels, width, left)
    plot_w = width - left - right
    plot_h = 2 * STATS_PANEL_PX + STATS_GAP_PX
    domains = [
        px_domain(0, plot_w, 0, STATS_PANEL_PX, plot_w, plot_h),
        px_domain(0, plot_w, STATS_PANEL_PX + STATS_GAP_PX, plot_h, plot_w, plot_h),
    ]
    x_props = dict(x_axis.props)
    if hl is not None:
        reach = x_axis.step * max(1, x_axis.rows)
        x_props = _mark_tick(x_props, hl, safe_label(labels[hl], MAX_TICK_CHARS), reach)
    annotations, shapes = _row_marks(domains, n, hl, plot_w / n)
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=right,
        top=(TOP_TITLE_PX if title else 0) + TOP_PANEL_TITLE_PX,
        bottom=x_axis.margin,
        title=title,
        meta={"n": n, "highlight": hl, "tick_step": x_axis.step},
        xaxis={**x_props, "anchor": "y"},
        yaxis2=_bar_y_axis(domains[0][1], range=[0.0, h_top], nticks=4, tickformat=".2~f"),
        yaxis=_bar_y_axis(
            domains[1][1],
            range=[0.0, 1.0],
            tickmode="array",
            tickvals=[0, 0.25, 0.5, 0.75, 1.0],
            ticktext=["0", "0.25", "0.5", "0.75", "1"],
        ),
        annotations=annotations,
        shapes=shapes,
        bargap=0.15 if n > 1 else 0.6,
        showlegend=False,
    )
    return go.Figure({"data": _row_bars(h, m, labels, hl), "layout": layout})
