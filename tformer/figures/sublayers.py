r"""How large each sublayer's output is next to the residual stream it adds to.

:func:`sublayer_norms_figure`: ‖x‖, ‖attn_out‖ and ‖mlp_out‖ per token for one layer, and
their ratios per layer. Attention and the FFN are drawn in the hues of their boxes in the
architecture diagram (:mod:`.architecture`), the residual stream in gray.

The builder reads the fields of ``tformer.analysis.layer_stats.SublayerNorms`` by name
(:class:`SublayerNormsLike`), so this module does not import it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import as_float32, check_tokens
from .colors import INK, PART_LINE
from .labels import axis_title, numeric_axis_margin, text_px, token_labels, x_numeric_margin
from .layout import FULL_WIDTH, TOP_PANEL_TITLE_PX, panel_title, px_domain
from .token_panels import CORNER_LEGEND_PX, corner_legend, fitted_token_x_axis

# Gray for the residual stream, orange for attention and blue for the FFN.
RESID_COLOR = PART_LINE["resid"]
ATTN_COLOR = PART_LINE["attn"]
MLP_COLOR = PART_LINE["mlp"]


class SublayerNormsLike(Protocol):
    """The fields of ``tformer.analysis.layer_stats.SublayerNorms`` the figure reads."""

    @property
    def resid_pre(self) -> npt.NDArray[np.floating]: ...  # [layer, pos]
    @property
    def attn_out(self) -> npt.NDArray[np.floating]: ...  # [layer, pos]
    @property
    def mlp_out(self) -> npt.NDArray[np.floating]: ...  # [layer, pos]
    @property
    def attn_ratio_mean(self) -> npt.NDArray[np.floating]: ...  # [layer]
    @property
    def mlp_ratio_mean(self) -> npt.NDArray[np.floating]: ...  # [layer]


# Trace names (English; shown through `tr`).
NORM_NAMES = ("\u2016x\u2016 block input", "\u2016attention out\u2016", "\u2016FFN out\u2016")
RATIO_NAMES = ("\u2016attention out\u2016 / \u2016x\u2016", "\u2016FFN out\u2016 / \u2016x\u2016")
BARS_UP_TO = 64  # grouped bars up to this many tokens, lines beyond


def sublayer_norms_figure(
    norms: SublayerNormsLike, labels: Sequence[object], *, layer: int, width: int = FULL_WIDTH
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

    margin_l = numeric_axis_margin("0.000")
    x_props, x_labels_px, margin_r = fitted_token_x_axis(labels, width, margin_l)
    top_h, bottom_h = 250, 190
    gap = x_labels_px + TOP_PANEL_TITLE_PX + 8
    plot_h = top_h + gap + bottom_h
    margin = {
        "l": margin_l,
        "r": margin_r,
        "t": CORNER_LEGEND_PX + TOP_PANEL_TITLE_PX,
        "b": x_numeric_margin(),
    }
    paper_w = width - margin["l"] - margin["r"]
    top_d = px_domain(0, paper_w, 0, top_h, paper_w, plot_h)
    bot_d = px_domain(0, paper_w, top_h + gap, plot_h, paper_w, plot_h)
    names = token_labels(labels)
    bars = n <= BARS_UP_TO
    colors = (RESID_COLOR, ATTN_COLOR, MLP_COLOR)
    per_token = np.stack([a[layer] for a in arrays])  # [3, pos]
    limit, clipped = _clip_limit(per_token)
    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    for i, (english, color) in enumerate(zip(NORM_NAMES, colors, strict=True)):
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
        if bars and clipped:  # a cut bar says how tall it is
            bar_px = paper_w / n * (1 - _BARGAP) / len(NORM_NAMES)
            annotations.extend(
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
                for j in np.flatnonzero(per_token[i] > limit)
            )

    # the per-layer ratios, labelled at their last point (no second legend to look up)
    top_ratio = max(float(np.nanmax(np.stack(ratios))) if np.isfinite(np.stack(ratios)).any() else 1.0, 1e-6)
    y2_max = top_ratio * 1.12
    label_px = max(text_px(tr(t), 13) for t in RATIO_LABELS) + 14
    extra = label_px * n_layers / max(paper_w - label_px, 1.0)  # layers' worth of room for labels
    ends = [float(r[-1]) if np.isfinite(r[-1]) else 0.0 for r in ratios]
    shifts = _label_shifts([e / y2_max * bottom_h for e in ends], 16)
    for english, label, arr, color, end, shift in zip(
        RATIO_NAMES, RATIO_LABELS, ratios, colors[1:], ends, shifts, strict=True
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
        annotations.append(
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
    numeric = {"tickfont": {"size": 12}, "ticks": "", "zeroline": True}
    y_top = {**numeric, "domain": top_d[1], "anchor": "x", "title": axis_title(tr("L2 norm"))}
    if clipped:
        y_top["range"] = [0, limit]
    else:
        y_top["rangemode"] = "tozero"
    annotations += [
        panel_title(tr("layer {layer}: size of each token's vectors", layer=layer), *top_d),
        panel_title(tr("every layer: mean size relative to the block input \u2016x\u2016"), *bot_d),
    ]
    layout: dict[str, Any] = {
        "height": plot_h + margin["t"] + margin["b"],
        "margin": {**margin, "pad": 0},
        "barmode": "group",
        "bargap": _BARGAP,
        "xaxis": {**x_props, "domain": top_d[0], "anchor": "y"},
        "yaxis": y_top,
        "xaxis2": {
            "domain": bot_d[0],
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
            "domain": bot_d[1],
            "anchor": "x2",
            "title": axis_title(tr("mean ratio")),
            "range": [0, y2_max],
        },
        "legend": corner_legend(),
        "annotations": annotations,
        "shapes": [
            {
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
        ],
        "meta": {
            "n_pos": n,
            "n_layers": n_layers,
            "layer": layer,
            "bars": bars,
            "clipped": clipped,
            "y_limit": limit if clipped else None,
            "width": width,
        },
    }
    return go.Figure({"data": data, "layout": layout})


RATIO_LABELS = ("attention", "FFN")  # English: the annotations' names; their text is translated
_BARGAP = 0.2


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
