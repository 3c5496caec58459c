r"""Figures of the step-by-step page: one encoder layer, walked through on the user's text.

Every intermediate array of the layer is a matrix [rows, cols] (:func:`step_heatmap`), one
query's row of it is a bar chart (:func:`row_bars`), and one score is taken apart dimension
by dimension (:func:`neuron_figure`). The formulas they illustrate:

.. math::
    Q = XW_Q,\quad K = XW_K,\quad V = XW_V,\qquad
    s_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} = \frac{1}{\sqrt{d_k}} \sum_d q_{id}\,k_{jd}
    \ (-\infty \text{ where } j \text{ is masked for } i),

    p_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}},\qquad
    z_i = \sum_j p_{ij}\, v_j,\qquad
    \mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2

Conventions shared with the other builders: arrays go to plotly as float32 (uint8 for the
mask layer); row and column labels are user text, shown through the planned token axes of
:mod:`.labels` (escaped, cut to 10 characters, every k-th beyond 64) and, in the hover, through
:func:`~tformer.figures.labels.safe_label`; ``title`` is shown as given (escape user text in it
with ``safe_label``). Masked entries (``-inf``; also NaN, which a plain softmax gives a fully
masked row) are gaps over a gray layer whose hover says "masked (−∞)". Long sides are pooled
(diverging values: the entry of largest magnitude, sign kept; weights: the block maximum) so
one heatmap never sends more than :data:`~tformer.figures.pooling.MAX_SIDE` cells a side.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import weight_ticks
from .checks import Float32Array, as_float32
from .colors import (
    BLACK,
    FOCUS,
    KEY,
    MARK_INK,
    NEGATIVE,
    POSITIVE,
    QUERY,
    WEIGHT,
    WHITE,
    SymmetricScale,
    check_weight_scale,
    log_weights,
    robust_symmetric,
    row_normalized,
    weight_colors,
    weight_scale_ticks,
    weight_scale_title,
)
from .labels import (
    LABEL_ALL,
    MAX_TICK_CHARS,
    TokenAxis,
    axis_title,
    numeric_axis_margin,
    safe_label,
    text_px,
    tick_step,
    token_axis,
    x_numeric_margin,
)
from .layout import (
    DETAIL_WIDTH,
    EDGE_PX,
    TOP_BARE_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    Domain,
    base_layout,
    colorbar,
    colorbar_px,
    fit_side,
    panel_title,
    px_domain,
)
from .pooling import MAX_SIDE, pool_plan

MINUS = "\u2212"
# English; shown through `tr` (the catalog key).
MASKED_TEXT = f"masked ({MINUS}\u221e)"
MASKED_CELL = f"{MINUS}\u221e"
MASKED_GRAY = "rgb(150,150,150)"
# The highlighted row's frame: a black band under a white line reads on every color of both
# scales (dark viridis cells, near-white diverging cells, saturated red and blue).
# It lies just outside the row, so it covers no number of the row itself.
FRAME_OUTER = (BLACK, 5)
FRAME_INNER = (WHITE, 2)
# y tick labels stand this far off the plot (clear of the frame).
Y_LABEL_STANDOFF_PX = 6
MARK = "\u25b6 "  # before the highlighted row's tick label
# Heights (px): rows stay readable while every label is shown, the figure fits a screen.
MIN_ROW_PX = 16
NUMBER_ROW_PX = 30
MAX_ROW_PX = 44
MIN_PLOT_PX = 140
MAX_PLOT_PX = 700
# Cell numbers are what the class reads off the step: as large as the cells allow (18 px in a
# 16 x 16 window at the page's full width), 12 px at the least.
NUMBER_FONTS = (18, 17, 16, 15, 14, 13, 12)
NUMBER_PAD_PX = 2  # each side of a number, within its cell
# Widths (em) of what cell_text writes, in the sans-serif fonts plotly falls back on: tabular
# digits are ~0.55 em; text_px's 0.62 em for any character would shrink the numbers a size.
_NUMBER_EM = {".": 0.28, "−": 0.6, "-": 0.35, "k": 0.52, "e": 0.56, "∞": 0.72}
# Bars
BAR_PLOT_PX = 300
BAR_POSITIVE = POSITIVE
BAR_NEGATIVE = NEGATIVE
BAR_WEIGHT = WEIGHT
BAR_HIGHLIGHT = FOCUS  # amber: apart from red, blue and the weights' blue-violet
BAR_TEXT_PX = 13
MASK_MARKER = MARK_INK
MARKER_PX = 11
BAND_PX = 8  # the highlighted key's background band is at least this wide
VALUE_TICK_PX = 13
# The neuron view's panels (px) and colors.
NEURON_PANEL_PX = (130, 130, 160)  # q, k, products
Q_COLOR = QUERY
K_COLOR = KEY
DIM_STEPS = (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64)
NEURON_YAXES = ("y3", "y2", "y")  # q on top, products at the bottom on the x axis's anchor


# ---------------------------------------------------------------------------------------------
# Small shared pieces
# ---------------------------------------------------------------------------------------------
def cell_text(v: float) -> str:
    """A value written in a cell or over a bar: 2-3 significant digits, at most 5 characters
    (``"0.12"``, ``"−1.23"``, ``"12.3"``, ``"123"``, ``"1.2k"``), a real minus sign, ``"−∞"``
    for a masked entry and ``""`` for NaN."""
    if np.isnan(v):
        return ""
    if np.isinf(v):
        return MASKED_CELL if v < 0 else "\u221e"
    a = abs(v)
    if a == 0:
        text = "0"
    elif a < 10:
        text = f"{a:.2f}"
    elif a < 100:
        text = f"{a:.1f}"
    elif a < 1000:
        text = f"{a:.0f}"
    else:
        text = f"{a / 1000:.1f}k" if a < 9999.5 else f"{a:.1e}".replace("e+0", "e").replace("e+", "e")
    return MINUS + text if v < 0 else text


def _unique_names(labels: Sequence[object]) -> list[str]:
    """Escaped category names, one per position; ``"i: label"`` when labels repeat (plotly
    would merge repeated categories)."""
    shown = [safe_label(s) for s in labels]
    if len(set(shown)) == len(shown):
        return shown
    return [f"{i}: {s}" for i, s in enumerate(shown)]


def _block_names(labels: Sequence[object], block: int) -> list[str]:
    """Category names of pooled cells: ``"a–b: first … last"`` (unique: the range leads)."""
    if block == 1:
        return _unique_names(labels)
    n = len(labels)
    out = []
    for a in range(0, n, block):
        b = min(a + block, n) - 1
        first, last = safe_label(labels[a]), safe_label(labels[b])
        out.append(f"{a}: {first}" if a == b else f"{a}\u2013{b}: {first} \u2026 {last}")
    return out


def _pool_axis(a: Float32Array, block: int, axis: int, *, signed: bool) -> Float32Array:
    """Pool ``block`` neighbours along ``axis`` (the last block may be short): the maximum, or
    with ``signed`` the entry of largest magnitude with its sign. NaN only where a whole block
    is NaN."""
    if block == 1:
        return a
    pad = (-a.shape[axis]) % block
    if pad:
        widths = [(0, 0)] * a.ndim
        widths[axis] = (0, pad)
        a = np.pad(a, widths, constant_values=np.nan)
    shape = list(a.shape)
    shape[axis : axis + 1] = [shape[axis] // block, block]
    blocks = a.reshape(shape)
    hi = np.fmax.reduce(blocks, axis=axis + 1)
    if not signed:
        return np.ascontiguousarray(hi, dtype=np.float32)
    lo = np.fmin.reduce(blocks, axis=axis + 1)
    return np.ascontiguousarray(np.where(np.abs(lo) > np.abs(hi), lo, hi), dtype=np.float32)


def _bold(tick: str, prefix: str = "") -> str:
    """A tick text in bold (staggering ``<br>`` lines stay in front)."""
    lead = re.match(r"(?:<br>)*", tick)
    cut = lead.end() if lead else 0
    return f"{tick[:cut]}<b>{prefix}{tick[cut:]}</b>"


def _mark_tick(props: dict[str, Any], cell: int, text: str, *, reach: int, prefix: str) -> dict[str, Any]:
    """Axis ``props`` with the tick at category ``cell`` in bold; when that position has no
    label (thinned labels), ``text`` is added there and labels closer than ``reach`` cells go,
    so the added one overlaps none."""
    pairs = list(zip(props["tickvals"], props["ticktext"], strict=True))
    if any(v == cell for v, _ in pairs):
        pairs = [(v, _bold(t, prefix) if v == cell else t) for v, t in pairs]
    else:
        pairs = [(v, t) for v, t in pairs if abs(v - cell) >= reach]
        pairs = sorted([*pairs, (cell, _bold(text, prefix))])
    return {**props, "tickvals": [v for v, _ in pairs], "ticktext": [t for _, t in pairs]}


def _check_labels(name: str, shape: tuple[int, ...], labels: Sequence[object], axis: int, what: str) -> None:
    if len(labels) != shape[axis]:
        raise ValueError(
            f"{name} has shape {shape} but {len(labels)} {what} labels were given "
            f"(expected {shape[axis]}, one per {what})"
        )


def _check_index(name: str, index: int | None, n: int) -> int | None:
    if index is None:
        return None
    if not 0 <= int(index) < n:
        raise ValueError(f"{name}={index} is not a position in 0..{n - 1}")
    return int(index)


# ---------------------------------------------------------------------------------------------
# step_heatmap
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Grid:
    """What is drawn of a [rows, cols] value: pooled z (NaN = masked), mask, blocks."""

    z: Float32Array
    masked: npt.NDArray[np.bool_]
    row_block: int
    col_block: int


def _grid(m: Float32Array, *, weights: bool, numbers: bool, max_side: int | None) -> _Grid:
    z = np.where(np.isfinite(m), m, np.float32(np.nan)).astype(np.float32)
    rb, cb = (1, 1) if numbers else (pool_plan(m.shape[0], max_side), pool_plan(m.shape[1], max_side))
    z = _pool_axis(_pool_axis(z, rb, 0, signed=not weights), cb, 1, signed=not weights)
    return _Grid(z, np.isnan(z), rb, cb)


def _pooled_title(title: str, block: int) -> str:
    return title if block == 1 else tr("{title} \u2014 each cell covers {block}", title=title, block=block)


def _plot_height(row_cells: int, rows: int, cell_w: float, numbers: bool) -> int:
    """Rows about as tall as the cells are wide, at least 16 px while every label is shown
    (26 px with numbers), within 140..700 px."""
    if numbers:
        row_px = min(max(cell_w, NUMBER_ROW_PX), MAX_ROW_PX)
    elif rows <= LABEL_ALL:
        row_px = min(max(cell_w, MIN_ROW_PX), MAX_ROW_PX)
    else:
        row_px = min(cell_w, MAX_ROW_PX)
    return int(min(max(row_cells * row_px, MIN_PLOT_PX), MAX_PLOT_PX))


def number_px(text: str, font: float) -> float:
    """Drawn width (px) of a number written by :func:`cell_text` at ``font`` px."""
    return sum(_NUMBER_EM.get(ch, 0.56) for ch in text) * font


def _number_font(texts: Sequence[str], cell_w: float, row_px: float) -> int:
    """The largest cell font (18..12 px) at which the widest number fits its cell."""
    widest_em = max((number_px(t, 1.0) for t in texts), default=0.0)
    for font in NUMBER_FONTS:
        if widest_em * font + 2 * NUMBER_PAD_PX <= cell_w and 1.3 * font <= row_px:
            return font
    return NUMBER_FONTS[-1]


def _scale_colors(
    grid: _Grid, weights: bool, value_title: str, weight_scale: str = "linear"
) -> tuple[dict[str, Any], SymmetricScale | None]:
    """The heatmap's color fields (with its colorbar) and the diverging scale, if any."""
    if weights:
        ticks = weight_scale_ticks(weight_scale)
        colors: dict[str, Any] = weight_colors(weight_scale)
        return {**colors, "colorbar": colorbar(value_title, ticks=ticks)}, None
    scale = robust_symmetric(grid.z)
    return {**scale.colors(), "colorbar": colorbar(value_title, ticks=scale.colorbar_ticks())}, scale


def _mask_trace(
    grid: _Grid, xs: list[str], ys: list[str], text: list[list[str]] | None, font: int
) -> dict[str, Any]:
    """Gray cells under the heatmap's gaps; their hover (and text) say "masked (−∞)"."""
    trace: dict[str, Any] = {
        "type": "heatmap",
        "name": tr("masked"),
        "z": grid.masked.astype(np.uint8),
        "x": xs,
        "y": ys,
        "zmin": 0,
        "zmax": 1,
        "colorscale": [[0.0, "rgba(0,0,0,0)"], [1.0, MASKED_GRAY]],
        "showscale": False,
        "hovertemplate": "%{y}<br>%{x}<br>" + tr(MASKED_TEXT) + "<extra></extra>",
    }
    if text is not None:
        trace.update(
            text=text,
            texttemplate="%{text}",
            textfont={"size": font, "color": BLACK},
            xgap=1,
            ygap=1,
        )
    return trace


def _frame(cell: int, plot_w: float, row_px: float) -> list[dict[str, Any]]:
    """A two-tone rectangle around category row ``cell``, across the whole plot, drawn just
    outside the row (``plot_w``: plot width, ``row_px``: row height, px)."""
    half = FRAME_OUTER[1] / 2
    dx, dy = half / plot_w, half / row_px
    return [
        {
            "type": "rect",
            "xref": "x domain",
            "yref": "y",
            "x0": -dx,
            "x1": 1 + dx,
            "y0": cell - 0.5 - dy,
            "y1": cell + 0.5 + dy,
            "line": {"color": color, "width": w},
            "fillcolor": "rgba(0,0,0,0)",
            "layer": "above",
        }
        for color, w in (FRAME_OUTER, FRAME_INNER)
    ]


@dataclass(frozen=True)
class _Plot:
    """The planned plot area of a step heatmap (px) and its two token axes."""

    w: int
    h: int
    x_axis: TokenAxis
    y_axis: TokenAxis


def _check_value(value: npt.ArrayLike, row_labels: Sequence[str], col_labels: Sequence[str]) -> Float32Array:
    """``value`` as float32 [rows, cols], with one label per row and per column."""
    arr = np.asarray(value)
    if arr.ndim != 2 or arr.size == 0:
        raise ValueError(f"value must be a non-empty 2-D [rows, cols] array, got shape {tuple(arr.shape)}")
    m = as_float32(arr, 2, "value", "[rows, cols]")
    shape = (int(m.shape[0]), int(m.shape[1]))
    _check_labels("value", shape, row_labels, 0, "row")
    _check_labels("value", shape, col_labels, 1, "column")
    return m


def _scaled_grid(
    m: Float32Array,
    scale: str,
    row_max: npt.ArrayLike | None,
    *,
    weights: bool,
    numbers: bool,
    max_side: int | None,
) -> _Grid:
    """What is drawn of ``m`` on weight scale ``scale``: divided by the row's largest, pooled,
    then (for "log") the log of each cell."""
    grid = _grid(_on_scale(m, scale, row_max), weights=weights, numbers=numbers, max_side=max_side)
    if scale == "log":
        grid = _Grid(log_weights(grid.z), grid.masked, grid.row_block, grid.col_block)
    return grid


def _step_plot(
    grid: _Grid,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    titles: tuple[str, str],
    numbers: bool,
    marked: bool,
    width: int,
    bar_px: int,
    tick_chars: int,
) -> _Plot:
    """The plot size and token axes (``titles``: y, x, before pooling): the plot is as wide as the column
    leaves beside the row labels (whose margin depends on the plot height, which depends on
    its width) and the colorbar (``bar_px``), rows as tall as :func:`_plot_height` says.
    ``marked``: room for the "▶" before the highlighted row's label."""
    rows = len(row_labels)
    row_cells, col_cells = grid.z.shape
    y_title, x_title = _pooled_title(titles[0], grid.row_block), _pooled_title(titles[1], grid.col_block)
    mark_px = text_px(MARK, 14) + 0.1 * text_px("M" * tick_chars, 14) if marked else 0.0
    plans: dict[float, tuple[int, TokenAxis]] = {}

    def plan(plot_w: float) -> tuple[int, TokenAxis]:
        if plot_w not in plans:
            h = _plot_height(row_cells, rows, plot_w / col_cells, numbers)
            step = tick_step(row_labels, [("y", h)], block=grid.row_block, max_chars=tick_chars)
            axis = token_axis(
                row_labels, h, "y", step=step, block=grid.row_block, title=y_title, max_margin=0.35 * width,
                max_chars=tick_chars,
            )  # fmt: skip
            plans[plot_w] = (h, axis)
        return plans[plot_w]

    def available(plot_w: float) -> float:
        return width - bar_px - plan(plot_w)[1].margin - mark_px - Y_LABEL_STANDOFF_PX

    plot_w = int(fit_side(available, width - bar_px - 100))
    plot_h, y_axis = plan(plot_w)
    x_step = tick_step(col_labels, [("x", plot_w)], block=grid.col_block, max_chars=tick_chars)
    x_axis = token_axis(
        col_labels, plot_w, "x", step=x_step, block=grid.col_block, title=x_title, max_chars=tick_chars
    )
    return _Plot(plot_w, plot_h, x_axis, y_axis)


@dataclass(frozen=True)
class _Numbers:
    """Every value written in its cell: the texts of the shown cells, those of the masked
    cells (each "" elsewhere), and the font they fit at."""

    shown: list[list[str]]
    masked: list[list[str]]
    font: int


def _cell_numbers(m: Float32Array, plot: _Plot) -> _Numbers:
    """The numbers of ``m`` (never pooled) at the largest font its cells in ``plot`` allow."""
    rows, cols = m.shape
    cells = [[cell_text(float(v)) for v in row] for row in m.tolist()]
    font = _number_font([t for row in cells for t in row], plot.w / cols, plot.h / rows)
    shown = np.isfinite(m).tolist()
    heat_text = [
        [t if ok else "" for t, ok in zip(*pair, strict=True)] for pair in zip(cells, shown, strict=True)
    ]
    mask_text = [
        [t if not ok else "" for t, ok in zip(*pair, strict=True)] for pair in zip(cells, shown, strict=True)
    ]
    return _Numbers(heat_text, mask_text, font)


def _step_traces(
    grid: _Grid,
    names: tuple[list[str], list[str]],
    *,
    name: str,
    colors: dict[str, Any],
    weights: bool,
    numbers: _Numbers | None,
) -> list[dict[str, Any]]:
    """The heatmap of ``grid``, and under it the mask layer when a cell is masked.
    ``names``: the x and y category names; ``numbers``: the cell texts, if any."""
    xs, ys = names
    what = safe_label(name)
    if grid.row_block * grid.col_block > 1:
        what = (
            tr("max {what} in the block", what=what)
            if weights
            else tr("largest |{what}| in the block", what=what)
        )
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": grid.z,
        "x": xs,
        "y": ys,
        "hovertemplate": "%{y}<br>%{x}<br>" + what + " %{z:.4g}<extra></extra>",
        "hoverongaps": False,
        **colors,
    }
    font = NUMBER_FONTS[-1] if numbers is None else numbers.font
    if numbers is not None:
        heat.update(text=numbers.shown, texttemplate="%{text}", textfont={"size": font}, xgap=1, ygap=1)
    if not grid.masked.any():
        return [heat]
    # The mask layer goes first: where both traces answer a hover (unmasked cells), plotly
    # shows the later one; on the heatmap's gaps only the mask layer answers.
    return [_mask_trace(grid, xs, ys, None if numbers is None else numbers.masked, font), heat]


def _row_mark(
    plot: _Plot, grid: _Grid, highlight: int | None, row_labels: Sequence[str], tick_chars: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The y axis (row 0 on top) and the shapes: with a ``highlight`` row, its tick label in
    bold after "▶" (added when labels are thinned) and the frame around its row."""
    y_axis = plot.y_axis
    y_props = {**y_axis.props, "autorange": "reversed", "ticklabelstandoff": Y_LABEL_STANDOFF_PX}
    if highlight is None:
        return y_props, []
    cell = highlight // grid.row_block
    reach = max(1, y_axis.step // grid.row_block)
    label = safe_label(row_labels[highlight], tick_chars)
    y_props = _mark_tick(y_props, cell, label, reach=reach, prefix=MARK)
    return y_props, _frame(cell, plot.w, plot.h / grid.z.shape[0])


def step_heatmap(
    value: npt.ArrayLike,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    highlight: int | None = None,
    title: str | None = None,
    numbers: bool = False,
    row_title: str | None = None,
    col_title: str | None = None,
    weights: bool = False,
    width: int = DETAIL_WIDTH,
    value_title: str | None = None,
    max_side: int | None = MAX_SIDE,
    tick_chars: int = MAX_TICK_CHARS,
    weight_scale: str = "linear",
    row_max: npt.ArrayLike | None = None,
) -> go.Figure:
    """One step's ``value`` [rows, cols] as a heatmap, row 0 on top.

    ``weights=True``: softmax weights on the fixed 0..1 scale of the pattern heatmaps; else a
    diverging scale centred at 0, symmetric over the finite values (robust to a few
    outliers, see :func:`~tformer.figures.colors.robust_symmetric`). Masked entries are gray
    gaps (hover "masked (−∞)"; with ``numbers`` the cell reads "−∞"); a fully masked row is
    simply gray. ``highlight`` (a row index, e.g. the query token) gets a black-and-white frame
    across the plot and a bold "▶" tick label. ``numbers=True`` writes every value in its cell
    (12-18 px, plotly picks dark or light text for the cell color) and never pools; otherwise
    a side longer than ``max_side`` is pooled (see the module docstring) and its axis title
    says how many positions a cell covers. ``value_title`` names the values on the colorbar
    and in the hover (default "weight" or "value"). ``tick_chars``: tick labels longer than
    this are cut (labels numbered "position token" need more than the default).
    ``weight_scale`` (weights only: "linear", "log", "row", as in
    :func:`~tformer.figures.attention.attention_heatmap`) sets the colors, and the colorbar
    says which; cell numbers stay true weights. For "row", ``row_max`` [rows] is each row's
    largest weight over all its keys (a window of keys shows part of a row); default: the
    largest shown.

    Rows are 16 px at least while every row is labelled (up to 64), about as tall as the cells
    are wide, within 140..700 px. ``layout.meta``: rows, cols, highlight, numbers, weights,
    row_block, col_block, masked (cells), width, plot_px ([w, h]), tick steps and, for
    diverging values, ``color`` (limit, clipped, rule).
    """
    m = _check_value(value, row_labels, col_labels)
    hl = _check_index("highlight", highlight, m.shape[0])
    scale = weight_scale if weights else "linear"
    name = value_title or (weight_scale_title(scale) if weights else tr("value"))
    row_title = tr("token (row)") if row_title is None else row_title
    col_title = tr("dimension") if col_title is None else col_title
    grid = _scaled_grid(m, scale, row_max, weights=weights, numbers=numbers, max_side=max_side)
    colors, diverging = _scale_colors(grid, weights, name, scale)
    r = colorbar_px(colors["colorbar"]["ticktext"])
    plot = _step_plot(
        grid,
        row_labels,
        col_labels,
        titles=(row_title, col_title),
        numbers=numbers,
        marked=hl is not None,
        width=width,
        bar_px=r,
        tick_chars=tick_chars,
    )
    cell_numbers = _cell_numbers(m, plot) if numbers else None
    y_props, shapes = _row_mark(plot, grid, hl, row_labels, tick_chars)
    meta = {
        "rows": int(m.shape[0]),
        "cols": int(m.shape[1]),
        "highlight": hl,
        "numbers": bool(numbers),
        "weights": bool(weights),
        "row_block": grid.row_block,
        "col_block": grid.col_block,
        "masked": int(np.count_nonzero(~np.isfinite(m))),
        "plot_px": [plot.w, plot.h],
        "row_tick_step": plot.y_axis.step,
        "col_tick_step": plot.x_axis.step,
        **({"number_font": cell_numbers.font} if cell_numbers is not None else {}),
        **({"color": diverging.meta()} if diverging is not None else {}),
        **({"weight_scale": scale} if weights else {}),
    }
    layout = base_layout(
        plot.h,
        width=width,
        left=width - r - plot.w,
        right=r,
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        bottom=plot.x_axis.margin,
        title=title,
        meta=meta,
        xaxis=plot.x_axis.props,
        yaxis=y_props,
        shapes=shapes,
    )
    names = (_block_names(col_labels, grid.col_block), _block_names(row_labels, grid.row_block))
    data = _step_traces(grid, names, name=name, colors=colors, weights=weights, numbers=cell_numbers)
    return go.Figure({"data": data, "layout": layout})


def _on_scale(m: Float32Array, scale: str, row_max: npt.ArrayLike | None) -> Float32Array:
    """Weights divided by their row's largest ("row"; ``row_max`` or the largest shown), else
    as they are (the log is taken after pooling: the log of a block's maximum is its largest)."""
    check_weight_scale(scale)
    if scale != "row":
        return m
    if row_max is None:  # NaN (a fully masked row) stays NaN: drawn gray
        return np.where(np.isnan(m), np.float32(np.nan), row_normalized(np.nan_to_num(m, nan=0.0)))
    top = np.asarray(row_max, dtype=np.float32).reshape(-1)
    if top.shape != (m.shape[0],):
        raise ValueError(f"row_max has shape {top.shape}; value has {m.shape[0]} rows")
    return np.divide(m, top[:, None], out=np.zeros_like(m), where=top[:, None] > 0).astype(np.float32)


# ---------------------------------------------------------------------------------------------
# row_bars
# ---------------------------------------------------------------------------------------------
def _bar_colors(v: Float32Array, highlight: int | None, weights: bool) -> list[str]:
    colors = [BAR_WEIGHT if weights else (BAR_NEGATIVE if x < 0 else BAR_POSITIVE) for x in v.tolist()]
    if highlight is not None:
        colors[highlight] = BAR_HIGHLIGHT
    return colors


def _value_range(v: Float32Array, weights: bool, numbers: bool) -> list[float] | None:
    """The y range: 0..1 for weights; room for the value labels with ``numbers``; None lets
    plotly choose (-1..1 when nothing is finite)."""
    if weights:
        return [0.0, 1.0]
    finite = v[np.isfinite(v)]
    if not finite.size:
        return [-1.0, 1.0]
    if not numbers:
        return None
    lo, hi = min(0.0, float(finite.min())), max(0.0, float(finite.max()))
    pad = 0.15 * ((hi - lo) or 1.0)
    return [lo - (pad if lo < 0 else 0.0), hi + (pad if hi > 0 or lo == 0 else 0.0)]


def _masked_markers(
    names: list[str], masked: npt.NDArray[np.bool_], with_text: bool, pitch: float
) -> dict[str, Any]:
    """One marker trace: an ✕ at 0 for every masked key (hover: "−∞ (masked)"), at most as
    wide as a key's slot (``pitch`` px), so hundreds of them stay a thin gray line."""
    count = int(masked.sum())
    size = min(MARKER_PX, max(3.0, 0.8 * pitch))
    trace: dict[str, Any] = {
        "type": "scatter",
        "name": tr("masked"),
        "x": [nm for nm, hide in zip(names, masked.tolist(), strict=True) if hide],
        "y": np.zeros(count, dtype=np.float32),
        "mode": "markers+text" if with_text else "markers",
        "marker": {"symbol": "x", "size": size, "color": MASK_MARKER},
        "showlegend": False,
        "cliponaxis": False,
        "hovertemplate": "%{x}<br>" + tr("−∞ (masked): weight 0") + "<extra></extra>",
    }
    if with_text:
        trace.update(text=[MASKED_CELL] * count, textposition="top center", textfont={"size": BAR_TEXT_PX})
    return trace


def _band(key: int, pitch: float) -> dict[str, Any]:
    """A light amber column behind key ``key``, at least :data:`BAND_PX` wide, so the
    highlighted key is found even when its bar is 1 px wide or masked."""
    half = max(0.5, BAND_PX / 2 / pitch)
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y domain",
        "x0": key - half,
        "x1": key + half,
        "y0": 0,
        "y1": 1,
        "line": {"width": 0},
        "fillcolor": BAR_HIGHLIGHT,
        "opacity": 0.25,
        "layer": "below",
    }


def _bar_x_axis(labels: Sequence[str], width: int, left: int, title: str) -> tuple[TokenAxis, int]:
    """The token axis under the bars and the right margin its last (flat) label needs."""
    right = EDGE_PX
    for _ in range(3):
        plot_w = width - left - right
        axis = token_axis(labels, plot_w, "x", step=tick_step(labels, [("x", plot_w)]), title=title)
        last = html.unescape(re.sub(r"<[^>]+>", "", str(axis.props["ticktext"][-1])))
        need = math.ceil(text_px(last, axis.font) / 2 + 4) if axis.angle == 0 else EDGE_PX
        if need <= right:
            break
        right = need
    return axis, right


def row_bars(
    values: npt.ArrayLike,
    labels: Sequence[str],
    *,
    highlight: int | None = None,
    title: str | None = None,
    value_title: str | None = None,
    numbers: bool = False,
    weights: bool = False,
    width: int = DETAIL_WIDTH,
    key_title: str | None = None,
) -> go.Figure:
    """One query's row over the keys, ``values`` [key_pos], as bars (key 0 on the left).

    Scores are red above 0 and blue below; ``weights=True`` draws one color on a fixed 0..1
    axis. Masked keys (``-inf``) get a gray ✕ at 0 (hover "−∞ (masked)"; up to 16 keys, or
    with ``numbers``, the label "−∞" too) and the x title says what the ✕ means; a fully
    masked row shows only the ✕ marks. ``highlight`` (a key index) is an amber bar with a
    bold tick label. ``numbers=True`` writes each value over its bar (13 px). Every key is
    labelled up to 64, every k-th beyond (the hover names each). ``layout.meta``: n,
    highlight, numbers, weights, masked, width, tick_step.
    """
    v = as_float32(values, 1, "values", "[key_pos]")
    n = int(v.shape[0])
    if n == 0:
        raise ValueError("values has shape (0,): at least one key is needed")
    _check_labels("values", (n,), labels, 0, "key")
    hl = _check_index("highlight", highlight, n)
    value_title = tr("score") if value_title is None else value_title
    key_title = tr("key token") if key_title is None else key_title
    masked = ~np.isfinite(v)
    names = _unique_names(labels)
    bars: dict[str, Any] = {
        "type": "bar",
        "name": value_title,
        "x": names,
        "y": np.where(masked, np.float32(np.nan), v).astype(np.float32),
        "marker": {"color": _bar_colors(v, hl, weights), "line": {"width": 0}},
        "hovertemplate": "%{x}<br>" + safe_label(value_title) + " %{y:.4g}<extra></extra>",
    }
    if numbers:
        bars.update(
            text=["" if m else cell_text(float(x)) for x, m in zip(v.tolist(), masked.tolist(), strict=True)],
            textposition="outside",
            textfont={"size": BAR_TEXT_PX},
            cliponaxis=False,
        )
    data: list[dict[str, Any]] = [bars]
    x_title = tr("{title}   (× = −∞, masked)", title=key_title) if masked.any() else key_title
    left = numeric_axis_margin(f"{MINUS}0.00", font=VALUE_TICK_PX)
    x_axis, right = _bar_x_axis(labels, width, left, x_title)
    pitch = (width - left - right) / n
    if masked.any():
        data.append(_masked_markers(names, masked, numbers or n <= 16, pitch))
    x_props = x_axis.props
    shapes: list[dict[str, Any]] = []
    if hl is not None:
        reach = x_axis.step * max(1, x_axis.rows)
        x_props = _mark_tick(x_props, hl, safe_label(labels[hl], MAX_TICK_CHARS), reach=reach, prefix="")
        shapes = [_band(hl, pitch)]
    y_axis: dict[str, Any] = {
        "title": axis_title(safe_label(value_title)),
        "tickfont": {"size": VALUE_TICK_PX},
        "ticks": "",
        "zeroline": True,
        "zerolinecolor": MARK_INK,
        "zerolinewidth": 1.5,
    }
    y_range = _value_range(v, weights, numbers)
    if y_range is not None:
        y_axis["range"] = y_range
    if weights:
        y_axis.update(weight_ticks())
    meta = {
        "n": n,
        "highlight": hl,
        "numbers": bool(numbers),
        "weights": bool(weights),
        "masked": int(masked.sum()),
        "tick_step": x_axis.step,
    }
    layout = base_layout(
        BAR_PLOT_PX,
        width=width,
        left=left,
        right=right,
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        bottom=x_axis.margin,
        title=title,
        meta=meta,
        xaxis=x_props,
        yaxis=y_axis,
        shapes=shapes,
        bargap=0.15,
        showlegend=False,
    )
    return go.Figure({"data": data, "layout": layout})


# ---------------------------------------------------------------------------------------------
# neuron_figure
# ---------------------------------------------------------------------------------------------
def _dims_ticks(d_head: int, plot_w: float) -> dict[str, Any]:
    """Ticks of the dimension axis: every d while the numbers fit side by side, else every
    k-th (a nice k)."""
    need = text_px(str(d_head - 1), 12) + 8
    step = next((s for s in DIM_STEPS if plot_w / d_head * s >= need), DIM_STEPS[-1])
    vals = list(range(0, d_head, step))
    return {"tickmode": "array", "tickvals": vals, "ticktext": [str(t) for t in vals]}


def _left_title(text: str, x_domain: Sequence[float], y_domain: Sequence[float]) -> dict[str, Any]:
    """A panel title, left-aligned over its panel."""
    return {**panel_title(text, x_domain, y_domain), "x": x_domain[0], "xanchor": "left"}


def _neuron_arrays(
    q: npt.ArrayLike, k: npt.ArrayLike, products: npt.ArrayLike, labels: Sequence[str] | None
) -> list[Float32Array]:
    """``q``, ``k`` and ``products`` as float32 [d_head] of one non-empty shape; ``labels``
    is None or a (query label, key label) pair."""
    arrays = [as_float32(a, 1, nm, "[d_head]") for nm, a in (("q", q), ("k", k), ("products", products))]
    if not arrays[0].shape == arrays[1].shape == arrays[2].shape:
        raise ValueError(
            "q, k and products must share one shape [d_head], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    if int(arrays[0].shape[0]) == 0:
        raise ValueError("q has shape (0,): at least one dimension is needed")
    if labels is not None and len(labels) != 2:
        raise ValueError(f"labels must be (query label, key label), got {len(labels)} labels")
    return arrays


def _neuron_titles(labels: Sequence[str] | None) -> tuple[str, str, str]:
    """The three panels' titles: the query's and the key's (naming their tokens when
    ``labels`` are given) and what the products' colours mean."""
    if labels is None:
        q_title, k_title = tr("q<sub>d</sub>: the query"), tr("k<sub>d</sub>: the key")
    else:
        q_title = tr("q<sub>d</sub>: the query of {token}", token=safe_label(labels[0]))
        k_title = tr("k<sub>d</sub>: the key of {token}", token=safe_label(labels[1]))
    products = tr(
        "q<sub>d</sub>\u00b7k<sub>d</sub>: <span style='color:{red}'>red adds</span>, "
        "<span style='color:{blue}'>blue subtracts</span>",
        red=BAR_POSITIVE,
        blue=BAR_NEGATIVE,
    )
    return q_title, k_title, products


def _neuron_domains(plot_w: float) -> tuple[list[Domain], int]:
    """The three panels' paper domains, stacked top to bottom with room for each one's
    title between them, and the plot height (px) they take."""
    gap = TOP_PANEL_TITLE_PX + 8
    plot_h = sum(NEURON_PANEL_PX) + 2 * gap
    y0s = [0, NEURON_PANEL_PX[0] + gap, NEURON_PANEL_PX[0] + NEURON_PANEL_PX[1] + 2 * gap]
    domains = [
        px_domain(0, plot_w, y, y + h, plot_w, plot_h) for y, h in zip(y0s, NEURON_PANEL_PX, strict=True)
    ]
    return domains, plot_h


def _neuron_bars(arrays: Sequence[Float32Array], names: Sequence[str]) -> list[dict[str, Any]]:
    """One bar trace per panel over the dimension axis: q, k in their colours, the products
    red above 0 and blue below."""
    products = arrays[2]
    colors: list[Any] = [
        Q_COLOR,
        K_COLOR,
        [BAR_NEGATIVE if x < 0 else BAR_POSITIVE for x in products.tolist()],
    ]
    return [
        {
            "type": "bar",
            "name": nm,
            "y": a,
            "xaxis": "x",
            "yaxis": ya,
            "marker": {"color": c, "line": {"width": 0}},
            "hovertemplate": "d = %{x}<br>" + nm + " = %{y:.4g}<extra></extra>",
        }
        for nm, a, ya, c in zip(names, arrays, NEURON_YAXES, colors, strict=True)
    ]


def _neuron_annotations(
    titles: Sequence[str], domains: Sequence[Domain], total: float
) -> list[dict[str, Any]]:
    """Each panel's title, left-aligned over it, and the sum of the products, right-aligned
    over the products panel."""
    sum_text = tr(
        "\u03a3<sub>d</sub> q<sub>d</sub>k<sub>d</sub> = {total}", total=f"{total:.4g}".replace("-", MINUS)
    )
    annotations = [_left_title(t, *d) for t, d in zip(titles, domains, strict=True)]
    annotations.append(
        {**panel_title(f"<b>{sum_text}</b>", *domains[2]), "x": 1.0, "xanchor": "right", "font": {"size": 16}}
    )
    return annotations


def _neuron_axes(
    d_head: int, plot_w: float, domains: Sequence[Domain], names: Sequence[str]
) -> dict[str, Any]:
    """The shared dimension axis under the products panel and each panel's value axis."""
    axes: dict[str, Any] = {
        "xaxis": {
            **_dims_ticks(d_head, plot_w),
            "anchor": "y",
            "range": [-0.5, d_head - 0.5],
            "title": axis_title(tr("dimension d (d_head = {d_head})", d_head=d_head)),
            "tickfont": {"size": 12},
            "ticks": "",
            "showgrid": False,
            "zeroline": False,
        }
    }
    for ya, (_, yd), nm in zip(NEURON_YAXES, domains, names, strict=True):
        axes["yaxis" if ya == "y" else f"yaxis{ya[1:]}"] = {
            "domain": yd,
            "anchor": "x",
            "title": axis_title(nm),
            "tickfont": {"size": VALUE_TICK_PX},
            "ticks": "",
            "zeroline": True,
            "zerolinecolor": MARK_INK,
            "zerolinewidth": 1.5,
            "nticks": 5,
        }
    return axes


def neuron_figure(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    products: npt.ArrayLike,
    *,
    labels: Sequence[str] | None = None,
    title: str | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    r"""One score taken apart: ``q`` (query i's vector), ``k`` (key j's) and their elementwise
    ``products`` q_d·k_d, all [d_head], as three bar panels over one dimension axis d.

    Products above 0 (red) add to the score, those below (blue) take away; the products
    panel states their sum :math:`\sum_d q_d k_d` (the raw score, before the division by
    :math:`\sqrt{d_k}`). ``labels``: optional (query label, key label), user text (escaped
    here), named in the panel titles. Works from d_head = 1 to 256. ``layout.meta``:
    ``d_head``, ``sum`` (of ``products``, in float64), ``width``.
    """
    arrays = _neuron_arrays(q, k, products, labels)
    d_head = int(arrays[0].shape[0])
    total = float(np.sum(arrays[2], dtype=np.float64))
    left = numeric_axis_margin(f"{MINUS}0.000", font=VALUE_TICK_PX)
    plot_w = width - left - EDGE_PX
    domains, plot_h = _neuron_domains(plot_w)
    # symbols; a language may write them without HTML subscripts
    names = (tr("q<sub>d</sub>"), tr("k<sub>d</sub>"), tr("q<sub>d</sub>\u00b7k<sub>d</sub>"))
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=EDGE_PX,
        top=(TOP_TITLE_PX if title else 0) + TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(),
        title=title,
        meta={"d_head": d_head, "sum": total},
        annotations=_neuron_annotations(_neuron_titles(labels), domains, total),
        bargap=0.15 if d_head > 1 else 0.5,
        showlegend=False,
        **_neuron_axes(d_head, plot_w, domains, names),
    )
    return go.Figure({"data": _neuron_bars(arrays, names), "layout": layout})
