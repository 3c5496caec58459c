r"""What a LayerNorm does to each token: μ and σ per token, and the values before and after.

:func:`layernorm_figure` draws, for up to :data:`MAX_LN_TOKENS` tokens, each token's mean and
spread, and its d_model values before and after the LayerNorm as box plots (five numbers a box).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32, before_after, check_highlight
from .colors import MUTED_INK, NOTE_INK, PART_LINE, RULE, SPREAD
from .labels import AXIS_TITLE_PX, axis_title, numeric_axis_margin, safe_label, text_px, token_labels
from .layout import FULL_WIDTH, TOP_PANEL_TITLE_PX, TOP_TITLE_PX, base_layout, panel_title, px_domain
from .token_panels import CORNER_LEGEND_PX, corner_legend, fitted_token_x_axis

# Blue and orange for before and after the LayerNorm, gray and purple for its mean and spread.
BEFORE_COLOR = PART_LINE["mlp"]
AFTER_COLOR = PART_LINE["attn"]
MEAN_COLOR = NOTE_INK
SIGMA_COLOR = SPREAD
MAX_LN_TOKENS = 64  # box plots per token: the caller shows a window of a long text
_TOP_H, _BOTTOM_H = 170, 300  # px of the μ and σ panel and of the box plots


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


@dataclass(frozen=True)
class _LnGrid:
    """Where the two panels sit: the token x axis they share, the margins, their domains."""

    x_props: dict[str, Any]  # the token x axis (labelled under the bottom panel only)
    x_labels_px: int  # px the token labels and the axis title take under the plot
    margin: dict[str, int]  # l, r, t, b
    plot_h: int
    paper_w: int
    top_d: tuple[list[float], list[float]]  # (x domain, y domain) of the μ and σ panel
    bot_d: tuple[list[float], list[float]]  # ... of the box plots


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

    Top: μ and σ per token (a marker and a bar) of the values entering the LayerNorm. Bottom: each
    token's d_model values before (``before`` [pos, d_model], blue) and after (``after``
    [pos, d_model], orange: the normalised values, or the output with γ and β; ``after_name``
    says which) as box plots on one axis: the box spans the quartiles, the line is the median,
    the whiskers reach the 5th and 95th percentile (:data:`WHISKERS`, so one outlier dimension
    does not squash every box). Only these five numbers per box are sent. ``mean`` and
    ``sigma`` are [pos] or [pos, 1] (``tformer.analysis.layer_stats.layernorm_stats`` or the
    ``ln*_scale`` hook); ``labels`` are the tokens (escaped here). ``highlight``: a token
    position, shaded in both panels.

    .. math::
        \mu = \frac{1}{d}\sum_i x_i,\qquad \sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i-\mu)^2
        + \varepsilon},\qquad \hat x_i = \frac{x_i - \mu}{\sigma}
    """
    x, y, stats = _checked_ln_inputs(before, after, mean, sigma, labels)
    n, d_model = x.shape
    check_highlight(highlight, n)
    grid = _ln_grid(labels, width, title)
    whiskers = f"{WHISKERS[0]}th and {WHISKERS[1]}th percentile"
    m = grid.margin
    layout = base_layout(
        grid.plot_h, width=width, left=m["l"], right=m["r"], top=m["t"], bottom=m["b"], title=title,
        meta={"n_pos": n, "d_model": d_model, "highlight": highlight, "whiskers": whiskers},
        barmode="group", boxmode="group", bargap=0.25, boxgap=0.25, legend=corner_legend(),
        shapes=[] if highlight is None else _highlight_bands(highlight),
    )  # fmt: skip
    layout |= _ln_axes(grid)
    layout["annotations"] = _ln_annotations(grid, d_model)
    names = token_labels(labels)
    data = [*_stat_traces(names, stats), *_box_traces(names, x, y, after_name)]
    return go.Figure({"data": data, "layout": layout})


def _checked_ln_inputs(
    before: npt.ArrayLike,
    after: npt.ArrayLike,
    mean: npt.ArrayLike,
    sigma: npt.ArrayLike,
    labels: Sequence[object],
) -> tuple[Float32Array, Float32Array, tuple[Float32Array, Float32Array]]:
    """(before, after, (μ, σ)) as float32, once their shapes agree with the labels and there are
    at most :data:`MAX_LN_TOKENS` tokens; μ and σ may come as [pos] or [pos, 1]."""
    x, y = before_after(before, after, labels, "[pos, d_model]", "value")
    n = x.shape[0]
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
    return x, y, (stats[0], stats[1])


def _ln_grid(labels: Sequence[object], width: int, title: str | None) -> _LnGrid:
    """The token x axis, the margins (the legend, the first panel's title and ``title`` on top)
    and the two panels' domains: μ and σ on top, the box plots below."""
    margin_l = numeric_axis_margin("\u22120.00")
    x_props, x_labels_px, margin_r, _ = fitted_token_x_axis(labels, width, margin_l)
    gap = TOP_PANEL_TITLE_PX + 10  # the top panel's token labels are not drawn
    plot_h = _TOP_H + gap + _BOTTOM_H
    top_px = CORNER_LEGEND_PX + TOP_PANEL_TITLE_PX + (TOP_TITLE_PX if title else 0)
    margin = {"l": margin_l, "r": margin_r, "t": top_px, "b": x_labels_px}
    paper_w = width - margin["l"] - margin["r"]
    top_d = px_domain(0, paper_w, 0, _TOP_H, paper_w, plot_h)
    bot_d = px_domain(0, paper_w, _TOP_H + gap, plot_h, paper_w, plot_h)
    return _LnGrid(x_props, x_labels_px, margin, plot_h, paper_w, top_d, bot_d)


def _stat_traces(names: list[str], stats: tuple[Float32Array, Float32Array]) -> list[dict[str, Any]]:
    """μ per token as markers (μ is often near 0, where a bar would be invisible), σ as bars."""
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": tr("\u03bc (mean)"),
            "x": names,
            "y": stats[0],
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


def _box_traces(
    names: list[str], x: Float32Array, y: Float32Array, after_name: str | None
) -> list[dict[str, Any]]:
    """One box plot per token of the values before (``x``) and after (``y``), side by side."""
    after_label = safe_label(tr("after: (x \u2212 \u03bc) / \u03c3") if after_name is None else after_name)
    return [
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
        for name, m, color in ((tr("before: x"), x, BEFORE_COLOR), (after_label, y, AFTER_COLOR))
    ]


def _highlight_bands(highlight: int) -> list[dict[str, Any]]:
    """The highlighted token's column, shaded in both panels."""
    return [
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


def _ln_axes(grid: _LnGrid) -> dict[str, Any]:
    """The two panels' axes: one token x axis (labelled under the box plots), μ and σ on top,
    the values below."""
    numeric = {"tickfont": {"size": 12}, "ticks": "", "zeroline": True, "zerolinecolor": RULE}
    return {
        "xaxis": {
            **grid.x_props,
            "domain": grid.top_d[0],
            "anchor": "y",
            "matches": "x2",
            "showticklabels": False,
            "title": None,
        },
        "yaxis": {**numeric, "domain": grid.top_d[1], "anchor": "x", "title": axis_title("\u03bc, \u03c3")},
        "xaxis2": {**grid.x_props, "domain": grid.bot_d[0], "anchor": "y2"},
        "yaxis2": {**numeric, "domain": grid.bot_d[1], "anchor": "x2", "title": axis_title(tr("value"))},
    }


def _ln_annotations(grid: _LnGrid, d_model: int) -> list[dict[str, Any]]:
    """The panels' titles, and what the boxes and whiskers span, under the plot on the right."""
    lo, hi = WHISKERS
    note = tr("box: middle half \u00b7 whiskers: {lo}th\u2013{hi}th pct", lo=lo, hi=hi)
    if text_px(note, 12) > grid.paper_w / 2 - 30:  # keep clear of the centred axis title
        note = tr("whiskers: {lo}th\u2013{hi}th pct", lo=lo, hi=hi)
    return [
        panel_title(tr("mean \u03bc and spread \u03c3 of each token's values"), *grid.top_d),
        panel_title(
            tr("each token's {d_model} values before and after the LayerNorm", d_model=d_model), *grid.bot_d
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
            "yshift": -(grid.x_labels_px - AXIS_TITLE_PX / 2),
            "showarrow": False,
            "font": {"size": 12, "color": MUTED_INK},
        },
    ]
