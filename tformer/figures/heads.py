"""Heads compared: patterns side by side, a per-head metric, head similarity, ablation effect."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from .attention import attention_traces
from .checks import as_float32, check_tokens
from .colors import DIVERGING, SEQUENTIAL, pattern_colorscale, symmetric_range
from .labels import axis_margin, safe_label, token_axis, token_labels
from .layout import COLORAXIS_BAR_PX, COLORBAR_PX, grid_domains, panel_title
from .pooling import MAX_SIDE

MAX_PANELS = 12
PANEL_COLS = 4
# Tick labels per axis in a small panel.
PANEL_TICKS = 12


def panel_max_side(n_panels: int) -> int:
    """Per-panel side cap so all panels together send at most MAX_SIDE**2 cells (one full
    heatmap's worth)."""
    return max(32, int(MAX_SIDE / math.sqrt(max(1, n_panels))))


def heads_side_by_side(
    pattern: npt.NDArray[np.floating] | Sequence[npt.NDArray[np.floating]],
    titles: Sequence[str],
    tokens: Sequence[object],
    *,
    shared_scale: bool = True,
) -> go.Figure:
    """1..12 heads' ``pattern`` [n_panels, query_pos, key_pos] in a grid of up to 4 columns.

    ``pattern`` is one array or a sequence of [query_pos, key_pos] arrays, one per panel.
    ``shared_scale=True``: one color axis, weights 0..1 (the same scale as
    :func:`attention_heatmap`), one colorbar. ``shared_scale=False``: each panel is colored from
    0 to its own largest weight (compare shapes, not strengths); no colorbar, the hover still
    shows true weights. Long inputs are max-pooled per panel (:func:`panel_max_side`).
    ``titles`` are shown as given (escape user text with ``safe_label``).
    """
    stacked = pattern if isinstance(pattern, np.ndarray) else np.stack([np.asarray(a) for a in pattern])
    p = as_float32(stacked, 3, "pattern", "[n_panels, query_pos, key_pos]")
    n_panels, nq, nk = p.shape
    if not 1 <= n_panels <= MAX_PANELS:
        raise ValueError(f"pattern has shape {tuple(p.shape)}: 1..{MAX_PANELS} heads, got {n_panels}")
    if len(titles) != n_panels:
        raise ValueError(f"pattern has shape {tuple(p.shape)} but {len(titles)} titles were given")
    n = len(tokens)
    if (nq, nk) != (n, n):
        raise ValueError(
            f"pattern has shape {tuple(p.shape)} [n_panels, query_pos, key_pos] but {n} tokens "
            f"were given (expected ({n_panels}, {n}, {n}))"
        )
    if n == 0:
        raise ValueError("pattern has no positions: at least one token is needed")

    cols = min(n_panels, PANEL_COLS)
    rows = math.ceil(n_panels / cols)
    domains = grid_domains(rows, cols, hspace=0.06, vspace=0.12 / rows + 0.04)
    side = panel_max_side(n_panels)
    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"annotations": annotations}
    block = 1
    axis: dict[str, Any] = {}
    for i in range(n_panels):
        c = i % cols
        sx = "" if i == 0 else str(i + 1)
        traces, block = attention_traces(
            p[i],
            tokens,
            kind="pattern",
            max_side=side,
            coloraxis="coloraxis" if shared_scale else None,
        )
        heat = {**traces[-1], "xaxis": f"x{sx}", "yaxis": f"y{sx}"}
        if not shared_scale:
            heat.update(zmax=max(float(np.nanmax(heat["z"])), 1e-6), showscale=False)
        data.append(heat)
        xd, yd = domains[i]
        axis = token_axis(tokens, block, max_ticks=PANEL_TICKS)
        # Token tick labels on the outer panels only: drawing 24 labelled axes is what makes
        # this figure slow in the browser.
        layout[f"xaxis{sx}"] = {
            **axis,
            "domain": xd,
            "anchor": f"y{sx}",
            "showticklabels": i + cols >= n_panels,
        }
        # No scaleanchor: it would shrink each panel inside its cell, away from its title;
        # the height below keeps cells near square at a typical width instead.
        layout[f"yaxis{sx}"] = {
            **axis,
            "domain": yd,
            "anchor": f"x{sx}",
            "autorange": "reversed",
            "showticklabels": c == 0,
        }
        annotations.append(panel_title(titles[i], xd, yd))
    if shared_scale:
        layout["coloraxis"] = {
            "cmin": 0.0,
            "cmax": 1.0,
            "colorscale": pattern_colorscale(),
            "colorbar": {"title": {"text": "weight"}, "thickness": 12},
        }
    layout.update(
        # ~900 px wide: a panel is ~0.8 * 900 / cols px wide; rows get that plus title/ticks
        height=rows * int(720 / cols + 60) + 60,
        # room for the labels from the start: no second layout pass (see labels.axis_margin)
        margin={
            "l": axis_margin(axis, title=False),
            "r": COLORAXIS_BAR_PX if shared_scale else 10,
            "t": 40,
            "b": axis_margin(axis, title=False),
        },
        meta={"block": block, "n_pos": n, "shared_scale": shared_scale},
    )
    return go.Figure({"data": data, "layout": layout})


def head_metrics_figure(metrics: Mapping[str, npt.ArrayLike], metric: str) -> go.Figure:
    """Heatmap of ``metrics[metric]`` [layer, head_index]; the hover names layer, head and value.

    ``metrics`` is :func:`tformer.analysis.head_metrics`'s output (or any mapping of
    [layer, head_index] arrays); ``metric`` must be one of its keys. Sequential colors for
    metrics that are never negative, diverging around 0 otherwise. With at most 144 heads the
    value is also written in each cell.
    """
    if metric not in metrics:
        raise ValueError(f"metric {metric!r} is not one of {sorted(metrics)}")
    a = as_float32(metrics[metric], 2, f"metrics[{metric!r}]", "[layer, head_index]")
    n_layers, n_heads = a.shape
    if a.size == 0:
        raise ValueError(f"metrics[{metric!r}] has shape {tuple(a.shape)}: no heads")
    name = safe_label(metric)
    finite = a[np.isfinite(a)]
    lo = float(finite.min()) if finite.size else 0.0
    hi = float(finite.max()) if finite.size else 1.0
    if lo < 0:
        m = symmetric_range(a)
        colors: dict[str, Any] = {"zmin": -m, "zmax": m, "zmid": 0.0, "colorscale": DIVERGING}
    else:
        colors = {"zmin": lo, "zmax": hi if hi > lo else lo + 1.0, "colorscale": SEQUENTIAL}
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": a,
        # x is the head index, y the layer (plotly's default 0..n-1: nothing sent)
        "hovertemplate": "layer %{y}, head %{x}<br>" + name + " %{z:.4g}<extra></extra>",
        "xgap": 1,
        "ygap": 1,
        "colorbar": {"title": {"text": name}, "thickness": 12},
        **colors,
    }
    if a.size <= 144:
        heat.update(texttemplate="%{z:.2f}", textfont={"size": 10})
    layout = {
        "height": n_layers * 40 + 120,
        "margin": {
            "l": axis_margin({"ticktext": [str(n_layers - 1)]}),
            "r": COLORBAR_PX,
            "t": 30,
            "b": axis_margin({"ticktext": [str(n_heads - 1)]}),
        },
        "xaxis": {
            "title": {"text": "head_index"},
            "tickmode": "array",
            "tickvals": list(range(n_heads)),
            "showgrid": False,
            "zeroline": False,
            "range": [-0.5, n_heads - 0.5],
        },
        "yaxis": {
            "title": {"text": "layer"},
            "tickmode": "array",
            "tickvals": list(range(n_layers)),
            "showgrid": False,
            "zeroline": False,
            "range": [n_layers - 0.5, -0.5],
        },
        "meta": {"metric": metric},
    }
    return go.Figure({"data": [heat], "layout": layout})


def head_similarity_heatmap(sim: npt.ArrayLike, labels: Sequence[str]) -> go.Figure:
    """Pairwise values of n heads ``sim`` [n, n] (e.g. cosine of their patterns), labels on both
    axes (escaped here, shown as ``"i: label"`` in the hover so repeated labels stay apart).

    Diverging around 0, fixed to -1..1 when every value lies there (cosine, correlation,
    or a divergence in [0, 1] such as :func:`tformer.analysis.js_divergence_matrix`'s),
    symmetric over the values otherwise. The colorbar and hover call the value "similarity".
    """
    s = as_float32(sim, 2, "sim", "[n, n] (head x head)")
    n = len(labels)
    if s.shape != (n, n):
        raise ValueError(f"sim has shape {tuple(s.shape)} but {n} labels were given (expected ({n}, {n}))")
    if n == 0:
        raise ValueError("sim has shape (0, 0): at least one head is needed")
    m = symmetric_range(s)
    m = 1.0 if m <= 1.0 else m
    names = token_labels(labels)  # "i: label": unique even if two labels repeat
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": "similarity",
        "z": s,
        "x": names,
        "y": names,
        "zmin": -m,
        "zmax": m,
        "zmid": 0.0,
        "colorscale": DIVERGING,
        "hovertemplate": "%{y}<br>%{x}<br>similarity %{z:.4g}<extra></extra>",
        "colorbar": {"title": {"text": "similarity"}, "thickness": 12},
    }
    axis = token_axis(labels)
    layout: dict[str, Any] = {
        "height": min(640, max(240, 22 * n)) + 140,
        "margin": {
            "l": axis_margin(axis, title=False),
            "r": COLORBAR_PX,
            "t": 20,
            "b": axis_margin(axis, title=False),
        },
        "xaxis": {**axis, "constrain": "domain"},
        "yaxis": {**axis, "autorange": "reversed", "scaleanchor": "x", "constrain": "domain"},
    }
    return go.Figure({"data": [heat], "layout": layout})


def ablation_effect_figure(
    delta: npt.ArrayLike, tokens: Sequence[object], title: str | None = None
) -> go.Figure:
    """Bars per position: how much each token's output changed (``delta`` [pos]).

    Typically :func:`tformer.analysis.output_change`, the relative change
    ``||out_ablated[pos] - out[pos]|| / ||out[pos]||``; signed values are allowed (negative bars
    in blue). ``title`` is shown as given (escape user text with ``safe_label``).
    """
    d = as_float32(delta, 1, "delta", "[pos]")
    check_tokens(tokens, d.shape[0], "delta", tuple(d.shape))
    if d.shape[0] == 0:
        raise ValueError("delta has shape (0,): at least one token is needed")
    bars: dict[str, Any] = {
        "type": "bar",
        "name": "change",
        "x": token_labels(tokens),
        "y": d,
        "marker": {"color": np.where(d < 0, "#2166ac", "#b2182b").tolist() if (d < 0).any() else "#b2182b"},
        "hovertemplate": "pos %{x}<br>change %{y:.4g}<extra></extra>",
    }
    axis = token_axis(tokens)
    layout: dict[str, Any] = {
        "height": 320 + axis_margin(axis),
        # room for the labels from the start (value labels: at most ~7 characters, "-0.0123")
        "margin": {
            "l": axis_margin({"ticktext": ["-0.0000"]}),
            "r": 10,
            "t": 50 if title else 20,
            "b": axis_margin(axis),
        },
        "xaxis": {**axis, "title": {"text": "pos"}},
        "yaxis": {"title": {"text": "change"}, "zeroline": True},
        "bargap": 0.15,
    }
    if title:
        layout["title"] = {"text": title}
    return go.Figure({"data": [bars], "layout": layout})
