r"""The encoder layer by layer: the FFN's activations, the sublayers' sizes, LayerNorm.

- :func:`ffn_activations_figure`: ``mlp_pre`` and ``mlp_post`` [pos, d_mlp] side by side;
- :func:`sublayer_norms_figure`: ‖x‖, ‖attn_out‖ and ‖mlp_out‖ per token, and their ratios
  per layer;
- :func:`layernorm_figure`: μ and σ per token, and each token's values before and after a
  LayerNorm.

The encoder as a whole, drawn as boxes and arrows, is :mod:`.architecture`; these figures take
its text colors and mark attention and the FFN in the hues of its boxes.

Inputs are numpy arrays and plain objects: the builders read the fields of
``tformer.analysis.layer_stats.SublayerNorms`` by name (:class:`SublayerNormsLike`), so this module
does not import it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .architecture import INK, MUTED
from .checks import Float32Array, as_float32, check_tokens
from .colors import HIGHLIGHT, NOTE_INK, PART_LINE, RULE, SPREAD, robust_symmetric
from .labels import (
    AXIS_TITLE_PX,
    LABEL_ALL,
    axis_title,
    block_labels,
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
    PANEL_GAP_PX,
    PANEL_TITLE_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    colorbar,
    colorbar_px,
    figure_title,
    panel_title,
    px_domain,
)
from .pooling import pool_plan

# Line and bar colors: gray for the residual stream, orange for attention and blue for the FFN
# (the hues of the architecture diagram's boxes); blue and orange for before and after a
# LayerNorm, gray and purple for its mean and spread.
RESID_COLOR = PART_LINE["resid"]
ATTN_COLOR = PART_LINE["attn"]
MLP_COLOR = PART_LINE["mlp"]
BEFORE_COLOR = PART_LINE["mlp"]
AFTER_COLOR = PART_LINE["attn"]
MEAN_COLOR = NOTE_INK
SIGMA_COLOR = SPREAD


def share_text(share: float) -> str:
    """A share as a whole percentage; "<1%" and ">99%" where rounding would say 0 or 100."""
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{share:.0%}"


# =============================================================================================
# FFN activations before and after the nonlinearity
# =============================================================================================
# Cells per panel sent at most: 512 tokens x 1536 units would be 3 MB of float32 per panel.
FFN_MAX_CELLS = 1 << 16
FFN_MAX_ROWS = 256
FFN_MIN_ROW_PX = 18  # rows this tall while they fit FFN_LONG_PX: room for upright CJK labels
FFN_LONG_PX = 560  # the tallest plot (beyond 31 tokens rows get thinner, labels stagger or thin)


def signed_absmax_pool(a: Float32Array, rows: int, cols: int) -> Float32Array:
    """Per block of ``rows x cols`` cells, the entry of largest magnitude, sign kept (the last
    blocks may be short). A block is 0 only when every entry in it is 0."""
    out = a
    for axis, block in ((0, rows), (1, cols)):
        if block == 1:
            continue
        n = out.shape[axis]
        pad = (-n) % block
        widths = [(0, 0), (0, 0)]
        widths[axis] = (0, pad)
        padded = np.pad(out, widths)  # zeros never win a max-abs unless the block is all zero
        shape = list(padded.shape)
        shape[axis : axis + 1] = [shape[axis] // block, block]
        blocks = padded.reshape(shape)
        pick = np.abs(blocks).argmax(axis=axis + 1)
        out = np.take_along_axis(blocks, np.expand_dims(pick, axis + 1), axis=axis + 1).squeeze(axis + 1)
    return np.ascontiguousarray(out, dtype=np.float32)


def ffn_pool_plan(n_pos: int, d_ff: int) -> tuple[int, int]:
    """(rows, columns) pooled per cell so one panel holds at most ``FFN_MAX_CELLS`` cells:
    rows above 256 tokens first, then units."""
    row_block = pool_plan(n_pos, FFN_MAX_ROWS)
    n_rows = math.ceil(n_pos / row_block)
    col_block = pool_plan(d_ff, max(1, FFN_MAX_CELLS // n_rows))
    return row_block, col_block


def _fit_title(text: str, room: float) -> dict[str, Any]:
    """Panel title font: 15 px, or down to 12 px when the text would be wider than ``room``."""
    plain = html.unescape(text.replace("<sub>", "").replace("</sub>", ""))
    for size in (PANEL_TITLE_PX, 14, 13, 12):
        if text_px(plain, size) <= room:
            return {"size": size}
    return {"size": 12}


def ffn_activations_figure(
    before: npt.ArrayLike,
    after: npt.ArrayLike,
    row_labels: Sequence[object],
    *,
    highlight: int | None = None,
    activation: str | None = None,
    tol: float = 1e-2,
    zero_share: float | None = None,
    near_zero_share: float | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    r"""The FFN's hidden layer for one layer: ``mlp_pre`` (h = xW₁ + b₁) and ``mlp_post`` (act(h)).

    Two heatmaps side by side, [pos, d_mlp] each, one row per token (pos 0 on top), sharing one
    diverging color axis centred at 0 (white = 0, so the units the nonlinearity switched off are
    white on the right), symmetric over both panels or clipped at the 99th percentile of the
    magnitudes when a few outliers are larger (``layout.meta["color"]``).

    The titles give the share of h ≤ 0 (left) and the shares of exact zeros and of |a| < ``tol``
    (right), computed at full resolution here unless ``zero_share`` / ``near_zero_share`` are
    passed (e.g. from ``tformer.analysis.layer_stats.ffn_sparsity``). ``activation`` ("relu", "gelu")
    names the nonlinearity in the title.

    Payload: a panel holds at most 65,536 cells. Above that, cells keep the value of largest
    magnitude (sign kept) of a block of units (and of 2+ tokens above 256 tokens), which the axis
    titles say; a pooled cell is 0 only if every value in it is. ``highlight``: a token
    position, outlined in both panels. Sized for a column ``width`` px wide (default 940).
    """
    h = as_float32(before, 2, "before", "[pos, d_mlp]")
    a = as_float32(after, 2, "after", "[pos, d_mlp]")
    if h.shape != a.shape:
        raise ValueError(f"before has shape {tuple(h.shape)} but after has shape {tuple(a.shape)}")
    n, d_ff = a.shape
    check_tokens(row_labels, n, "before", tuple(h.shape))
    if n == 0 or d_ff == 0:
        raise ValueError(f"before has shape {tuple(h.shape)}: at least one token and one unit are needed")
    if highlight is not None and not 0 <= highlight < n:
        raise ValueError(f"highlight={highlight} is not a position of the {n} tokens")
    if not tol > 0:
        raise ValueError(f"tol={tol!r} must be > 0")
    zero = float((a == 0).mean()) if zero_share is None else float(zero_share)
    near = float((np.abs(a) < tol).mean()) if near_zero_share is None else float(near_zero_share)
    inactive = float((h <= 0).mean())

    row_block, col_block = ffn_pool_plan(n, d_ff)
    panels = [signed_absmax_pool(m, row_block, col_block) for m in (h, a)]
    n_cols = panels[0].shape[1]
    # each cell sits at the centre of the units it pools, so the axis reads in unit indices
    x = (np.arange(n_cols, dtype=np.float32) * col_block + (min(col_block, d_ff) - 1) / 2).astype(np.float32)
    if col_block > 1:
        x[-1] = (n_cols - 1) * col_block + (d_ff - 1 - (n_cols - 1) * col_block) / 2
    scale = robust_symmetric(np.concatenate([h.ravel(), a.ravel()]))
    ticks = scale.colorbar_ticks()
    r = colorbar_px(ticks["ticktext"])
    plot_h = min(FFN_LONG_PX, max(240, FFN_MIN_ROW_PX * n)) if n <= LABEL_ALL else FFN_LONG_PX
    step = tick_step(row_labels, [("y", plot_h)], block=row_block)
    y_title = tr("token") if row_block == 1 else tr("token (rows of {block})", block=row_block)
    y_axis = token_axis(row_labels, plot_h, "y", step=step, block=row_block, title=y_title)
    margin = {"l": y_axis.margin, "r": r, "t": TOP_PANEL_TITLE_PX + 6, "b": x_numeric_margin()}
    paper_w = width - margin["l"] - margin["r"]
    panel_w = (paper_w - PANEL_GAP_PX) / 2
    names = block_labels(row_labels, row_block)
    act = {"relu": "ReLU", "gelu": "GELU"}.get(activation or "", activation or "")
    act_name = safe_label(act) if act else tr("the nonlinearity")
    titles = (
        tr(
            "before {act}: h = xW<sub>1</sub> + b<sub>1</sub>, {share} \u2264 0",
            act=act_name,
            share=share_text(inactive),
        ),
        tr(
            "after {act}: {zero} zeros, {near} |a| < {tol}",
            act=act_name,
            zero=share_text(zero),
            near=share_text(near),
            tol=f"{tol:g}",
        ),
    )
    unit_title = tr("FFN unit (d_ff = {d_ff})", d_ff=d_ff)
    if col_block > 1:
        unit_title = tr("FFN unit, max |value| of {block} per column", block=col_block)
    hover_head = tr("token") + " %{y}<br>" + tr("unit") + " %{x}<br>"
    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    for i, (z, name) in enumerate(zip(panels, ("h (mlp_pre)", "a (mlp_post)"), strict=True)):
        sx = "" if i == 0 else "2"
        x0 = i * (panel_w + PANEL_GAP_PX)
        xd, yd = px_domain(x0, x0 + panel_w, 0, plot_h, paper_w, plot_h)
        data.append(
            {
                "type": "heatmap",
                "name": name,
                "z": z,
                "x": x,
                "y": names,
                "coloraxis": "coloraxis",
                "xaxis": f"x{sx}",
                "yaxis": f"y{sx}",
                "hovertemplate": hover_head + name + " %{z:.3g}<extra></extra>",
            }
        )
        layout[f"xaxis{sx}"] = {
            "domain": xd,
            "anchor": f"y{sx}",
            "title": axis_title(unit_title),
            "tickfont": {"size": 12},
            "ticks": "",
            "showgrid": False,
            "zeroline": False,
            "nticks": 5,
            "range": [-0.5, d_ff - 0.5],
        }
        layout[f"yaxis{sx}"] = {**y_axis.props, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
        if i:
            layout["yaxis2"].update(matches="y", showticklabels=False, title=None)
        title = panel_title(titles[i], xd, yd)
        title["font"] = _fit_title(titles[i], panel_w + PANEL_GAP_PX - 4)
        annotations.append(title)
        if highlight is not None:
            row = highlight // row_block
            shapes.append(
                {
                    "type": "rect",
                    "name": f"highlight.{i}",
                    "xref": f"x{sx} domain",
                    "yref": f"y{sx}",
                    "x0": 0,
                    "x1": 1,
                    "y0": row - 0.5,
                    "y1": row + 0.5,
                    "line": {"color": HIGHLIGHT, "width": 2.5},
                    "fillcolor": "rgba(0,0,0,0)",
                }
            )
    layout.update(
        height=plot_h + margin["t"] + margin["b"],
        margin={**margin, "pad": 0},
        annotations=annotations,
        shapes=shapes,
        coloraxis={**scale.colors("c"), "colorbar": colorbar(tr("value"), ticks=ticks)},
        meta={
            "n_pos": n,
            "d_ff": d_ff,
            "block_rows": row_block,
            "block_cols": col_block,
            "zero_share": zero,
            "near_zero_share": near,
            "inactive_share": inactive,
            "tol": tol,
            "highlight": highlight,
            "tick_step": step,
            "width": width,
            "color": scale.meta(),
        },
    )
    return go.Figure({"data": data, "layout": layout})


# =============================================================================================
# Sublayer norms
# =============================================================================================
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
_LEGEND_PX = 30


def _token_x_axis(tokens: Sequence[object], width: int, margin_l: int) -> tuple[dict[str, Any], int, int]:
    """A token x axis filling ``width`` minus ``margin_l`` and the right margin its last flat
    label needs (it may hang past the axis's end): (axis props, px its labels take below the
    axis, right margin)."""
    margin_r = EDGE_PX
    for _ in range(3):
        plot_w = width - margin_l - margin_r
        step = tick_step(tokens, [("x", plot_w)])
        axis = token_axis(tokens, plot_w, "x", step=step, title=tr("token"))
        last = html.unescape(str(axis.props["ticktext"][-1]).split("<br>")[-1])
        need = math.ceil(text_px(last, axis.font)) if axis.angle == 0 else EDGE_PX
        if need <= margin_r:
            break
        margin_r = need
    return axis.props, axis.margin, margin_r


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
    x_props, x_labels_px, margin_r = _token_x_axis(labels, width, margin_l)
    top_h, bottom_h = 250, 190
    gap = x_labels_px + TOP_PANEL_TITLE_PX + 8
    plot_h = top_h + gap + bottom_h
    margin = {"l": margin_l, "r": margin_r, "t": _LEGEND_PX + TOP_PANEL_TITLE_PX, "b": x_numeric_margin()}
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
        "legend": _top_legend(),
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


def _top_legend() -> dict[str, Any]:
    """A one-row legend at the figure's top left, above the first panel's title."""
    return {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "yref": "container",
        "font": {"size": 13},
    }


# =============================================================================================
# LayerNorm: mean and spread, values before and after
# =============================================================================================
MAX_LN_TOKENS = 64  # box plots per token: the caller shows a window of a long text


# Box whiskers: these percentiles of a token's values. Min and max would let one outlier
# dimension (BERT's LayerNorm inputs have a few of 10-20x the rest) set the axis and squash
# every box into a line; the hover of the box still gives quartiles and whisker ends.
WHISKERS = (5, 95)


def _box_stats(m: Float32Array) -> dict[str, Float32Array]:
    """Precomputed box statistics per row: quartiles, and the WHISKERS percentiles as fences."""
    lo, q1, med, q3, hi = np.percentile(m, [WHISKERS[0], 25, 50, 75, WHISKERS[1]], axis=1)
    return {
        "q1": q1.astype(np.float32),
        "median": med.astype(np.float32),
        "q3": q3.astype(np.float32),
        "lowerfence": lo.astype(np.float32),
        "upperfence": hi.astype(np.float32),
    }


def layernorm_figure(
    before: npt.ArrayLike,
    after: npt.ArrayLike,
    mean: npt.ArrayLike,
    sigma: npt.ArrayLike,
    labels: Sequence[object],
    *,
    highlight: int | None = None,
    after_name: str | None = None,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    r"""What a LayerNorm does to each token, for up to 64 tokens (slice a window of a long text).

    Top: μ and σ per token (grouped bars) of the values entering the LayerNorm. Bottom: each
    token's d_model values before (``before`` [pos, d_model], blue) and after (``after``
    [pos, d_model], orange: the normalised values, or the output with γ and β; ``after_name``
    says which) as box plots on one axis: the box spans the quartiles, the line is the median,
    the whiskers reach the smallest and largest value. Only these five numbers per box are sent.
    ``mean`` and ``sigma`` are [pos] or [pos, 1] (``tformer.analysis.layer_stats.layernorm_stats`` or
    the ``ln*_scale`` hook). ``highlight``: a token position, shaded in both panels.

    .. math::
        \mu = \frac{1}{d}\sum_i x_i,\qquad \sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i-\mu)^2
        + \varepsilon},\qquad \hat x_i = \frac{x_i - \mu}{\sigma}
    """
    x = as_float32(before, 2, "before", "[pos, d_model]")
    y = as_float32(after, 2, "after", "[pos, d_model]")
    if x.shape != y.shape:
        raise ValueError(f"before has shape {tuple(x.shape)} but after has shape {tuple(y.shape)}")
    n, d_model = x.shape
    check_tokens(labels, n, "before", tuple(x.shape))
    if n == 0 or d_model == 0:
        raise ValueError(f"before has shape {tuple(x.shape)}: at least one token and one value are needed")
    if n > MAX_LN_TOKENS:
        raise ValueError(
            f"before has shape {tuple(x.shape)}: at most {MAX_LN_TOKENS} tokens fit this figure; "
            "pass a window of the text"
        )
    stats = []
    for name, v in (("mean", mean), ("sigma", sigma)):
        arr = np.asarray(v)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        s = as_float32(arr, 1, name, "[pos] or [pos, 1]")
        if s.shape != (n,):
            raise ValueError(
                f"{name} has shape {tuple(np.shape(v))} but {n} tokens were given (expected ({n},))"
            )
        stats.append(s)
    if highlight is not None and not 0 <= highlight < n:
        raise ValueError(f"highlight={highlight} is not a position of the {n} tokens")

    margin_l = numeric_axis_margin("\u22120.00")
    x_props, x_labels_px, margin_r = _token_x_axis(labels, width, margin_l)
    top_h, bottom_h = 170, 300
    gap = TOP_PANEL_TITLE_PX + 10  # the top panel's token labels are not drawn
    plot_h = top_h + gap + bottom_h
    top_px = _LEGEND_PX + TOP_PANEL_TITLE_PX + (TOP_TITLE_PX if title else 0)
    margin = {"l": margin_l, "r": margin_r, "t": top_px, "b": x_labels_px}
    paper_w = width - margin["l"] - margin["r"]
    top_d = px_domain(0, paper_w, 0, top_h, paper_w, plot_h)
    bot_d = px_domain(0, paper_w, top_h + gap, plot_h, paper_w, plot_h)
    names = token_labels(labels)
    after_label = safe_label(tr("after: (x \u2212 \u03bc) / \u03c3") if after_name is None else after_name)
    lo, hi = WHISKERS
    note = tr("box: middle half \u00b7 whiskers: {lo}th\u2013{hi}th pct", lo=lo, hi=hi)
    if text_px(note, 12) > paper_w / 2 - 30:  # keep clear of the centred axis title
        note = tr("whiskers: {lo}th\u2013{hi}th pct", lo=lo, hi=hi)
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": tr("\u03bc (mean)"),
            "x": names,
            "y": stats[0],
            # markers, not bars: mu is often near 0, where a bar would be invisible
            "marker": {
                "color": MEAN_COLOR,
                "symbol": "diamond",
                "size": 10,
                "line": {"color": "white", "width": 1},
            },
            "xaxis": "x",
            "yaxis": "y",
            "hovertemplate": tr("token") + " %{x}<br>\u03bc %{y:.4g}<extra></extra>",
        },
        {
            "type": "bar",
            "name": tr("\u03c3 (spread)"),
            "x": names,
            "y": stats[1],
            "marker": {"color": SIGMA_COLOR},
            "width": 0.5,
            # its own alignment group: the x axes are matched, and plotly would otherwise make
            # room for the boxes' two offset groups beside the bar
            "alignmentgroup": "top",
            "offsetgroup": "sigma",
            "xaxis": "x",
            "yaxis": "y",
            "hovertemplate": tr("token") + " %{x}<br>\u03c3 %{y:.4g}<extra></extra>",
        },
    ]
    for name, m, color in ((tr("before: x"), x, BEFORE_COLOR), (after_label, y, AFTER_COLOR)):
        data.append(
            {
                "type": "box",
                "name": name,
                "x": names,
                **_box_stats(m),
                "xaxis": "x2",
                "yaxis": "y2",
                "offsetgroup": name,
                "alignmentgroup": "bottom",
                "marker": {"color": color},
                "line": {"color": color, "width": 1.5},
                "whiskerwidth": 0.6,
            }
        )
    shapes: list[dict[str, Any]] = []
    if highlight is not None:
        shapes = [
            {
                "type": "rect",
                "name": f"highlight.{yd.split()[0]}",
                "xref": "x" if yd.startswith("y ") else "x2",
                "yref": yd,
                "x0": highlight - 0.5,
                "x1": highlight + 0.5,
                "y0": 0,
                "y1": 1,
                "fillcolor": "rgba(255,75,75,0.13)",
                "line": {"width": 0},
                "layer": "below",
            }
            for yd in ("y domain", "y2 domain")
        ]
    numeric = {"tickfont": {"size": 12}, "ticks": "", "zeroline": True, "zerolinecolor": RULE}
    layout: dict[str, Any] = {
        "height": plot_h + margin["t"] + margin["b"],
        "margin": {**margin, "pad": 0},
        "barmode": "group",
        "boxmode": "group",
        "bargap": 0.25,
        "boxgap": 0.25,
        "xaxis": {
            **x_props,
            "domain": top_d[0],
            "anchor": "y",
            "matches": "x2",
            "showticklabels": False,
            "title": None,
        },
        "yaxis": {**numeric, "domain": top_d[1], "anchor": "x", "title": axis_title("\u03bc, \u03c3")},
        "xaxis2": {**x_props, "domain": bot_d[0], "anchor": "y2"},
        "yaxis2": {**numeric, "domain": bot_d[1], "anchor": "x2", "title": axis_title(tr("value"))},
        "legend": _top_legend(),
        "annotations": [
            panel_title(tr("mean \u03bc and spread \u03c3 of each token's values"), *top_d),
            panel_title(
                tr("each token's {d_model} values before and after the LayerNorm", d_model=d_model), *bot_d
            ),
            # under the plot, right-aligned on the line of the x axis title ("token", centred)
            {
                "name": "box.note",
                "text": note,
                "x": 1,
                "y": 0,
                "xref": "paper",
                "yref": "paper",
                "xanchor": "right",
                "yanchor": "middle",
                "yshift": -(x_labels_px - AXIS_TITLE_PX / 2),
                "showarrow": False,
                "font": {"size": 12, "color": MUTED},
            },
        ],
        "shapes": shapes,
        "meta": {
            "n_pos": n,
            "d_model": d_model,
            "highlight": highlight,
            "whiskers": f"{WHISKERS[0]}th and {WHISKERS[1]}th percentile",
            "width": width,
        },
    }
    if title:
        layout["title"] = figure_title(title)
    return go.Figure({"data": data, "layout": layout})
