r"""How large each sublayer's output is next to the residual stream it adds to.

:func:`sublayer_norms_figure`: ‖x‖, ‖attn_out‖ and ‖mlp_out‖ per token for one layer, and
their ratios per layer. Attention and the FFN are drawn in the hues of their boxes in the
architecture diagram (:mod:`.architecture`), the residual stream in gray.

The builder reads a ``tformer.analysis.layer_stats.SublayerNorms``, named for the type checker
only, so drawing it loads no core module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32, check_tokens
from .colors import INK, PART_LINE
from .labels import axis_title, numeric_axis_margin, text_px, token_labels, x_numeric_margin
from .layout import FULL_WIDTH, TOP_PANEL_TITLE_PX, base_layout, panel_title, px_domain
from .token_panels import CORNER_LEGEND_PX, corner_legend, fitted_token_x_axis

if TYPE_CHECKING:
    from ..analysis.layer_stats import SublayerNorms

# Gray for the residual stream, orange for attention and blue for the FFN.
RESID_COLOR = PART_LINE["resid"]
ATTN_COLOR = PART_LINE["attn"]
MLP_COLOR = PART_LINE["mlp"]


# Trace names (English; shown through `tr`).
NORM_NAMES = ("\u2016x\u2016 block input", "\u2016attention out\u2016", "\u2016FFN out\u2016")
RATIO_NAMES = ("\u2016attention out\u2016 / \u2016x\u2016", "\u2016FFN out\u2016 / \u2016x\u2016")
RATIO_LABELS = ("attention", "FFN")  # English: the annotations' names; their text is translated
BARS_UP_TO = 64  # grouped bars up to this many tokens, lines beyond
_COLORS = (RESID_COLOR, ATTN_COLOR, MLP_COLOR)  # x, attention, FFN
_BARGAP = 0.2
_TOP_H, _BOTTOM_H = 250, 190  # px of the per-token and the per-layer panel


@dataclass(frozen=True)
class _NormsGrid:
    """Where the two panels sit: the shared token axis, the margins, the panels' domains."""

    x_props: dict[str, Any]  # the top panel's token x axis
    margin: dict[str, int]  # l, r, t, b
    plot_h: int
    paper_w: int
    top_d: tuple[list[float], list[float]]  # (x domain, y domain) of the per-token panel
    bot_d: tuple[list[float], list[float]]  # ... of the per-layer panel


def sublayer_norms_figure(
    norms: SublayerNorms, labels: Sequence[object], *, layer: int, width: int = FULL_WIDTH
) -> go.Figure:
    r"""How large each sublayer's output is next to the residual stream, in two panels.

    Top: for ``layer``, per token, the L2 norms ‖x‖ (the block's input, ``resid_pre``),
    ‖attn_out‖ and ‖mlp_out‖ (grouped bars up to 64 tokens, lines beyond). Bottom: per layer,
    the mean over tokens of ‖attn_out‖/‖x‖ and ‖mlp_out‖/‖x‖ (lines with markers), the chosen
    layer shaded. ``norms`` is ``tformer.analysis.layer_stats.sublayer_norms(...)``; ``labels`` are the
    tokens (escaped here). Colors: gray for x, orange for attention, blue for the FFN, as in
    the architecture diagram.

    .. math::
        r^{\text{attn}} = \frac{\|\mathrm{MultiHead}(x)\|}{\|x\|},\qquad
        r^{\text{FFN}} = \frac{\|\mathrm{FFN}\|}{\|x\|}
    """
    per_token, ratios = _checked_norms(norms, labels, layer)  # [3, pos], 2 x [layer]
    n, n_layers = len(labels), len(ratios[0])
    grid = _norms_grid(labels, width)
    limit, clipped = _clip_limit(per_token)
    bars = n <= BARS_UP_TO
    meta = {"n_pos": n, "n_layers": n_layers, "layer": layer, "bars": bars, "clipped": clipped}
    m = grid.margin
    layout = base_layout(
        grid.plot_h, width=width, left=m["l"], right=m["r"], top=m["t"], bottom=m["b"],
        meta={**meta, "y_limit": limit if clipped else None},
        barmode="group", bargap=_BARGAP, legend=corner_legend(), shapes=[_layer_band(layer)],
    )  # fmt: skip
    names = token_labels(labels)
    data = _norm_traces(per_token, names, bars)
    annotations = _cut_labels(per_token, names, limit, grid.paper_w) if bars and clipped else []
    ratio_traces, ratio_labels, x2_range, y2_max = _ratio_traces(ratios, grid.paper_w)
    data += ratio_traces
    layout["annotations"] = [
        *annotations,
        *ratio_labels,
        panel_title(tr("layer {layer}: size of each token's vectors", layer=layer), *grid.top_d),
        panel_title(tr("every layer: mean size relative to the block input \u2016x\u2016"), *grid.bot_d),
    ]
    layout |= _norms_axes(grid, limit if clipped else None, n_layers, x2_range, y2_max)
    return go.Figure({"data": data, "layout": layout})


def _checked_norms(
    norms: SublayerNorms, labels: Sequence[object], layer: int
) -> tuple[Float32Array, list[Float32Array]]:
    """The three norms of ``layer`` per token, [3, pos] (x, attention, FFN), and the two mean
    ratios per layer, once every shape is checked against each other and the labels."""
    arrays = [
        as_float32(getattr(norms, f), 2, f"norms.{f}", "[layer, pos]")
        for f in ("resid_pre", "attn_out", "mlp_out")
    ]
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(
            "norms.resid_pre, attn_out and mlp_out must share one shape [layer, pos], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    n_layers, n = arrays[0].shape
    check_tokens(labels, n, "norms.resid_pre", tuple(arrays[0].shape))
    if n == 0 or n_layers == 0:
        raise ValueError(f"norms.resid_pre has shape {tuple(arrays[0].shape)}: no layer or no token")
    ratios = [
        as_float32(getattr(norms, f), 1, f"norms.{f}", "[layer]")
        for f in ("attn_ratio_mean", "mlp_ratio_mean")
    ]
    for f, r in zip(("attn_ratio_mean", "mlp_ratio_mean"), ratios, strict=True):
        if r.shape != (n_layers,):
            raise ValueError(f"norms.{f} has shape {tuple(r.shape)}, expected ({n_layers},) [layer]")
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer={layer} is not one of the {n_layers} layers (0..{n_layers - 1})")
    return np.stack([a[layer] for a in arrays]), ratios


def _norms_grid(labels: Sequence[object], width: int) -> _NormsGrid:
    """The token x axis under the top panel, the margins it and the legend need, and the two
    panels' domains: the per-token panel on top, its token labels and the second title below."""
    margin_l = numeric_axis_margin("0.000")
    x_props, x_labels_px, margin_r, _ = fitted_token_x_axis(labels, width, margin_l)
    gap = x_labels_px + TOP_PANEL_TITLE_PX + 8
    plot_h = _TOP_H + gap + _BOTTOM_H
    margin = {
        "l": margin_l,
        "r": margin_r,
        "t": CORNER_LEGEND_PX + TOP_PANEL_TITLE_PX,
        "b": x_numeric_margin(),
    }
    paper_w = width - margin["l"] - margin["r"]
    top_d = px_domain(0, paper_w, 0, _TOP_H, paper_w, plot_h)
    bot_d = px_domain(0, paper_w, _TOP_H + gap, plot_h, paper_w, plot_h)
    return _NormsGrid(x_props, margin, plot_h, paper_w, top_d, bot_d)


def _norm_traces(per_token: Float32Array, names: list[str], bars: bool) -> list[dict[str, Any]]:
    """‖x‖, ‖attention out‖ and ‖FFN out‖ per token on the top panel: grouped bars, or lines."""
    data: list[dict[str, Any]] = []
    for i, (english, color) in enumerate(zip(NORM_NAMES, _COLORS, strict=True)):
        name = tr(english)
        trace: dict[str, Any] = {
            "name": name,
            "x": names,
            "y": np.ascontiguousarray(per_token[i]),
            "xaxis": "x",
            "yaxis": "y",
            "hovertemplate": tr("token") + " %{x}<br>" + name + " %{y:.3g}<extra></extra>",
        }
        if bars:
            trace.update(type="bar", marker={"color": color})
        else:
            trace.update(type="scatter", mode="lines", line={"color": color, "width": 1.6})
        data.append(trace)
    return data


def _cut_labels(
    per_token: Float32Array, names: list[str], limit: float, paper_w: int
) -> list[dict[str, Any]]:
    """The value of each bar cut at the axis's top ``limit``, written at the top of its bar."""
    bar_px = paper_w / per_token.shape[1] * (1 - _BARGAP) / len(NORM_NAMES)
    return [
        {
            "name": "cut",
            "text": f"{format_norm(float(per_token[i, j]))}\u2191",
            "x": names[j],
            "y": limit,
            "xref": "x",
            "yref": "y",
            "xshift": (i - 1) * bar_px,
            "yanchor": "top",
            "showarrow": False,
            "bgcolor": "rgba(255,255,255,0.85)",
            "font": {"size": 12, "color": INK},
        }
        for i in range(len(NORM_NAMES))
        for j in np.flatnonzero(per_token[i] > limit)
    ]


def _ratio_traces(
    ratios: list[Float32Array], paper_w: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float, float]:
    """The per-layer mean ratios on the bottom panel, each labelled at its last point (no second
    legend to look up): (traces, labels, room on the right in layers, the y axis's top)."""
    n_layers = len(ratios[0])
    stacked = np.stack(ratios)
    top_ratio = max(float(np.nanmax(stacked)) if np.isfinite(stacked).any() else 1.0, 1e-6)
    y2_max = top_ratio * 1.12
    label_px = max(text_px(tr(t), 13) for t in RATIO_LABELS) + 14
    extra = label_px * n_layers / max(paper_w - label_px, 1.0)  # layers' worth of room for labels
    ends = [float(r[-1]) if np.isfinite(r[-1]) else 0.0 for r in ratios]
    shifts = _label_shifts([e / y2_max * _BOTTOM_H for e in ends], 16)
    data: list[dict[str, Any]] = []
    labels: list[dict[str, Any]] = []
    for english, label, arr, color, end, shift in zip(
        RATIO_NAMES, RATIO_LABELS, ratios, _COLORS[1:], ends, shifts, strict=True
    ):
        name = tr(english)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "x": np.arange(n_layers),
                "y": arr,
                "xaxis": "x2",
                "yaxis": "y2",
                "showlegend": False,
                "line": {"color": color, "width": 2},
                "marker": {"color": color, "size": 9},
                "hovertemplate": tr("layer") + " %{x}<br>" + name + " %{y:.3g}<extra></extra>",
            }
        )
        labels.append(
            {
                "name": f"ratio.{label}",
                "text": tr(label),
                "x": n_layers - 1,
                "y": end,
                "xref": "x2",
                "yref": "y2",
                "xanchor": "left",
                "xshift": 10,
                "yshift": shift,
                "showarrow": False,
                "font": {"size": 13, "color": color},
            }
        )
    return data, labels, extra, y2_max


def _norms_axes(
    grid: _NormsGrid, limit: float | None, n_layers: int, extra: float, y2_max: float
) -> dict[str, Any]:
    """The four axes: tokens and L2 norms on top (cut at ``limit`` when given), layers and mean
    ratios below (``extra`` layers of room on the right for the line labels)."""
    numeric = {"tickfont": {"size": 12}, "ticks": "", "zeroline": True}
    y_top = {**numeric, "domain": grid.top_d[1], "anchor": "x", "title": axis_title(tr("L2 norm"))}
    if limit is not None:
        y_top["range"] = [0, limit]
    else:
        y_top["rangemode"] = "tozero"
    return {
        "xaxis": {**grid.x_props, "domain": grid.top_d[0], "anchor": "y"},
        "yaxis": y_top,
        "xaxis2": {
            "domain": grid.bot_d[0],
            "anchor": "y2",
            "title": axis_title(tr("layer")),
            "tickmode": "array",
            "tickvals": list(range(n_layers)),
            "tickfont": {"size": 13},
            "ticks": "",
            "showgrid": False,
            "zeroline": False,
            "range": [-0.5, n_layers - 0.5 + extra],
        },
        "yaxis2": {
            **numeric,
            "domain": grid.bot_d[1],
            "anchor": "x2",
            "title": axis_title(tr("mean ratio")),
            "range": [0, y2_max],
        },
    }


def _layer_band(layer: int) -> dict[str, Any]:
    """The gray band that marks ``layer`` on the per-layer panel."""
    return {
        "type": "rect",
        "name": "layer",
        "xref": "x2",
        "yref": "y2 domain",
        "x0": layer - 0.4,
        "x1": layer + 0.4,
        "y0": 0,
        "y1": 1,
        "fillcolor": "rgba(0,0,0,0.07)",
        "line": {"width": 0},
        "layer": "below",
    }


def format_norm(v: float) -> str:
    """A norm in 3 significant digits (whole numbers from 100)."""
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _clip_limit(values: npt.NDArray[np.floating]) -> tuple[float, bool]:
    """(y limit, clipped): one huge value (BERT's [CLS] FFN output can be 15x the rest) would
    flatten every other bar, so the axis stops at 2.5 x the 90th percentile when the largest
    value is beyond it by more than 15 %; the cut bars say their value."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return 1.0, False
    largest = float(finite.max())
    p90 = float(np.percentile(finite, 90))
    limit = 2.5 * p90
    if p90 > 0 and largest > 1.15 * limit:
        return limit, True
    return max(largest, 1e-6), False


def _label_shifts(ys: Sequence[float], min_gap: float) -> list[float]:
    """px shifts that keep end labels at heights ``ys`` (px) at least ``min_gap`` apart."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed: list[float] = [0.0] * len(ys)
    last = -math.inf
    for i in order:
        y = max(ys[i], last + min_gap)
        placed[i] = y
        last = y
    return [placed[i] - ys[i] for i in range(len(ys))]
