"""Heads compared: patterns side by side, a per-head metric, head similarity, ablation effect."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import attention_traces, pooled_note, weight_ticks
from .checks import Float32Array, as_float32, check_tokens
from .colors import (
    NEGATIVE,
    POSITIVE,
    SEQUENTIAL,
    robust_symmetric,
    weight_colors,
    weight_scale_ticks,
    weight_scale_title,
)
from .labels import (
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
    EDGE_PX,
    FULL_WIDTH,
    MODEBAR_PX,
    PANEL_GAP_PX,
    PANEL_VGAP_PX,
    TOP_BARE_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    base_layout,
    colorbar,
    colorbar_px,
    fit_side,
    panel_cols,
    panel_title,
    px_domain,
)
from .pooling import MAX_SIDE
from .token_panels import fitted_token_x_axis

MAX_PANELS = 12
PANEL_COLS = 4
# Beyond 64 tokens (labels thinned) panels are at least this wide, so up to 4 fit in 940 px.
LONG_PANEL_PX = 180
# The width the Heads page gives the head metric map (the left of two columns, 2 : 3).
METRIC_WIDTH = 370
# Cell text of the metric map: drawn only when the widest value fits its cell with this air.
CELL_TEXT_PX = 13
CELL_TEXT_PAD = 8
JS_TITLE = "JS divergence, 0 = identical"  # an English template, translated where drawn
# The head metrics (:data:`tformer.analysis.metrics.METRICS` keys) are named on screen by their key in
# English, and by the key's translation (the key is the template) in another language.
METRIC_NAMES = ("entropy", "entropy_norm", "mean_distance", "self", "previous", "first", "cls", "sep", "max")


def panel_max_side(n_panels: int) -> int:
    """Per-panel side cap so all panels together send at most MAX_SIDE**2 cells (one full
    heatmap's worth)."""
    return max(32, int(MAX_SIDE / math.sqrt(max(1, n_panels))))


def metric_name(metric: str) -> str:
    """A head metric's name in the current language (other names as given)."""
    return tr(metric) if metric in METRIC_NAMES else metric


def heads_side_by_side(
    pattern: npt.NDArray[np.floating] | Sequence[npt.NDArray[np.floating]],
    titles: Sequence[str],
    labels: Sequence[object],
    *,
    shared_scale: bool = True,
    width: int = FULL_WIDTH,
    weight_scale: str = "linear",
) -> go.Figure:
    """1..12 heads' ``pattern`` [n_panels, query_pos, key_pos] in a grid of square panels.

    ``pattern`` is one array or a sequence of [query_pos, key_pos] arrays, one per panel;
    ``labels`` are the token labels, one per position.
    ``shared_scale=True``: one color axis, weights 0..1 (the same scale as
    :func:`attention_heatmap`), one colorbar beside the top row, as tall as a panel.
    ``shared_scale=False``: each panel is colored from 0 to its own largest weight (compare
    shapes, not strengths); no colorbar, the hover still shows true weights. ``weight_scale``
    ("linear", "log", "row") colors the weights as :func:`attention_heatmap` does; the colorbar
    says which.

    Sized for a column ``width`` px wide (default 940). Up to 64 tokens every token is labelled
    (x labels under the bottom panel of each column, y labels left of the first column), so
    the grid has up to 4 columns while a panel still gives each token 9 px, fewer (down to 1)
    for longer texts; beyond 64 tokens labels thin out (same step on both axes) and up to 4
    panels fit a row. Long inputs are max-pooled per panel (:func:`panel_max_side`).
    ``titles`` are shown as given (escape user text with ``safe_label``).
    """
    p = _check_panels(pattern, titles, labels)
    data, block = _panel_heatmaps(p, labels, shared_scale, weight_scale)
    ticks = weight_scale_ticks(weight_scale)
    right = colorbar_px(ticks["ticktext"]) if shared_scale else EDGE_PX
    grid = _plan_grid(labels, len(titles), block, width, right)
    layout = base_layout(
        grid.plot_h,
        width=width,
        left=width - right - grid.paper_w,
        right=right,
        top=TOP_PANEL_TITLE_PX + MODEBAR_PX,
        # room for the labels from the start: no second layout pass (TokenAxis.margin)
        bottom=grid.x_axis.margin,
        meta={
            "block": block,
            "n_pos": len(labels),
            "shared_scale": shared_scale,
            "weight_scale": weight_scale,
            "cols": grid.cols,
            "plot_px": grid.side,
            "tick_step": grid.x_axis.step,
        },
        **_panel_axes(grid, titles),
    )
    if shared_scale:
        layout["coloraxis"] = {
            **weight_colors(weight_scale, prefix="c"),
            # beside the top row, as tall as one panel
            "colorbar": colorbar(
                weight_scale_title(weight_scale),
                y=1.0 - grid.side / 2 / grid.plot_h,
                length=grid.side / grid.plot_h,
                ticks=ticks,
            ),
        }
    return go.Figure({"data": data, "layout": layout})


def _check_panels(
    pattern: npt.NDArray[np.floating] | Sequence[npt.NDArray[np.floating]],
    titles: Sequence[str],
    labels: Sequence[object],
) -> Float32Array:
    """``pattern`` as float32 [n_panels, query_pos, key_pos], checked against the titles (one
    per panel, at most :data:`MAX_PANELS`) and the token labels (at least one)."""
    stacked = pattern if isinstance(pattern, np.ndarray) else np.stack([np.asarray(a) for a in pattern])
    p = as_float32(stacked, 3, "pattern", "[n_panels, query_pos, key_pos]")
    n_panels, nq, nk = p.shape
    if not 1 <= n_panels <= MAX_PANELS:
        raise ValueError(f"pattern has shape {tuple(p.shape)}: 1..{MAX_PANELS} heads, got {n_panels}")
    if len(titles) != n_panels:
        raise ValueError(f"pattern has shape {tuple(p.shape)} but {len(titles)} titles were given")
    n = len(labels)
    if (nq, nk) != (n, n):
        raise ValueError(
            f"pattern has shape {tuple(p.shape)} [n_panels, query_pos, key_pos] but {n} tokens "
            f"were given (expected ({n_panels}, {n}, {n}))"
        )
    if n == 0:
        raise ValueError("pattern has no positions: at least one token is needed")
    return p


def _panel_heatmaps(
    p: Float32Array, labels: Sequence[object], shared_scale: bool, weight_scale: str
) -> tuple[list[dict[str, Any]], int]:
    """One heatmap trace per panel on its own axes (``x``, ``x2`` ...), and the pooling block.

    With ``shared_scale`` every panel uses the layout's color axis; without it each panel is
    colored up to its own largest weight and shows no colorbar.
    """
    data: list[dict[str, Any]] = []
    block = 1
    for i in range(p.shape[0]):
        sx = "" if i == 0 else str(i + 1)
        traces, block = attention_traces(
            p[i],
            labels,
            kind="pattern",
            max_side=panel_max_side(p.shape[0]),
            coloraxis="coloraxis" if shared_scale else None,
            weight_scale=weight_scale,
        )
        heat = {**traces[-1], "xaxis": f"x{sx}", "yaxis": f"y{sx}"}
        if not shared_scale:
            low = heat["zmin"]
            heat.update(zmax=max(float(np.nanmax(heat["z"])), low + 1e-6), showscale=False)
        data.append(heat)
    return data, block


@dataclass(frozen=True)
class _Grid:
    """Where the panels of :func:`heads_side_by_side` go: ``cols`` x ``rows`` squares of
    ``side`` px in a plot area ``paper_w`` x ``plot_h`` px, and the token axes every panel
    shares (planned for that side)."""

    n_panels: int
    cols: int
    rows: int
    side: int
    paper_w: int
    plot_h: int
    x_axis: TokenAxis
    y_axis: TokenAxis


def _plan_grid(labels: Sequence[object], n_panels: int, block: int, width: int, right: int) -> _Grid:
    """The panel grid for ``n_panels`` in ``width`` px with ``right`` px for the colorbar: the
    columns first, then the largest side whose token labels (same step on both axes) still fit
    beside the panels (:func:`fit_side`)."""
    n = len(labels)
    cols = panel_cols(n, n_panels, width - right - 90, max_cols=PANEL_COLS, long_side=LONG_PANEL_PX)
    rows = math.ceil(n_panels / cols)
    note = pooled_note(block)
    plan: list[tuple[TokenAxis, TokenAxis]] = []

    def available(side: float) -> float:
        step = tick_step(labels, [("x", side), ("y", side)], block=block, edges=cols == 1)
        x_axis = token_axis(
            labels, side, "x", step=step, block=block, title=tr("key token") + note, edges=cols == 1
        )
        y_axis = token_axis(labels, side, "y", step=step, block=block, title=tr("query token") + note)
        plan.append((x_axis, y_axis))
        return (width - y_axis.margin - right - (cols - 1) * PANEL_GAP_PX) / cols

    side = int(fit_side(available, (width - right - 90 - (cols - 1) * PANEL_GAP_PX) / cols))
    x_axis, y_axis = plan[-1]
    return _Grid(
        n_panels=n_panels,
        cols=cols,
        rows=rows,
        side=side,
        paper_w=cols * side + (cols - 1) * PANEL_GAP_PX,
        plot_h=rows * side + (rows - 1) * PANEL_VGAP_PX,
        x_axis=x_axis,
        y_axis=y_axis,
    )


def _panel_axes(grid: _Grid, titles: Sequence[str]) -> dict[str, Any]:
    """Each panel's x and y axis (``xaxis``, ``xaxis2`` ...) placed on the grid, and the panel
    titles as ``annotations``. Token tick labels and axis titles are drawn on the outer panels
    only (the bottom one of each column, the first column): drawing every axis's labels is what
    makes this figure slow in the browser."""
    cols, side = grid.cols, grid.side
    annotations: list[dict[str, Any]] = []
    axes: dict[str, Any] = {"annotations": annotations}
    for i in range(grid.n_panels):
        row, c = divmod(i, cols)
        sx = "" if i == 0 else str(i + 1)
        x0, y0 = c * (side + PANEL_GAP_PX), row * (side + PANEL_VGAP_PX)
        xd, yd = px_domain(x0, x0 + side, y0, y0 + side, grid.paper_w, grid.plot_h)
        bottom = i + cols >= grid.n_panels  # the lowest panel of its column
        axes[f"xaxis{sx}"] = {**grid.x_axis.props, "domain": xd, "anchor": f"y{sx}", "showticklabels": bottom}
        axes[f"yaxis{sx}"] = {
            **grid.y_axis.props,
            "domain": yd,
            "anchor": f"x{sx}",
            "autorange": "reversed",
            "showticklabels": c == 0,
        }
        if not bottom:
            axes[f"xaxis{sx}"]["title"] = None
        if c:
            axes[f"yaxis{sx}"]["title"] = None
        annotations.append(panel_title(titles[i], xd, yd))
    return axes


def format_cell(v: float) -> str:
    """A value in a cell: 2 significant digits (3 digits from 100 on), "" for NaN."""
    if not np.isfinite(v):
        return ""
    a = abs(v)
    if a >= 10 or a == 0:
        text = f"{v:.0f}"
    elif a >= 1:
        text = f"{v:.1f}"
    else:
        text = f"{v:.2g}"
        if "e" in text:
            text = f"{v:.0e}"
    return text.replace("-", "\u2212")


def _index_axis(title: str, n: int, *, top_down: bool = False) -> dict[str, Any]:
    """An axis of n integer positions (layers or heads), every one labelled."""
    return {
        "title": axis_title(title),
        "tickmode": "array",
        "tickvals": list(range(n)),
        "tickfont": {"size": 13},
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
        "range": [n - 0.5, -0.5] if top_down else [-0.5, n - 0.5],
    }


def head_metrics_figure(
    metrics: Mapping[str, npt.ArrayLike], metric: str, *, width: int = METRIC_WIDTH
) -> go.Figure:
    """Heatmap of ``metrics[metric]`` [layer, head_index]; the hover names layer, head and value.

    ``metrics`` is :func:`tformer.analysis.metrics.head_metrics`'s output (or any mapping of
    [layer, head_index] arrays); ``metric`` must be one of its keys. Metrics that are never
    negative are sequential from 0 (to 1 when every value lies in 0..1, as shares do; to the
    largest value otherwise); signed ones diverge around 0. Each value is also written in its
    cell (2 significant digits) when the cells are wide enough for the widest of them at 13 px
    (at the default ``width``, 370 px for 12 heads, they are not: the hover always has it).
    """
    if metric not in metrics:
        raise ValueError(f"metric {metric!r} is not one of {sorted(metrics)}")
    a = as_float32(metrics[metric], 2, f"metrics[{metric!r}]", "[layer, head_index]")
    n_layers, n_heads = a.shape
    if a.size == 0:
        raise ValueError(f"metrics[{metric!r}] has shape {tuple(a.shape)}: no heads")
    name = safe_label(metric_name(metric))
    finite = a[np.isfinite(a)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    color_meta: dict[str, Any]
    if lo < 0:
        scale = robust_symmetric(a)
        colors: dict[str, Any] = scale.colors()
        ticks = scale.colorbar_ticks()
        color_meta = scale.meta()
    else:
        top = 1.0 if hi <= 1.0 else hi
        colors = {"zmin": 0.0, "zmax": top, "colorscale": SEQUENTIAL}
        ticks = {"tickmode": "auto", "nticks": 5}
        color_meta = {"range": [0.0, top]}
    r = colorbar_px([format_cell(-abs(hi)) if lo < 0 else format_cell(hi), "0.25"])
    margin = {
        "l": numeric_axis_margin(str(n_layers - 1), font=13),
        "r": r,
        "t": TOP_BARE_PX,
        "b": x_numeric_margin(font=13),
    }
    cell_w = (width - margin["l"] - margin["r"]) / n_heads
    cell_h = float(min(44, max(24, cell_w)))
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": a,
        # x is the head index, y the layer (plotly's default 0..n-1: nothing sent)
        "hovertemplate": tr("layer %{y}, head %{x}") + "<br>" + name + " %{z:.4g}<extra></extra>",
        "xgap": 1,
        "ygap": 1,
        "colorbar": colorbar(name, ticks=ticks),
        **colors,
    }
    cells = [[format_cell(float(v)) for v in row] for row in a]
    widest = max((text_px(t, CELL_TEXT_PX) for row in cells for t in row), default=0.0)
    show_values = widest + CELL_TEXT_PAD <= min(cell_w, cell_h * 3)
    if show_values:
        heat.update(text=cells, texttemplate="%{text}", textfont={"size": CELL_TEXT_PX})
    layout = base_layout(
        math.ceil(n_layers * cell_h),
        width=width,
        left=margin["l"],
        right=margin["r"],
        top=margin["t"],
        bottom=margin["b"],
        meta={"metric": metric, "values_shown": show_values, "color": color_meta},
        xaxis=_index_axis(tr("head"), n_heads),
        yaxis=_index_axis(tr("layer"), n_layers, top_down=True),
    )
    return go.Figure({"data": [heat], "layout": layout})


def head_similarity_heatmap(
    sim: npt.ArrayLike,
    labels: Sequence[str],
    *,
    order: Sequence[int] | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Jensen-Shannon divergence between every pair of n heads, ``sim`` [n, n] in 0..1.

    ``sim`` is :func:`tformer.analysis.metrics.js_divergence_matrix`'s output (0 = identical patterns,
    1 = no overlap); ``labels`` name the heads (escaped here). Sequential colors on a fixed
    0..1 scale: **dark = 0 = identical**, bright yellow = 1 = nothing in common; NaN (no row to
    compare) is a gap. The colorbar and hover say "JS divergence"; ``layout.meta`` holds
    ``value``, ``dark_end`` and ``order``.

    ``order`` (a permutation of ``range(n)``, e.g. :func:`tformer.analysis.metrics.cluster_order`)
    sets the order of the heads on both axes, so that heads of one cluster form a dark block
    on the diagonal; their labels follow. Every head is labelled on both axes; the plot is
    square and fills a column ``width`` px wide (default 940).
    """
    s = as_float32(sim, 2, "sim", "[n, n] (head x head)")
    n = len(labels)
    if s.shape != (n, n):
        raise ValueError(f"sim has shape {tuple(s.shape)} but {n} labels were given (expected ({n}, {n}))")
    if n == 0:
        raise ValueError("sim has shape (0, 0): at least one head is needed")
    perm = list(range(n)) if order is None else [int(i) for i in order]
    if sorted(perm) != list(range(n)):
        raise ValueError(
            f"order must be a permutation of 0..{n - 1} (one entry per head), got {list(order or [])}"
        )
    idx = np.asarray(perm, dtype=np.intp)
    z = np.ascontiguousarray(s[np.ix_(idx, idx)], dtype=np.float32)
    shown = [str(labels[i]) for i in perm]
    # hover names: the labels, with the head index when two labels repeat
    unique = len(set(labels)) == n
    names = [safe_label(labels[i]) if unique else f"{i}: {safe_label(labels[i])}" for i in perm]
    ticks = weight_ticks()
    js = tr("JS divergence")
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": js,
        "z": z,
        "x": names,
        "y": names,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": SEQUENTIAL,
        "hoverongaps": False,
        "hovertemplate": "%{y}<br>%{x}<br>" + js + " %{z:.3f}<extra></extra>",
        "colorbar": colorbar(tr(JS_TITLE), ticks=ticks),
    }
    r = colorbar_px(ticks["ticktext"])
    plan: list[tuple[TokenAxis, TokenAxis]] = []

    def available(side: float) -> float:
        plan.append(
            (
                token_axis(shown, side, "x", title=tr("head")),
                token_axis(shown, side, "y", title=tr("head")),
            )
        )
        return width - plan[-1][1].margin - r

    side = int(fit_side(available, width - r - 80))
    x_axis, y_axis = plan[-1]
    layout = base_layout(
        side,
        width=width,
        left=width - r - side,
        right=r,
        top=TOP_BARE_PX,
        bottom=x_axis.margin,
        meta={
            "value": "JS divergence",
            "range": [0.0, 1.0],
            "dark_end": "0 = identical",
            "order": perm,
            "plot_px": side,
        },
        xaxis={**x_axis.props, "constrain": "domain"},
        yaxis={**y_axis.props, "autorange": "reversed", "scaleanchor": "x", "constrain": "domain"},
    )
    return go.Figure({"data": [heat], "layout": layout})


def ablation_effect_figure(
    delta: npt.ArrayLike,
    labels: Sequence[object],
    title: str | None = None,
    *,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Bars per position: how much each token's output changed (``delta`` [pos]).

    Typically :func:`tformer.analysis.metrics.output_change`, the relative change
    ``||out_ablated[pos] - out[pos]|| / ||out[pos]||``; signed values are allowed (negative bars
    in blue). Every token is labelled up to 64 tokens, every k-th beyond (the hover names
    each). ``title`` is shown as given (escape user text with ``safe_label``).
    """
    d = as_float32(delta, 1, "delta", "[pos]")
    check_tokens(labels, d.shape[0], "delta", tuple(d.shape))
    if d.shape[0] == 0:
        raise ValueError("delta has shape (0,): at least one token is needed")
    bars: dict[str, Any] = {
        "type": "bar",
        "name": tr("change"),
        "x": token_labels(labels),
        "y": d,
        "marker": {"color": np.where(d < 0, NEGATIVE, POSITIVE).tolist() if (d < 0).any() else POSITIVE},
        "hovertemplate": tr("token %{x}<br>change %{y:.4g}") + "<extra></extra>",
    }
    # value labels: at most ~6 characters, "-0.012"
    margin_l = numeric_axis_margin("\u22120.000", font=12)
    axis = fitted_token_x_axis(labels, width, margin_l)
    layout = base_layout(
        300,
        width=width,
        left=margin_l,
        right=axis.margin_r,
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        # room for the labels from the start
        bottom=axis.labels_px,
        title=title,
        meta={"n_pos": len(labels), "tick_step": axis.step},
        xaxis=axis.props,
        yaxis={
            "title": axis_title(tr("relative change")),
            "zeroline": True,
            "tickfont": {"size": 12},
            "ticks": "",
        },
        bargap=0.15,
    )
    return go.Figure({"data": [bars], "layout": layout})
